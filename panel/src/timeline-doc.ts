// The timeline document the server writes (server/stepscope/schemas/timeline.schema.json, version 1),
// its validation, and the indexed model the timeline view draws from. No DOM here.

import { Redactable, redactableProblem } from "./redaction";

export const SCHEMA_VERSION = 1;

export interface TrackInfo {
  label: string;
  kind: "cpu" | "gpu";
  main: boolean;
  rows: number;
}

export interface StepBounds {
  name: string;
  start_us: number;
  cpu_start_us: number;
  cpu_end_us: number;
  completion_us: number;
  ms: number;
  cpu_known: boolean;
}

export interface BreakdownStep {
  name: string;
  ms: number;
  parts: Record<string, number | null>;
}

export interface OperatorRow {
  name: string;
  calls: number;
  self_ms: number;
  total_ms: number;
  gpu_ms: number | null;
  shapes: { text: string; share: number } | null;
  file: string | null;
  line: number | null;
  /** its calls per step at `line` (`calls` counts every line's); absent in older documents */
  line_calls?: number | null;
}

/** An operator and one recorded list of input shapes (`operators.by_shapes`, only where shapes were
 * recorded): its calls' figures; `inputs` is the trace's `[dims, types]` text, null for calls with none. */
export interface OperatorShapeRow {
  name: string;
  inputs: string | null;
  calls: number;
  self_ms: number;
  total_ms: number;
  file: string | null;
  line: number | null;
  line_calls?: number | null;
}

export interface KernelRow {
  name: string;
  launches: number;
  total_ms: number;
  mean_us: number;
  file: string | null;
  line: number | null;
  /** its launches per step from `line`; absent in older documents */
  line_launches?: number | null;
}

/** A column of numbers, read by index only. */
export type Column = ArrayLike<number>;

export interface SpanColumns {
  track: Column;
  start_us: Column;
  dur_us: Column;
  name: Column;
  category: Column;
  depth: Column;
  line: Column;
}

export interface TimelineDoc {
  schema_version: number;
  window: { duration_us: number; per: "step" | "window"; steps: number; gpu_observed: boolean };
  range: { start_us: number; end_us: number };
  cap: number;
  reduced: boolean;
  resolution_us: number;
  spans_in_range: number;
  notes: string[];
  categories: string[];
  tracks: TrackInfo[];
  names: string[];
  files: Record<string, string>;
  lines: { file: string[]; line: number[] };
  /** columns: lists as the JSON has them, typed arrays as the host posts them (splitTimeline) */
  spans: SpanColumns;
  merged: { span: number[]; count: number[]; busy_us: number[] };
  steps: StepBounds[];
  breakdown?: { parts: string[]; steps: BreakdownStep[] };
  operators?: { rows: OperatorRow[]; left_out: number; by_shapes?: { rows: OperatorShapeRow[]; left_out: number } };
  kernels?: { rows: KernelRow[]; left_out: number };
  /** the strings sharing the trace would change -> the kinds (redaction.ts) */
  redactable?: Redactable;
}

export type ParsedDoc = { ok: true; doc: TimelineDoc } | { ok: false; reason: string };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function numbers(v: unknown, what: string, n: number | null, check: (x: number) => boolean): string | null {
  if (!Array.isArray(v)) return `${what} is not a list`;
  if (n !== null && v.length !== n) return `${what} has ${v.length} entries, not ${n}`;
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (typeof x !== "number" || !Number.isFinite(x) || !check(x)) return `${what}[${i}] is out of range`;
  }
  return null;
}

// The span columns are checked by loops of their own (a shared loop calling a check per value costs
// several times more on a document of 200 000 spans).

/** A column of `n` times or durations: finite numbers ≥ 0. */
function times(v: unknown, what: string, n: number): string | null {
  if (!isColumn(v)) return `${what} is not a list`;
  if (v.length !== n) return `${what} has ${v.length} entries, not ${n}`;
  for (let i = 0; i < n; i++) {
    const x = v[i];
    if (typeof x !== "number" || !(x >= 0) || x === Infinity) return `${what}[${i}] is out of range`;
  }
  return null;
}

/** A column of `n` indices in [lo, hi). */
function indices(v: unknown, what: string, n: number, lo: number, hi: number): string | null {
  if (!isColumn(v)) return `${what} is not a list`;
  if (v.length !== n) return `${what} has ${v.length} entries, not ${n}`;
  for (let i = 0; i < n; i++) {
    const x = v[i];
    if (typeof x !== "number" || !Number.isInteger(x) || x < lo || x >= hi) return `${what}[${i}] is out of range`;
  }
  return null;
}

/** A list, or a typed array (the columns as the host posts them). */
function isColumn(v: unknown): v is Column {
  return Array.isArray(v) || (ArrayBuffer.isView(v) && !(v instanceof DataView));
}

function strings(v: unknown, what: string): string | null {
  if (!Array.isArray(v)) return `${what} is not a list`;
  for (let i = 0; i < v.length; i++) if (typeof v[i] !== "string") return `${what}[${i}] is not text`;
  return null;
}

/** Check a timeline document: its version, and that every index in it points where it may, so the
 * view can trust it (a document from a newer Stepscope is refused with its version). */
export function parseTimeline(value: unknown): ParsedDoc {
  if (!isObject(value)) return { ok: false, reason: "the timeline is not an object" };
  if (value.schema_version !== SCHEMA_VERSION) {
    return { ok: false, reason: `timeline schema version ${String(value.schema_version)} (this panel reads ${SCHEMA_VERSION})` };
  }
  const d = value as unknown as TimelineDoc;
  if (!isObject(d.window) || !isObject(d.range) || !isObject(d.spans) || !isObject(d.merged) || !isObject(d.lines)) {
    return { ok: false, reason: "the timeline lacks window, range, spans, merged or lines" };
  }
  if (!Array.isArray(d.tracks) || !Array.isArray(d.steps) || !isObject(d.files)) {
    return { ok: false, reason: "the timeline lacks tracks, steps or files" };
  }
  for (const t of d.tracks) {
    if (!isObject(t) || typeof t.label !== "string" || (t.kind !== "cpu" && t.kind !== "gpu") || !Number.isInteger(t.rows)) {
      return { ok: false, reason: "a track is malformed" };
    }
  }
  for (const s of d.steps) {
    if (!isObject(s) || typeof s.name !== "string" || !Number.isFinite(s.start_us) || !Number.isFinite(s.completion_us)) {
      return { ok: false, reason: "a step is malformed" };
    }
  }
  const problem =
    strings(d.names, "names") ??
    strings(d.categories, "categories") ??
    strings(d.notes, "notes") ??
    strings(d.lines.file, "lines.file") ??
    redactableProblem(d.redactable) ??
    numbers(d.lines.line, "lines.line", d.lines.file.length, (x) => Number.isInteger(x) && x >= 0);
  if (problem) return { ok: false, reason: problem };
  const n = isColumn(d.spans.start_us) ? d.spans.start_us.length : -1;
  const nLines = d.lines.file.length;
  const bad =
    times(d.spans.start_us, "spans.start_us", n) ??
    times(d.spans.dur_us, "spans.dur_us", n) ??
    indices(d.spans.track, "spans.track", n, 0, d.tracks.length) ??
    indices(d.spans.name, "spans.name", n, 0, d.names.length) ??
    indices(d.spans.category, "spans.category", n, 0, d.categories.length) ??
    indices(d.spans.depth, "spans.depth", n, 0, Number.MAX_SAFE_INTEGER) ??
    indices(d.spans.line, "spans.line", n, -1, nLines);
  if (bad) return { ok: false, reason: bad };
  for (let i = 0; i < n; i++) {
    if (d.spans.depth[i] >= d.tracks[d.spans.track[i]].rows) return { ok: false, reason: `spans.depth[${i}] is below its track` };
  }
  const m = Array.isArray(d.merged.span) ? d.merged.span.length : -1;
  const merged =
    numbers(d.merged.span, "merged.span", m, (x) => Number.isInteger(x) && x >= 0 && x < n) ??
    numbers(d.merged.count, "merged.count", m, (x) => Number.isInteger(x) && x >= 1) ??
    numbers(d.merged.busy_us, "merged.busy_us", m, (x) => x >= 0);
  if (merged) return { ok: false, reason: merged };
  for (const fid of d.lines.file) {
    if (!(fid in d.files)) return { ok: false, reason: `line file id "${fid.slice(0, 20)}" is not in files` };
  }
  return { ok: true, doc: d };
}

/** The document as the host posts it: all but the span columns, as JSON (`spans: null`), and the span
 * columns as typed arrays, posted in a message of their own (`spans`, messages.ts). VS Code carries
 * typed arrays as buffers beside a message's JSON, but then revives that message value by value: kept
 * apart, the million numbers of a large timeline are neither written as text by the host nor parsed
 * by the webview, and the rest travels as plain JSON. Packing changes no value the webview's check
 * sees: a column holding anything but numbers stays a list, times stay 64-bit floats, and an index
 * column takes the narrowest integer array that holds every value exactly. A document without span
 * columns is not split (null). */
export function splitTimeline(doc: TimelineDoc): { rest: TimelineDoc; spans: Record<string, unknown> } | null {
  const spans: unknown = isObject(doc) ? doc.spans : null;
  if (!isObject(spans)) return null; // nothing to split: posted as it is, for the webview to refuse
  const packed: Record<string, unknown> = { ...spans };
  for (const [key, value] of Object.entries(spans)) {
    if (!Array.isArray(value) || !value.every((x) => typeof x === "number")) continue;
    packed[key] = key === "start_us" || key === "dur_us" ? Float64Array.from(value) : packIndices(value);
  }
  return { rest: { ...doc, spans: null as unknown as SpanColumns }, spans: packed };
}

/** The document again from `splitTimeline`'s two parts, as received (checked by `parseTimeline`). */
export function joinTimeline(rest: unknown, spans: unknown): unknown {
  return isObject(rest) ? { ...rest, spans } : rest;
}

/** Whether `timeline` is the first part of a split document, its spans to follow. */
export function awaitsSpans(timeline: unknown): boolean {
  return isObject(timeline) && timeline.spans === null;
}

/** An index column in the narrowest integer array that holds every value exactly, else 64-bit floats. */
function packIndices(values: number[]): Column {
  let lo = 0;
  let hi = 0;
  for (const x of values) {
    if ((x | 0) !== x) return Float64Array.from(values);
    if (x < lo) lo = x;
    if (x > hi) hi = x;
  }
  if (lo >= 0 && hi <= 0xff) return Uint8Array.from(values);
  if (lo >= 0 && hi <= 0xffff) return Uint16Array.from(values);
  if (lo >= -0x8000 && hi <= 0x7fff) return Int16Array.from(values);
  return Int32Array.from(values);
}

/** Stepscope's region label (`ss:<file id>:<line>`, `:next` for a loop header's batch read: the run
 * contract's grammar, agent/protocol.py). */
const SS_LABEL = /^ss:[A-Za-z0-9_]+:(\d+)(:next)?$/;
/** Stepscope's region around the closure an optimizer's step runs (agent/protocol.py CLOSURE_LABEL),
 * named as analysis/present.py's region_name names it. */
const CLOSURE_LABEL = "ss:optimizer-closure";

/** Whether the spans `idx` are in start order, ties by index (the order the model keeps). */
function inStartOrder(idx: number[], start: Float64Array): boolean {
  for (let j = 1; j < idx.length; j++) {
    const a = idx[j - 1];
    const b = idx[j];
    if (start[a] > start[b] || (start[a] === start[b] && a > b)) return false;
  }
  return true;
}

/** One row of a track (a nesting depth): its spans' indices, in start order (they never overlap). */
export interface Row {
  track: number;
  depth: number;
  spans: Int32Array;
  starts: Float64Array;
  ends: Float64Array;
}

/** The document indexed for drawing and hit-testing. */
export class TimelineModel {
  readonly doc: TimelineDoc;
  readonly start: Float64Array;
  readonly end: Float64Array;
  readonly category: Uint8Array;
  readonly rows: Row[];
  /** first row index of each track */
  readonly trackRow: number[];
  readonly mergedCount: Map<number, number>;
  readonly mergedBusy: Map<number, number>;

  constructor(doc: TimelineDoc) {
    this.doc = doc;
    const n = doc.spans.start_us.length;
    this.start = Float64Array.from(doc.spans.start_us);
    this.end = new Float64Array(n);
    this.category = Uint8Array.from(doc.spans.category);
    for (let i = 0; i < n; i++) this.end[i] = this.start[i] + doc.spans.dur_us[i];
    this.rows = [];
    this.trackRow = [];
    const byRow: number[][] = [];
    const offsets: number[] = [];
    let total = 0;
    doc.tracks.forEach((t) => {
      offsets.push(total);
      total += Math.max(1, t.rows);
    });
    for (let r = 0; r < total; r++) byRow.push([]);
    for (let i = 0; i < n; i++) byRow[offsets[doc.spans.track[i]] + doc.spans.depth[i]].push(i);
    doc.tracks.forEach((t, k) => {
      this.trackRow.push(this.rows.length);
      for (let depth = 0; depth < Math.max(1, t.rows); depth++) {
        const idx = byRow[offsets[k] + depth];
        // the analysis writes each row in start order: sort only a document that is not
        if (!inStartOrder(idx, this.start)) idx.sort((a, b) => this.start[a] - this.start[b] || a - b);
        const spans = Int32Array.from(idx);
        const starts = new Float64Array(spans.length);
        const ends = new Float64Array(spans.length);
        for (let j = 0; j < spans.length; j++) {
          starts[j] = this.start[spans[j]];
          ends[j] = this.end[spans[j]];
        }
        this.rows.push({ track: k, depth, spans, starts, ends });
      }
    });
    this.mergedCount = new Map();
    this.mergedBusy = new Map();
    doc.merged.span.forEach((s, k) => {
      this.mergedCount.set(s, doc.merged.count[k]);
      this.mergedBusy.set(s, doc.merged.busy_us[k]);
    });
  }

  get size(): number {
    return this.start.length;
  }

  name(i: number): string {
    return this.doc.names[this.doc.spans.name[i]];
  }

  /** What a person reads for a span: a Stepscope region as the line it times (`train.py:12`, and
   * `train.py:10 (batch read)` for a loop header's: the words of the server's `present.region_name`,
   * which the CLI, findings and hover use), anything else by its own name. */
  label(i: number): string {
    const name = this.name(i);
    if (name === CLOSURE_LABEL) return "optimizer closure (the code optimizer.step ran)";
    const ss = SS_LABEL.exec(name);
    if (!ss) return name;
    const src = this.source(i);
    return `${src ? `${src.path}:${src.line}` : `line ${ss[1]}`}${ss[2] ? " (batch read)" : ""}`;
  }

  categoryName(i: number): string {
    return this.doc.categories[this.category[i]];
  }

  /** The source of a span: `{fileId, line}`, or null where none is known. */
  source(i: number): { fileId: string; line: number; path: string } | null {
    const k = this.doc.spans.line[i];
    if (k < 0) return null;
    const fileId = this.doc.lines.file[k];
    return { fileId, line: this.doc.lines.line[k], path: this.doc.files[fileId] ?? fileId };
  }

  /** The span of `row` under time `t` (µs), or -1: binary search on ends, then a check of its start.
   * `slack` widens spans shorter than a pixel so they can be hovered. */
  spanAt(row: number, t: number, slack = 0): number {
    const r = this.rows[row];
    if (!r) return -1;
    let lo = 0;
    let hi = r.ends.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (r.ends[mid] + slack < t) lo = mid + 1;
      else hi = mid;
    }
    if (lo < r.starts.length && r.starts[lo] - slack <= t) return r.spans[lo];
    return -1;
  }
}
