// What `stepscope.openPanel` is given: nothing (the command palette, the status bar: the run the
// editor shows), `{runId, fileId?, line?}` (a hover's link, a finding's code action, the runs view),
// `{runId, kind: "measure", against?, force?}` (a measure run's distribution, or two measure runs
// compared), or `{runId, kind: "compare", against}` (two profile runs statement by statement: `against`
// is the baseline, A), as an object or, from a command URI, inside an array. Pure: no `vscode` import.
import { FILE_ID, RUN_ID } from "../../../panel/src/messages";

export interface PanelTarget {
  runId: string;
  /** A file id of the run's file table (`f0`), with the 1-based line to bring into view. */
  line: { fileId: string; line: number } | null;
  /** Set for a measure run (no report: its distribution), and for a comparison: the baseline's run
   * id (`against`), compared past a difference of machine or scope when `force`. */
  measure?: { against: string | null; force: boolean };
  /** Set for two profile runs compared statement by statement: the baseline's run id (A). */
  compare?: { against: string };
}

const MAX_LINE = 10_000_000;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The target, `null` for none (open on the run the editor shows), or a one-line reason. Fields other
 * than these are ignored (a hover's link also carries the line's path, for other clients).
 */
export function parsePanelTarget(arg: unknown): PanelTarget | null | string {
  const value = Array.isArray(arg) ? arg[0] : arg;
  if (value === undefined || value === null) return null;
  if (!isObject(value)) return "Open Trace Panel takes {runId, fileId?, line?}";
  if (typeof value.runId !== "string" || !RUN_ID.test(value.runId)) return "Open Trace Panel: runId is not a run id";
  if (value.kind === "compare") {
    const against = value.against;
    if (typeof against !== "string" || !RUN_ID.test(against) || against === value.runId) {
      return "Open Trace Panel: against is not another run's id";
    }
    return { runId: value.runId, line: null, compare: { against } };
  }
  if (value.kind === "measure" || value.against !== undefined) {
    const against = value.against ?? null;
    if (against !== null && (typeof against !== "string" || !RUN_ID.test(against) || against === value.runId)) {
      return "Open Trace Panel: against is not another run's id";
    }
    return { runId: value.runId, line: null, measure: { against, force: value.force === true } };
  }
  const { fileId, line } = value;
  if (fileId === undefined || fileId === null || line === undefined || line === null) {
    return { runId: value.runId, line: null };  // the run without a line (a file outside the run's table has no id)
  }
  if (typeof fileId !== "string" || !FILE_ID.test(fileId)) return "Open Trace Panel: fileId is not a file id";
  if (!Number.isInteger(line) || (line as number) < 1 || (line as number) > MAX_LINE) {
    return "Open Trace Panel: line is not a line number";
  }
  return { runId: value.runId, line: { fileId, line: line as number } };
}
