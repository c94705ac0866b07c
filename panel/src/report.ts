// The part of the analysis report the panel reads (shared/PRODUCT.md's `--json` shape), and how a
// report row finds its `{fileId, line}`. No DOM here.
//
// Report rows carry absolute `file` paths (the CLI contract). The panel opens sources by file id
// only: a row's `file_id` when the report has one, else the timeline's file table matched against the
// end of the row's path (workspace-relative paths there).

export interface Copies {
  h2d: { count: number; bytes: number };
  d2h: { count: number; bytes: number };
  d2d: { count: number; bytes: number };
}

export interface LineRow {
  file: string;
  file_id?: string;
  line: number;
  precision: string;
  wall_ms: number;
  cpu_self_ms: number;
  cpu_total_ms: number;
  gpu_ms: number | null;
  backward_ms: number | null;
  kernels: number;
  copies: Copies;
  sync_ms: number;
}

export interface Finding {
  kind: string;
  file: string | null;
  file_id?: string | null;
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
  /** the profiler's distortion (measure issue): null until measured */
  unprofiled?: { ms_per_step: number; passes: number; iqr_ms: number } | null;
  distortion?: number | null;
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
  return null;
}

/** Maps absolute report paths to file ids through a table of workspace-relative paths. */
export class FileIds {
  private readonly byRel: [string, string][];
  private readonly cache = new Map<string, string | null>();

  constructor(files: Record<string, string>) {
    // longest paths first: `pkg/model/net.py` wins over `net.py`
    this.byRel = Object.entries(files)
      .map(([id, rel]) => [rel, id] as [string, string])
      .sort((a, b) => b[0].length - a[0].length);
  }

  of(path: string | null | undefined, given?: string | null): string | null {
    if (given) return given;
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
