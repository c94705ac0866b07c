// How a run reads in the runs view: label, description, tooltip, icon and the context value the
// view's menus key on. Pure, no `vscode` import (runsView.ts builds the tree items from this).
import { RunSummary, timedRun } from "./result";

export interface RunItem {
  id: string;
  /** `train.py:69` */
  label: string;
  /** `51.4 ms/step · 2026-12-01 16:38 UTC`, or how the run ended and when */
  description: string;
  /** Markdown, shown untrusted. */
  tooltip: string;
  /** A codicon id. */
  icon: string;
  /** `run.analysed` (open, compare, report, panel, delete), `run.measured` (a measure run: panel,
   * compare, delete), `run.ended` (delete only). */
  contextValue: "run.analysed" | "run.measured" | "run.ended";
  /** A click opens the run's log (how it ended, where it raised, its program's output): a run that
   * ended without figures to show (failed, cancelled, time limit, refused). */
  opensLog: boolean;
}

const ICONS: Record<string, string> = {
  complete: "pass",
  failed: "error",
  cancelled: "circle-slash",
  timeout: "watch",
  refused: "error",
  incomplete: "loading~spin",
};

/** Markdown that shows `text` as itself (a script name or a reason is never markup). */
export function mdText(text: string): string {
  return text.replace(/[\\`*_{}[\]()<>#+\-.!|~]/g, (c) => `\\${c}`).replace(/\n/g, " ");
}

export function when(started: string | null): string {
  const m = started ? /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(started) : null;
  return m ? `${m[1]} ${m[2]} UTC` : "time unknown";
}

export function runItem(run: RunSummary): RunItem {
  const where = run.script
    ? `${run.script}${run.stepLine !== null ? `:${run.stepLine}` : run.stepFunction ? ` ${run.stepFunction}()` : ""}`
    : "script unknown";
  const measured = timedRun(run.kind) && run.status === "complete";
  const verb = run.kind === "try" ? "tried" : "measured";
  let description: string;
  if (measured) {
    description = `${verb}: ${run.statusText ?? "complete"}`;  // no report: its figures are the step's alone
  } else if (run.analysed) {
    description = run.statusText ?? "analysed";
  } else if (timedRun(run.kind)) {
    description = `${run.kind} ${run.status === "incomplete" ? "running, or stopped without a word" : run.status}`;
  } else if (run.status === "complete") {
    description = run.problem ? "report unreadable" : "not analysed";
  } else {
    description = run.status === "incomplete" ? "running, or stopped without a word" : run.status;
  }
  const opensLog = !run.analysed && !measured && run.status !== "complete" && run.status !== "incomplete";
  const tooltip = [
    `**${mdText(where)}** · ${mdText(when(run.started))}`,
    run.summary ? mdText(run.summary) : run.machine ? mdText(run.machine) : "",
    run.reason ? `${mdText(run.status)}: ${mdText(run.reason)}` : "",
    run.problem ? mdText(run.problem) : "",
    opensLog ? "Click to open its log." : "",
    `run \`${run.id.replace(/`/g, "'")}\``,
  ].filter((part) => part !== "").join("\n\n");
  return {
    id: run.id,
    label: where,
    description: `${description} · ${when(run.started)}`,
    tooltip,
    icon: run.problem ? "warning" : measured ? "dashboard" : ICONS[run.status] ?? "question",
    contextValue: run.analysed ? "run.analysed" : measured ? "run.measured" : "run.ended",
    opensLog,
  };
}
