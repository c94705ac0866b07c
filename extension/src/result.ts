// The server's answers, checked: the profile result, a document's figures and the runs list. A bad
// reply gives one clear reason instead of odd decorations. Pure, no `vscode` import. The strings
// (labels, summary, status text and tooltip, notes) are the server's presenter's; the client only
// paints them.

export interface LineTiming {
  uri: string;
  /** 0-based line: where the line's code is now. */
  line: number;
  wallMs: number;
  gpuMs: number | null;
  /** Share of the step, 0..1: the heat of the label. */
  fraction: number;
  label: string;
}

export interface ProfileResult {
  runId: string;
  runDir: string;
  msPerStep: number | null;
  machine: string;
  summary: string;
  status: { text: string; tooltip: string };
  lines: LineTiming[];
}

/** `stepscope/figures`: what one document shows of its run, on its current lines. */
export interface DocumentFigures {
  uri: string;
  runId: string | null;
  /** The run's status-bar words (absent from an older server). */
  status?: { text: string; tooltip: string };
  lines: LineTiming[];
  /** Timed lines whose code changed since the run: not shown. */
  hidden: number;
  /** Plain sentences about the figures (an earlier run than one that failed; lines changed). */
  notes: string[];
  /** The figures are from an earlier run than one that failed. */
  stale: boolean;
}

/** One run of `stepscope/runs`. */
export interface RunSummary {
  id: string;
  /** "profile" (a report: figures per line), "measure" (steps timed without the profiler), or "try" (a
   * change measured against the code as it is: a measure run with a baseline). */
  kind: "profile" | "measure" | "try";
  folder: string;
  started: string | null;
  script: string | null;
  stepLine: number | null;
  stepFunction: string | null;
  status: string;
  reason: string | null;
  analysed: boolean;
  msPerStep: number | null;
  /** `51.4 ms/step`, worded by the server's presenter (a measure run: its median and spread; null
   * when there is no figure). */
  statusText: string | null;
  summary: string | null;
  machine: string | null;
  problem: string | null;
}

export class BadResult extends Error {}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function str(value: unknown): string | null {
  return typeof value === "string" ? value : null;
}

function num(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** The lines that can be placed (malformed ones are left out, not painted); the heat clamped to 0..1. */
function parseLines(raw: unknown): LineTiming[] {
  const lines: LineTiming[] = [];
  for (const entry of Array.isArray(raw) ? raw : []) {
    if (!isObject(entry) || typeof entry.uri !== "string" || !Number.isInteger(entry.line) || (entry.line as number) < 0
        || typeof entry.label !== "string") {
      continue;
    }
    const fraction = num(entry.fraction) ?? 0;
    lines.push({
      uri: entry.uri,
      line: entry.line as number,
      wallMs: num(entry.wallMs) ?? 0,
      gpuMs: num(entry.gpuMs),
      fraction: Math.min(1, Math.max(0, fraction)),
      label: entry.label,
    });
  }
  return lines;
}

/** The result, or BadResult naming what is missing. */
export function parseProfileResult(value: unknown): ProfileResult {
  if (!isObject(value)) {
    throw new BadResult("the server's profile result is not an object");
  }
  const status = value.status;
  if (!isObject(status) || typeof status.text !== "string" || !Array.isArray(value.lines)
      || typeof value.summary !== "string") {
    throw new BadResult("the server's profile result has no summary, status text or lines");
  }
  if (value.msPerStep !== null && (typeof value.msPerStep !== "number" || !Number.isFinite(value.msPerStep))) {
    throw new BadResult("the server's profile result has an msPerStep that is not a number");
  }
  return {
    runId: String(value.runId ?? ""),
    runDir: String(value.runDir ?? ""),
    msPerStep: value.msPerStep as number | null,
    machine: String(value.machine ?? ""),
    summary: value.summary,
    status: { text: status.text, tooltip: typeof status.tooltip === "string" ? status.tooltip : "" },
    lines: parseLines(value.lines),
  };
}

/** A document's figures; anything unreadable reads as "shows no run". */
export function parseFigures(value: unknown, uri: string): DocumentFigures {
  const none: DocumentFigures = { uri, runId: null, lines: [], hidden: 0, notes: [], stale: false };
  if (!isObject(value) || typeof value.runId !== "string") {
    return none;
  }
  const status = isObject(value.status) && typeof value.status.text === "string" && typeof value.status.tooltip === "string"
    ? { text: value.status.text, tooltip: value.status.tooltip } : undefined;
  return {
    uri,
    runId: value.runId,
    ...(status ? { status } : {}),
    lines: parseLines(value.lines),
    hidden: Number.isInteger(value.hidden) ? (value.hidden as number) : 0,
    notes: Array.isArray(value.notes) ? value.notes.filter((n): n is string => typeof n === "string") : [],
    stale: value.stale === true,
  };
}

/** The runs of `stepscope/runs`, newest first; entries without an id are left out. */
export function parseRuns(value: unknown): RunSummary[] {
  if (!isObject(value) || !Array.isArray(value.runs)) {
    throw new BadResult("the server's runs list is not {runs: [...]}");
  }
  const runs: RunSummary[] = [];
  for (const raw of value.runs) {
    if (!isObject(raw) || typeof raw.id !== "string" || raw.id === "") {
      continue;
    }
    runs.push({
      id: raw.id,
      kind: raw.kind === "measure" || raw.kind === "try" ? raw.kind : "profile",
      folder: str(raw.folder) ?? "",
      started: str(raw.started),
      script: str(raw.script),
      stepLine: Number.isInteger(raw.stepLine) ? (raw.stepLine as number) : null,
      stepFunction: str(raw.stepFunction),
      status: str(raw.status) ?? "incomplete",
      reason: str(raw.reason),
      analysed: raw.analysed === true,
      msPerStep: num(raw.msPerStep),
      statusText: str(raw.statusText),
      summary: str(raw.summary),
      machine: str(raw.machine),
      problem: str(raw.problem),
    });
  }
  return runs;
}

/** Whether a run's figures are timed passes without the profiler (a measure run, or a try's change). */
export function timedRun(kind: string): boolean {
  return kind === "measure" || kind === "try";
}

/** The result of Measure This Step (`stepscope.measure`): the run's median, spread and noise flag,
 * worded by the server. */
export interface MeasureStepResult {
  runId: string;
  runDir: string;
  msPerStep: number;
  iqrMs: number | null;
  noisy: boolean;
  machine: string;
  summary: string;
  status: { text: string; tooltip: string };
}

/** The measure result, or BadResult naming what is missing. */
export function parseMeasureResult(value: unknown): MeasureStepResult {
  if (!isObject(value) || value.kind !== "measure") {
    throw new BadResult("the server's measure result is not a measure run's result");
  }
  const status = value.status;
  if (!isObject(status) || typeof status.text !== "string" || typeof value.summary !== "string") {
    throw new BadResult("the server's measure result has no summary or status text");
  }
  const ms = num(value.msPerStep);
  if (ms === null || typeof value.runId !== "string" || value.runId === "") {
    throw new BadResult("the server's measure result has no run or no median");
  }
  return {
    runId: value.runId,
    runDir: String(value.runDir ?? ""),
    msPerStep: ms,
    iqrMs: num(value.iqrMs),
    noisy: value.noisy === true,
    machine: String(value.machine ?? ""),
    summary: value.summary,
    status: { text: status.text, tooltip: typeof status.tooltip === "string" ? status.tooltip : "" },
  };
}

/** One change of a try (`stepscope.try`), worded by the server. */
export interface TriedChange {
  name: string;
  title: string;
  runId: string;
  verdict: string | null;
  /** the change's verdict, what it saves, whether the results stayed, in one line */
  headline: string;
  diff: string;
  resultsChanged: boolean;
  /** Apply is offered (an experiment is not; a change of results asks first) */
  applicable: boolean;
  whyNot: string | null;
}

/** The result of Try this fix (`stepscope.try`): each change tried against the code as it is. */
export interface TryResult {
  runId: string;
  baselineRunId: string;
  best: string | null;
  summary: string;
  markdown: string;
  tries: TriedChange[];
}

/** The try result, or BadResult naming what is missing. */
export function parseTryResult(value: unknown): TryResult {
  if (!isObject(value) || value.kind !== "try") {
    throw new BadResult("the server's try result is not a try's result");
  }
  if (typeof value.summary !== "string" || typeof value.markdown !== "string" || !Array.isArray(value.tries)
    || value.tries.length === 0 || typeof value.runId !== "string" || typeof value.baselineRunId !== "string") {
    throw new BadResult("the server's try result has no summary, no change or no run");
  }
  const tries = value.tries.map((raw): TriedChange => {
    if (!isObject(raw) || typeof raw.name !== "string" || typeof raw.runId !== "string" || typeof raw.headline !== "string"
      || typeof raw.diff !== "string") {
      throw new BadResult("a change of the server's try result has no name, run, headline or diff");
    }
    return {
      name: raw.name,
      title: String(raw.title ?? raw.name),
      runId: raw.runId,
      verdict: typeof raw.verdict === "string" ? raw.verdict : null,
      headline: raw.headline,
      diff: raw.diff,
      resultsChanged: raw.resultsChanged === true,
      applicable: raw.applicable === true,
      whyNot: typeof raw.whyNot === "string" ? raw.whyNot : null,
    };
  });
  return {
    runId: value.runId,
    baselineRunId: value.baselineRunId,
    best: typeof value.best === "string" ? value.best : null,
    summary: value.summary,
    markdown: value.markdown,
    tries,
  };
}
