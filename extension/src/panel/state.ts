// The panel's state for one run, from the server's answers (`stepscope/report`, `stepscope/timeline`),
// and its title: the script and the step the run timed. Pure: no `vscode` import. The figures are the
// report's and the timeline's as the server wrote them; the webview checks both again.
import type { RunComparison } from "../../../panel/src/comparison";
import type { MeasureResult } from "../../../panel/src/measure";
import type { PanelState } from "../../../panel/src/messages";
import type { PanelReport } from "../../../panel/src/report";
import type { TimelineDoc } from "../../../panel/src/timeline-doc";

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `file` relative to `root` (POSIX separators) when it lies under it, else its last two parts. */
function shortPath(file: string, root: string | null): string {
  const norm = file.replace(/\\/g, "/");
  const base = root ? root.replace(/\\/g, "/").replace(/\/+$/, "") + "/" : null;
  if (base && norm.startsWith(base)) return norm.slice(base.length);
  return norm.split("/").slice(-2).join("/");
}

/** "train.py, the loop at line 69" (or "calls of train_step") from the report's scenario; "" when unknown. */
export function stepWords(report: unknown): string {
  if (!isObject(report) || !isObject(report.scenario) || !isObject(report.scenario.step)) return "";
  const step = report.scenario.step;
  const root = typeof report.source_root === "string" ? report.source_root : null;
  const file = typeof step.file === "string" && step.file ? shortPath(step.file, root) : null;
  if (!file) return "";
  if (step.kind === "function" && typeof step.function === "string") return `${file}, each call of ${step.function}`;
  return typeof step.line === "number" ? `${file}, the loop at line ${step.line}` : file;
}

/** The title above the panel: what was timed, and the run. */
export function panelTitle(runId: string, report: unknown): string {
  const what = stepWords(report);
  return what ? `${what} · run ${runId}` : `Run ${runId}`;
}

/** The editor tab's label. */
export function tabTitle(report: unknown): string {
  const what = stepWords(report);
  return what ? `Trace: ${what.split(",")[0]}` : "Stepscope Trace";
}

export interface RunData {
  runId: string;
  report: PanelReport;
  /** null: the run has no timeline (the reason is posted to the panel apart) */
  timeline: TimelineDoc | null;
  stale: boolean;
}

export function panelState(data: RunData): PanelState {
  return {
    runId: data.runId,
    title: panelTitle(data.runId, data.report),
    report: data.report,
    timeline: data.timeline,
    measure: null,
    stale: data.stale,
  };
}

/** The run's root (the report's `source_root`): where the file table's relative paths start. */
export function runRoot(report: unknown): string | null {
  return isObject(report) && typeof report.source_root === "string" && report.source_root ? report.source_root : null;
}

/** "train.py, the loop at line 69" from a measure document's scope (its script is workspace-relative). */
export function measureStepWords(measure: unknown): string {
  if (!isObject(measure) || !isObject(measure.scope)) return "";
  const scope = measure.scope;
  const script = typeof scope.script === "string" ? scope.script : "";
  if (!script) return "";
  const step = isObject(scope.step) ? scope.step : {};
  if (typeof step.function === "string" && step.function) return `${script}, each call of ${step.function}`;
  return typeof step.line === "number" ? `${script}, the loop at line ${step.line}` : script;
}

export interface MeasureData {
  runId: string;
  measure: MeasureResult;
}

/** The panel's state for a measure run (its distribution; no report, no timeline). */
export function measurePanelState(data: MeasureData): PanelState {
  const what = measureStepWords(data.measure);
  const compared = typeof data.measure.ratio === "number" && data.measure.compare_label ? ` against ${data.measure.compare_label}` : "";
  return {
    runId: data.runId,
    title: `${what ? `${what} · ` : ""}measured, run ${data.runId}${compared}`,
    report: null,
    timeline: null,
    measure: data.measure,
    stale: false,
  };
}

/** The editor tab's label of a measure run. */
export function measureTabTitle(measure: unknown): string {
  const what = measureStepWords(measure);
  return what ? `Measured: ${what.split(",")[0]}` : "Stepscope Measure";
}

/** The panel's state for two profile runs compared statement by statement (no report, no timeline). */
export function comparisonPanelState(comparison: RunComparison): PanelState {
  return {
    runId: comparison.b.run,
    title: `Run ${comparison.a.run} (A) against run ${comparison.b.run} (B), statement by statement`,
    report: null,
    timeline: null,
    measure: null,
    comparison,
    stale: false,
  };
}
