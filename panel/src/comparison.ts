// Two profile runs statement by statement, as the server compares them (`stepscope/compareRuns`'s
// `statements`, the `lines` of `stepscope runs compare --json`: analysis/run_compare.py): each
// statement matched by its code, its place and wall time per step in both runs, and the statements
// present in one run's code only. No DOM here: the check, the rows and the words the overview draws,
// so the unit tests read exactly what a person reads. Every string in it is shown as text.
import { fmtMs } from "./format";

export interface StatementSide {
  file: string;
  line: number;
  /** null: that run measured nothing on the statement (it is in its code, not reached) */
  wall_ms: number | null;
}

export interface StatementEntry {
  a: StatementSide | null;
  b: StatementSide | null;
  text: string | null;
  /** "code": matched through both runs' text; "number": a run's text is not known; null: one side only */
  match: "code" | "number" | null;
  change_ms: number | null;
  ratio: number | null;
}

export interface RunSummary {
  run: string;
  /** the workspace root the run's paths lie under (shown relative to it) */
  root?: string | null;
  ms_per_step: number | null;
  unprofiled_ms_per_step?: number | null;
  steps: number;
  per?: string;
  machine: string;
}

export interface RunComparison {
  a: RunSummary;
  b: RunSummary;
  lines: StatementEntry[];
  notes: string[];
}

export interface StatementRow {
  statement: string;
  a: string;
  b: string;
  aMs: number | null;
  bMs: number | null;
  change: number | null;
  ratio: number | null;
  match: StatementEntry["match"];
}

const MAX_LINES = 100_000;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const numberOrNull = (v: unknown) => v === null || (typeof v === "number" && Number.isFinite(v));

function sideProblem(side: unknown, where: string): string | null {
  if (side === null) return null;
  if (!isObject(side)) return `${where} is not an object`;
  if (typeof side.file !== "string") return `${where} has no file`;
  if (!Number.isInteger(side.line) || (side.line as number) < 1) return `${where} has no line number`;
  if (!numberOrNull(side.wall_ms)) return `${where}'s wall time is not a number`;
  return null;
}

function summaryProblem(s: unknown, which: string): string | null {
  if (!isObject(s)) return `run ${which} is missing`;
  if (typeof s.run !== "string" || typeof s.machine !== "string") return `run ${which} has no id or machine`;
  if (s.root !== undefined && s.root !== null && typeof s.root !== "string") return `run ${which}'s root is not a path`;
  if (!numberOrNull(s.ms_per_step ?? null) || !numberOrNull(s.unprofiled_ms_per_step ?? null)) return `run ${which}'s ms/step is not a number`;
  return null;
}

/** Why the comparison cannot be shown (one line), or null. */
export function comparisonProblem(value: unknown): string | null {
  if (!isObject(value)) return "the comparison is not an object";
  const problem = summaryProblem(value.a, "A") ?? summaryProblem(value.b, "B");
  if (problem) return `the comparison: ${problem}`;
  if (!Array.isArray(value.lines) || value.lines.length > MAX_LINES) return "the comparison has no list of statements";
  if (!Array.isArray(value.notes) || !value.notes.every((n) => typeof n === "string")) return "the comparison's notes are not text";
  for (const [k, entry] of value.lines.entries()) {
    if (!isObject(entry)) return `statement ${k + 1} is not an object`;
    const side = sideProblem(entry.a, `statement ${k + 1}'s A side`) ?? sideProblem(entry.b, `statement ${k + 1}'s B side`);
    if (side) return side;
    if (entry.a === null && entry.b === null) return `statement ${k + 1} is in neither run`;
    if (entry.text !== null && typeof entry.text !== "string") return `statement ${k + 1}'s text is not text`;
    if (entry.match !== null && entry.match !== "code" && entry.match !== "number") return `statement ${k + 1}'s match is unknown`;
    if (!numberOrNull(entry.change_ms) || !numberOrNull(entry.ratio)) return `statement ${k + 1}'s change is not a number`;
  }
  return null;
}

/** `file` relative to `root` when it lies under it, else its last two parts (POSIX separators). */
export function shortFile(file: string, root: string | null | undefined): string {
  const norm = file.replace(/\\/g, "/");
  const base = root ? root.replace(/\\/g, "/").replace(/\/+$/, "") + "/" : null;
  if (base && norm.startsWith(base)) return norm.slice(base.length);
  return norm.split("/").slice(-2).join("/");
}

function place(side: StatementSide | null, root: string | null | undefined): string {
  return side ? `${shortFile(side.file, root)}:${side.line}` : "–";
}

/** The statements in both runs' code (the table), and those in A's or B's only (the lists under it). */
export function statementRows(c: RunComparison): { both: StatementRow[]; onlyA: StatementRow[]; onlyB: StatementRow[] } {
  const row = (e: StatementEntry): StatementRow => ({
    statement: e.text ?? "?", a: place(e.a, c.a.root), b: place(e.b, c.b.root), aMs: e.a?.wall_ms ?? null,
    bMs: e.b?.wall_ms ?? null, change: e.change_ms, ratio: e.ratio, match: e.match,
  });
  return {
    both: c.lines.filter((e) => e.a && e.b).map(row),
    onlyA: c.lines.filter((e) => e.a && !e.b).map(row),
    onlyB: c.lines.filter((e) => e.b && !e.a).map(row),
  };
}

/** "+0.088 ms" / "–". */
export function changeWords(r: StatementRow): string {
  if (r.change === null) return "–";
  return `${r.change >= 0 ? "+" : "−"}${fmtMs(Math.abs(r.change))}`;
}

/** "1.03×" / "–". */
export function ratioWords(r: StatementRow): string {
  return r.ratio === null ? "–" : `${r.ratio.toFixed(2)}×`;
}

/** A run's headline in the comparison: "A · run … · 12.3 ms per step profiled, 9.80 ms without the profiler · 5 steps". */
export function runWords(which: "A" | "B", s: RunSummary): string {
  const per = s.per === "window" ? "window" : "step";
  const without = typeof s.unprofiled_ms_per_step === "number" ? `, ${fmtMs(s.unprofiled_ms_per_step)} without the profiler` : "";
  const headline = typeof s.ms_per_step === "number" ? `${fmtMs(s.ms_per_step)} per ${per} profiled${without}` : `figures per ${per}`;
  return `${which} · run ${s.run} · ${headline} · ${s.steps} step${s.steps === 1 ? "" : "s"} · ${s.machine}`;
}

/** How the statements were matched, said once above the table. */
export function matchWords(c: RunComparison): string {
  const byNumber = c.lines.some((e) => e.match === "number");
  return "Wall time per step of each statement, costliest first. Statements are matched by their code, so one that moved keeps its row" +
    (byNumber ? "; in files whose code a run measured is not known, by line number." : ".");
}
