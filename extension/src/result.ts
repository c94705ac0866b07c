// The server's answer to stepscope.profile, checked: a bad reply gives one clear reason instead of
// odd decorations. Pure, no `vscode` import. The strings (labels, summary, status text and tooltip)
// are the server's presenter's; the client only paints them.

export interface LineTiming {
  uri: string;
  /** 0-based line. */
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

export class BadResult extends Error {}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The result, or BadResult naming what is missing. Malformed lines are left out, not painted. */
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
  const lines: LineTiming[] = [];
  for (const raw of value.lines) {
    if (!isObject(raw) || typeof raw.uri !== "string" || !Number.isInteger(raw.line) || (raw.line as number) < 0
        || typeof raw.label !== "string") {
      continue;
    }
    const fraction = typeof raw.fraction === "number" && Number.isFinite(raw.fraction) ? raw.fraction : 0;
    lines.push({
      uri: raw.uri,
      line: raw.line as number,
      wallMs: typeof raw.wallMs === "number" ? raw.wallMs : 0,
      gpuMs: typeof raw.gpuMs === "number" ? raw.gpuMs : null,
      fraction: Math.min(1, Math.max(0, fraction)),
      label: raw.label,
    });
  }
  return {
    runId: String(value.runId ?? ""),
    runDir: String(value.runDir ?? ""),
    msPerStep: value.msPerStep as number | null,
    machine: String(value.machine ?? ""),
    summary: value.summary,
    status: { text: status.text, tooltip: typeof status.tooltip === "string" ? status.tooltip : "" },
    lines,
  };
}
