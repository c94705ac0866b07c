// Messages between the extension host and the trace panel's webview, and their validators.
//
// One module for both sides: the host imports it to validate every message the webview sends
// (`parseWebviewMessage`), the webview to validate what the host sends (`parseHostMessage`). A
// message that does not match is refused with a one-line reason, never acted upon. No DOM and no
// `vscode` here, so both bundles (and the unit tests, under Node) can use it.
//
// Handshake (as austin-vscode's): the webview sends `ready` once its script runs; the host answers
// with `state`, and posts `state` again whenever the run it follows changes. `reveal` (after a
// `state` of the same run) brings a source line's row into view: the panel opened on a line.
// A timeline's span columns follow its `state` or `range` in a `spans` message of their own, as typed
// arrays (timeline-doc.ts, `splitTimeline`: that message's timeline has `spans: null`).
// `shareTrace` asks the host to write the shown run's redacted copies (Stepscope: Share Trace…).

import type { PanelReport } from "./report";
import type { TimelineDoc } from "./timeline-doc";
import type { MeasureResult } from "./measure";
import type { RunComparison } from "./comparison";

/** What the panel shows: one run's report and timeline, and a measure result when there is one; or
 * two profile runs compared statement by statement (`comparison`: no report, no timeline). */
export interface PanelState {
  runId: string;
  /** Shown above the panel: the script and step line of the run, as the host words it. */
  title: string;
  report: PanelReport | null;
  timeline: TimelineDoc | null;
  measure: MeasureResult | null;
  /** Two profile runs statement by statement (`runId` is the later one, B); absent or null otherwise. */
  comparison?: RunComparison | null;
  /** Set when the code changed since the run: figures are shown, marked as stale. */
  stale: boolean;
}

export type HostMessage =
  | { type: "state"; state: PanelState }
  | { type: "range"; runId: string; timeline: TimelineDoc }
  | { type: "spans"; runId: string; of: "state" | "range"; spans: unknown }
  | { type: "reveal"; runId: string; fileId: string; line: number }
  | { type: "error"; message: string };

export type WebviewMessage =
  | { type: "ready" }
  | { type: "openSource"; fileId: string; line: number }
  | { type: "requestRange"; runId: string; startUs: number; endUs: number; maxSpans: number }
  | { type: "shareTrace"; runId: string }
  | { type: "openInPerfetto"; runId: string }
  | { type: "log"; level: "info" | "error"; message: string };

export type Parsed<T> = { ok: true; message: T } | { ok: false; reason: string };

/** File ids as run folders write them (`f0`, `x3`): the host looks them up in the run's table. */
export const FILE_ID = /^[A-Za-z0-9_]{1,64}$/;
/** Run ids are run folder names (`20261201T101500Z-train-1a2b`). */
export const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const MAX_LINE = 10_000_000;
const MAX_LOG = 2000;
const MAX_SPANS = 1_000_000;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function exactKeys(value: Record<string, unknown>, keys: readonly string[]): string | null {
  for (const key of Object.keys(value)) {
    if (!keys.includes(key)) return `unexpected field "${key.slice(0, 40)}"`;
  }
  for (const key of keys) {
    if (!(key in value)) return `missing field "${key}"`;
  }
  return null;
}

function finite(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

/** Validate a message from the webview; the host acts only on `ok` ones. */
export function parseWebviewMessage(value: unknown): Parsed<WebviewMessage> {
  if (!isObject(value) || typeof value.type !== "string") return { ok: false, reason: "not a message (no type)" };
  const fail = (reason: string): Parsed<WebviewMessage> => ({ ok: false, reason: `${value.type}: ${reason}` });
  switch (value.type) {
    case "ready": {
      const extra = exactKeys(value, ["type"]);
      return extra ? fail(extra) : { ok: true, message: { type: "ready" } };
    }
    case "openSource": {
      const extra = exactKeys(value, ["type", "fileId", "line"]);
      if (extra) return fail(extra);
      if (typeof value.fileId !== "string" || !FILE_ID.test(value.fileId)) return fail("fileId is not a file id");
      if (!Number.isInteger(value.line) || (value.line as number) < 1 || (value.line as number) > MAX_LINE) {
        return fail("line is not a line number");
      }
      return { ok: true, message: { type: "openSource", fileId: value.fileId, line: value.line as number } };
    }
    case "requestRange": {
      const extra = exactKeys(value, ["type", "runId", "startUs", "endUs", "maxSpans"]);
      if (extra) return fail(extra);
      if (typeof value.runId !== "string" || !RUN_ID.test(value.runId)) return fail("runId is not a run id");
      if (!finite(value.startUs) || !finite(value.endUs) || value.startUs < 0 || value.endUs <= value.startUs) {
        return fail("the range is not [start, end) in µs");
      }
      if (!Number.isInteger(value.maxSpans) || (value.maxSpans as number) < 1000 || (value.maxSpans as number) > MAX_SPANS) {
        return fail("maxSpans is not 1000..1000000");
      }
      return {
        ok: true,
        message: {
          type: "requestRange",
          runId: value.runId,
          startUs: value.startUs,
          endUs: value.endUs,
          maxSpans: value.maxSpans as number,
        },
      };
    }
    case "shareTrace":
    case "openInPerfetto": {
      const extra = exactKeys(value, ["type", "runId"]);
      if (extra) return fail(extra);
      if (typeof value.runId !== "string" || !RUN_ID.test(value.runId)) return fail("runId is not a run id");
      return { ok: true, message: { type: value.type, runId: value.runId } };
    }
    case "log": {
      const extra = exactKeys(value, ["type", "level", "message"]);
      if (extra) return fail(extra);
      if (value.level !== "info" && value.level !== "error") return fail("level is not info or error");
      if (typeof value.message !== "string") return fail("message is not text");
      return { ok: true, message: { type: "log", level: value.level, message: value.message.slice(0, MAX_LOG) } };
    }
    default:
      return { ok: false, reason: `unknown message type "${value.type.slice(0, 40)}"` };
  }
}

/** Validate a message from the host (the webview's side: it trusts the host, but not blindly). */
export function parseHostMessage(value: unknown): Parsed<HostMessage> {
  if (!isObject(value) || typeof value.type !== "string") return { ok: false, reason: "not a message (no type)" };
  switch (value.type) {
    case "state": {
      const state = value.state;
      if (!isObject(state)) return { ok: false, reason: "state: no state" };
      if (typeof state.runId !== "string" || typeof state.title !== "string" || typeof state.stale !== "boolean") {
        return { ok: false, reason: "state: runId, title or stale missing" };
      }
      for (const key of ["report", "timeline", "measure"] as const) {
        if (state[key] !== null && !isObject(state[key])) return { ok: false, reason: `state: ${key} is not an object` };
      }
      if (state.comparison !== undefined && state.comparison !== null && !isObject(state.comparison)) {
        return { ok: false, reason: "state: comparison is not an object" };
      }
      return { ok: true, message: value as HostMessage };
    }
    case "range":
      if (typeof value.runId !== "string" || !isObject(value.timeline)) return { ok: false, reason: "range: no timeline" };
      return { ok: true, message: value as HostMessage };
    case "spans":
      if (typeof value.runId !== "string" || (value.of !== "state" && value.of !== "range") || !isObject(value.spans)) {
        return { ok: false, reason: "spans: no run, part or columns" };
      }
      return { ok: true, message: { type: "spans", runId: value.runId, of: value.of, spans: value.spans } };
    case "reveal":
      if (typeof value.runId !== "string" || typeof value.fileId !== "string" || !FILE_ID.test(value.fileId)
          || !Number.isInteger(value.line) || (value.line as number) < 1) {
        return { ok: false, reason: "reveal: no run, file id or line" };
      }
      return { ok: true, message: { type: "reveal", runId: value.runId, fileId: value.fileId, line: value.line as number } };
    case "error":
      if (typeof value.message !== "string") return { ok: false, reason: "error: no message" };
      return { ok: true, message: { type: "error", message: value.message.slice(0, MAX_LOG) } };
    default:
      return { ok: false, reason: `unknown message type "${value.type.slice(0, 40)}"` };
  }
}
