// The part of the analysis report the panel reads (shared/PRODUCT.md's `--json` shape), and how a
// report row finds its `{fileId, line}`. No DOM here.
//
// Report rows carry absolute `file` paths (the CLI contract) and `file_id`, an index into the report's
// `files` table. The panel opens sources by the *timeline's* file ids only (`f0`, `x1`: its `files`
// table of workspace-relative paths, which the host resolves): a report row finds its id through the
// report's table (the same relative path), else by matching the end of its absolute path.

export interface Copies {
  h2d: { count: number; bytes: number };
  d2h: { count: number; bytes: number };
  d2d: { count: number; bytes: number };
}

export interface FileEntry {
  path: string;
  in_root: boolean;
}

export interface LineRow {
  file: string;
  file_id?: number | null;
  line: number;
  precision: string;
  wall_ms: number;
  cpu_self_ms: number;
  cpu_total_ms: number;
  gpu_ms: number | null;
  backward_ms: number | null;
  backward_gpu_ms?: number | null;
  kernels: number;
  copies: Copies;
  sync_ms: number;
  /** memory allocated per step on the line's thread while it ran, and the peak in use meanwhile
   * (`--memory`; op_details.py defines them): null or absent where memory was not recorded */
  alloc_bytes?: number | null;
  peak_bytes?: number | null;
  /** "host" or "accelerator": whose memory those are */
  memory_device?: string | null;
  /** what the line got from compiled graphs (precision "compiled", or an eager line's compiled part) */
  compiled?: { fused_with?: { file: string; line: number }[] } | null;
}

export interface Finding {
  kind: string;
  file: string | null;
  file_id?: number | null;
  line: number | null;
  observation: string;
  hypothesis: string;
  next_check: string;
}

export interface PanelReport {
  ms_per_step: number | null;
  samples_per_s: number | null;
  machine: { device?: string; host?: string; source?: string; [key: string]: unknown };
  gpu: { observed: boolean; reason: string | null };
  steps: { name: string; ms: number; cpu_ms?: number | null }[];
  startup: { to_first_step_ms: number | null; first_steps_ms: number[] };
  lines: LineRow[];
  findings: Finding[];
  window?: { per?: string; steps?: number; ms?: number };
  notes?: string[];
  /** the report's file table (`file_id` is an index into it) */
  files?: FileEntry[];
  /** the step timed without the profiler after the window, in the same process: null where it was not */
  unprofiled?: { ms_per_step: number; passes: number; iqr_ms: number } | null;
  distortion?: number | null;
  /** the unprofiled figure and the distortion in the server's words (the CLI's, the status bar's) */
  distortion_words?: string | null;
}

/** `16–17, 20` (sorted line numbers, runs joined), as the text report and the hover write them. */
function lineNumbers(numbers: number[]): string {
  const runs: number[][] = [];
  for (const n of [...new Set(numbers)].sort((a, b) => a - b)) {
    const last = runs[runs.length - 1];
    if (last && n === last[last.length - 1] + 1) last.push(n);
    else runs.push([n]);
  }
  return runs.map((r) => (r.length > 1 ? `${r[0]}–${r[r.length - 1]}` : String(r[0]))).join(", ");
}

/** The other lines a line's compiled kernels also came from: `lines 16–17, model.py:8` (lines of
 * other files by their file name), or null when it shares no kernel. */
export function fusedWith(row: LineRow): string | null {
  const fused = (row.compiled?.fused_with ?? []).filter((f) => f && typeof f.line === "number");
  if (fused.length === 0) return null;
  const same = fused.filter((f) => f.file === row.file).map((f) => f.line);
  const other = fused.filter((f) => f.file !== row.file)
    .map((f) => `${String(f.file).replace(/\\/g, "/").split("/").pop()}:${f.line}`);
  const parts = same.length ? [`line${same.length > 1 ? "s" : ""} ${lineNumbers(same)}`] : [];
  return [...parts, ...other].join(", ");
}

/** Whether the run recorded memory (`--memory`): a line's `alloc_bytes` is then a number, 0 included. */
export function memoryRecorded(lines: readonly LineRow[]): boolean {
  return lines.some((r) => typeof r.alloc_bytes === "number");
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Check the few fields the panel relies on; returns a one-line reason, or null when usable. */
export function reportProblem(value: unknown): string | null {
  if (!isObject(value)) return "the report is not an object";
  for (const key of ["lines", "findings", "steps"]) {
    if (!Array.isArray(value[key])) return `the report has no ${key} list`;
  }
  if (!isObject(value.machine) || !isObject(value.gpu) || !isObject(value.startup)) {
    return "the report lacks machine, gpu or startup";
  }
  if (value.distortion_words !== undefined && value.distortion_words !== null && typeof value.distortion_words !== "string") {
    return "the report's distortion words are not text";
  }
  return null;
}

/** Maps report rows to the timeline's file ids (see above). */
export class FileIds {
  private readonly byRel: [string, string][];
  private readonly exact: Map<string, string>;
  private readonly reportFiles: FileEntry[];
  private readonly cache = new Map<string, string | null>();

  constructor(files: Record<string, string>, reportFiles: FileEntry[] = []) {
    // longest paths first: `pkg/model/net.py` wins over `net.py`
    this.byRel = Object.entries(files)
      .map(([id, rel]) => [rel, id] as [string, string])
      .sort((a, b) => b[0].length - a[0].length);
    this.exact = new Map(this.byRel);
    this.reportFiles = reportFiles;
  }

  /** The timeline's id of a report row's file: by its `file_id` in the report's table, else by its path. */
  of(path: string | null | undefined, fileId?: number | null): string | null {
    if (typeof fileId === "number") {
      const entry = this.reportFiles[fileId];
      if (entry && entry.in_root) {
        const id = this.exact.get(entry.path);
        if (id) return id;
      }
    }
    if (!path) return null;
    const cached = this.cache.get(path);
    if (cached !== undefined) return cached;
    const norm = path.replace(/\\/g, "/");
    const hit = this.byRel.find(([rel]) => norm === rel || norm.endsWith("/" + rel));
    const id = hit ? hit[1] : null;
    this.cache.set(path, id);
    return id;
  }
}
