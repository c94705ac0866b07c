// The timeline: CPU threads and GPU streams as tracks, one row per nesting depth, step boundaries on a
// ruler, drawn on a canvas with per-pixel binning (binning.ts) so a frame stays cheap with 100k+ spans
// in view.
//
// Mouse: drag pans, shift+drag (or a drag on the ruler) selects a range, ctrl/⌘+wheel or a pinch zooms
// around the pointer, shift+wheel pans, the wheel scrolls the tracks; hovering a span shows its name,
// duration and line; clicking it opens its line.
// Keyboard (the canvas takes focus): ←/→ or A/D pan, +/− or W/S zoom (W/S around the pointer when it
// is over the timeline, else around the centre), 0 shows the whole range, ↑/↓ move between rows, [ and ]
// move between spans, Enter opens the focused span's line, Esc clears the selection. Keys typed in the
// search box never reach the canvas.
// Search: the box above highlights the spans whose name contains its text and dims the others
// (timeline-search.ts); Enter / Shift+Enter go to the next / previous match, Esc clears it.

import { inView, ITEM, Level, WIDE } from "./binning";
import { clear, h, shorten } from "./dom";
import { MARK, marked, redactionNote } from "./redaction";
import { fmtUs } from "./format";
import { selectionTotals } from "./intervals";
import { BACKGROUND, colorOf, textOn, ThemeKind } from "./theme";
import { TimelineModel } from "./timeline-doc";
import { CATEGORY_LABELS, CATEGORY_ONE, legendEntries, renderLegend } from "./timeline-legend";
import { findMatches, SpanMatches } from "./timeline-search";

export interface TimelineViewOptions {
  onOpen: (fileId: string, line: number) => void;
  /** asks the host for the spans of a range at a finer level (a reduced summary, zoomed in) */
  onRangeRequest?: (startUs: number, endUs: number) => void;
}

const RULER = 26;
const ROW = 16;
const TRACK_GAP = 10;
const LABEL_MIN_PX = 56;
const MIN_VIEW_US = 0.05;
/** how much of its colour a span that does not match the search keeps */
const DIMMED = 0.25;

interface Layout {
  rowY: number[];
  trackY: number[];
  height: number;
}

export class TimelineView {
  readonly root: HTMLElement;
  /** the last frames' drawing times, ms (read by the benchmark) */
  readonly frameTimes: number[] = [];
  /** spans visited by the last frame */
  lastVisited = 0;
  private readonly options: TimelineViewOptions;
  private readonly canvas: HTMLCanvasElement;
  private readonly ctx: CanvasRenderingContext2D;
  private readonly tooltip: HTMLElement;
  private readonly summary: HTMLElement;
  private readonly live: HTMLElement;
  private readonly status: HTMLElement;
  private model: TimelineModel | null = null;
  private detail: TimelineModel | null = null;
  private layout: Layout = { rowY: [], trackY: [], height: 0 };
  private t0 = 0;
  private t1 = 1;
  private scrollY = 0;
  private width = 800;
  private height = 400;
  private gutter = 180;
  private selection: [number, number] | null = null;
  private focus: { row: number; span: number; model: TimelineModel } | null = null;
  private drag: { x: number; y: number; t0: number; t1: number; scrollY: number; select: boolean; moved: boolean } | null = null;
  private pending = false;
  private requested: [number, number] | null = null;
  private requestTimer: ReturnType<typeof setTimeout> | null = null;
  private theme: ThemeKind = "dark";
  private colors = { background: BACKGROUND.dark, foreground: "#cccccc", muted: "#9d9d9d", grid: "#3c3c3c", accent: "#3794ff" };
  private readonly textCache = new Map<number, [number, string]>();
  private batchArrays: number[][] = [];
  private readonly labels: number[] = [];
  private level: Level | null = null;
  private readonly searchInput: HTMLInputElement;
  private readonly searchStatus: HTMLElement;
  private readonly zoomLevel: HTMLElement;
  private readonly legend: HTMLElement;
  /** the search's matches in the model and in the finer level shown (null: no search) */
  private matches: SpanMatches | null = null;
  private detailMatches: SpanMatches | null = null;
  /** the position in `matches.order` last gone to; -1 after a new search (the next starts from the view) */
  private matchAt = -1;
  /** the pointer's x over the canvas, for W/S to zoom around; null when it is elsewhere */
  private pointerX: number | null = null;

  constructor(options: TimelineViewOptions) {
    this.options = options;
    this.canvas = h("canvas", {
      class: "timeline-canvas",
      tabindex: 0,
      role: "application",
      "aria-roledescription": "timeline",
      "aria-label": "Timeline of the active window. W and S zoom, A and D pan, arrow keys pan and move between rows, plus and minus zoom, brackets move between spans, Enter opens the focused span's line.",
    });
    const ctx = this.canvas.getContext("2d", { alpha: false });
    if (!ctx) throw new Error("no 2D canvas in this webview");
    this.ctx = ctx;
    this.tooltip = h("div", { class: "tooltip", role: "tooltip", hidden: true });
    this.summary = h("div", { class: "selection-summary", "aria-live": "polite" });
    this.live = h("div", { class: "visually-hidden", "aria-live": "polite" });
    this.status = h("span", { class: "timeline-status" });
    const button = (label: string, title: string, action: () => void) => {
      const b = h("button", { type: "button", title }, label);
      b.addEventListener("click", action);
      return b;
    };
    this.searchInput = h("input", {
      type: "search",
      class: "filter timeline-search",
      placeholder: "Search spans by name",
      "aria-label": "Search the timeline's spans by name: Enter goes to the next match, Shift+Enter to the previous, Escape clears",
      spellcheck: "false",
      autocomplete: "off",
    });
    this.searchStatus = h("span", { class: "search-status", "aria-live": "polite" });
    this.zoomLevel = h("span", { class: "zoom-level" });
    this.legend = h("ul", { class: "legend timeline-legend", "aria-label": "Colours of the timeline" });
    const toolbar = h(
      "div",
      { class: "toolbar", role: "toolbar", "aria-label": "Timeline" },
      button("Zoom in", "Zoom in (+ or W)", () => this.zoom(0.5)),
      button("Zoom out", "Zoom out (− or S)", () => this.zoom(2)),
      button("Whole window", "Show the whole range (0)", () => this.reset()),
      button("Zoom to selection", "Zoom to the selected range", () => this.zoomToSelection()),
      this.zoomLevel,
      this.status,
    );
    this.root = h(
      "section",
      { class: "timeline-view", "aria-label": "Timeline" },
      h("div", { class: "search-bar", role: "search" }, this.searchInput, this.searchStatus),
      toolbar,
      h("div", { class: "canvas-wrap" }, this.canvas, this.tooltip),
      this.legend,
      h("p", { class: "hint" }, "Drag to pan · Shift+drag to select a range · Ctrl+wheel or pinch to zoom · Shift+wheel to pan · W/S zoom, A/D pan · click a span to open its line"),
      this.summary,
      this.live,
    );
    this.bind();
  }

  setModel(model: TimelineModel | null): void {
    this.model = model;
    this.detail = null;
    this.level = null;
    this.requested = null;
    this.textCache.clear();
    this.selection = null;
    this.focus = null;
    this.scrollY = 0;
    if (model) {
      this.layout = computeLayout(model);
      this.t0 = model.doc.range.start_us;
      this.t1 = Math.max(model.doc.range.end_us, this.t0 + MIN_VIEW_US);
    }
    this.detailMatches = null;
    this.matches = model ? findMatches(model, this.searchInput.value) : null;
    this.matchAt = -1;
    this.renderSearchStatus();
    this.renderSummary();
    this.resize(); // reads the theme the legend is painted in
    this.renderLegend();
  }

  /** A finer level of a range (the host's answer to `onRangeRequest`): drawn while the view is inside it. */
  setDetail(model: TimelineModel): void {
    if (!this.model || model.doc.tracks.length !== this.model.doc.tracks.length) return;
    this.detail = model;
    this.detailMatches = findMatches(model, this.searchInput.value);
    this.textCache.clear();
    this.schedule();
  }

  /** The view, µs from the window's start. */
  view(): [number, number] {
    return [this.t0, this.t1];
  }

  setView(t0: number, t1: number): void {
    if (!this.model) return;
    const lo = this.model.doc.range.start_us;
    const hi = Math.max(this.model.doc.range.end_us, lo + MIN_VIEW_US);
    let span = Math.max(MIN_VIEW_US, Math.min(t1 - t0, hi - lo));
    let start = Math.max(lo, Math.min(t0, hi - span));
    if (!Number.isFinite(start) || !Number.isFinite(span)) {
      start = lo;
      span = hi - lo;
    }
    this.t0 = start;
    this.t1 = start + span;
    this.maybeRequestDetail();
    this.schedule();
  }

  setSelection(range: [number, number] | null): void {
    this.selection = range && range[1] > range[0] ? range : null;
    this.renderSummary();
    this.schedule();
  }

  reset(): void {
    if (this.model) this.setView(this.model.doc.range.start_us, this.model.doc.range.end_us);
  }

  zoom(factor: number, centerX?: number): void {
    const x = centerX ?? this.gutter + (this.width - this.gutter) / 2;
    const t = this.timeAt(x);
    const span = (this.t1 - this.t0) * factor;
    const share = (x - this.gutter) / (this.width - this.gutter);
    this.setView(t - span * share, t - span * share + span);
  }

  pan(fraction: number): void {
    const span = this.t1 - this.t0;
    this.setView(this.t0 + span * fraction, this.t1 + span * fraction);
  }

  zoomToSelection(): void {
    if (this.selection) this.setView(this.selection[0], this.selection[1]);
  }

  /** Highlights the spans whose name contains `query` (case-insensitive) and dims the others; an
   * empty query clears the search. What the box shows is set apart, so a caller may search too. */
  search(query: string): void {
    if (this.searchInput.value !== query) this.searchInput.value = query;
    this.matches = this.model ? findMatches(this.model, query) : null;
    this.detailMatches = this.detail ? findMatches(this.detail, query) : null;
    this.matchAt = -1;
    this.renderSearchStatus();
    this.schedule();
  }

  /** Goes to the next (1) or previous (-1) match after the one last gone to (while it keeps the
   * focus), or else from the middle of the view: centres it at the same zoom, brings its row into view and focuses it as a click does, but
   * opens no line (that would take the focus away from the search box; Enter on the timeline does). */
  goToMatch(direction: 1 | -1): void {
    const model = this.model;
    const matches = this.matches;
    if (!model || !matches) return;
    const last = this.matchAt;
    const kept = last >= 0 && this.focus?.model === model && this.focus.span === matches.order[last];
    const at = matches.step(kept ? last : -1, direction, (this.t0 + this.t1) / 2);
    if (at < 0) return;
    const span = matches.order[at];
    const row = model.trackRow[model.doc.spans.track[span]] + model.doc.spans.depth[span];
    const w = this.t1 - this.t0;
    const mid = (model.start[span] + model.end[span]) / 2;
    this.setView(mid - w / 2, mid + w / 2);
    this.scrollToRow(row);
    this.focus = { row, span, model };
    this.announce(model, span);
    this.matchAt = at;
    this.renderSearchStatus(at);
    this.schedule();
  }

  /** Where span `i` of the document is drawn, in page coordinates (its middle, clipped to the view), or
   * null when it is not in view: for tests that click a span as a person would. */
  pointOf(i: number): { x: number; y: number } | null {
    const model = this.model;
    if (!model || i < 0 || i >= model.size) return null;
    const row = model.trackRow[model.doc.spans.track[i]] + model.doc.spans.depth[i];
    const a = Math.max(this.gutter, this.xAt(model.start[i]));
    const b = Math.min(this.width, this.xAt(model.end[i]));
    const y = this.layout.rowY[row] - this.scrollY + RULER + ROW / 2;
    if (b < a || y < RULER || y > this.height) return null;
    const rect = this.canvas.getBoundingClientRect();
    return { x: rect.left + (a + b) / 2, y: rect.top + y };
  }

  /** Redraw now (the benchmark times this). */
  draw(): number {
    const started = performance.now();
    this.pending = false;
    const ctx = this.ctx;
    const dpr = window.devicePixelRatio || 1;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = this.colors.background;
    ctx.fillRect(0, 0, this.width, this.height);
    const model = this.model;
    if (!model) {
      this.lastVisited = 0;
      return 0;
    }
    const source = this.detail && this.detail.doc.range.start_us <= this.t0 && this.detail.doc.range.end_us >= this.t1 ? this.detail : model;
    // with a search, every span is painted dimmed and the matches again on top in full colour
    const matches = source === model ? this.matches : this.detailMatches;
    const plotW = this.width - this.gutter;
    ctx.font = "12px var(--vscode-font-family, system-ui, sans-serif)";
    ctx.textBaseline = "middle";
    ctx.direction = "ltr";
    let visited = 0;
    // rows
    ctx.save();
    ctx.beginPath();
    ctx.rect(this.gutter, RULER, plotW, this.height - RULER);
    ctx.clip();
    const charW = ctx.measureText("M").width * 0.62 || 7;
    // rectangles are gathered per category and painted with one fill style each: setting a fill
    // style costs more than the rectangle itself
    const batches = this.batches(source.doc.categories.length);
    const labels = this.labels;
    labels.length = 0;
    const level = this.levelFor(source, plotW);
    const scale = plotW / (this.t1 - this.t0);
    for (let r = 0; r < source.rows.length; r++) {
      const y = this.layout.rowY[r] - this.scrollY + RULER;
      if (y + ROW < RULER || y > this.height) continue;
      visited += inView(source.rows[r], this.t0, this.t1);
      const items = level.row(r);
      // the first item that ends at or after the view's start
      let lo = 0;
      let hi = items.length / ITEM;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (items[mid * ITEM + 1] < this.t0) lo = mid + 1;
        else hi = mid;
      }
      for (let k = lo * ITEM; k < items.length && items[k] <= this.t1; k += ITEM) {
        const x0 = (items[k] - this.t0) * scale;
        const x1 = (items[k + 1] - this.t0) * scale;
        const c = items[k + 2];
        const span = items[k + 3];
        if (items[k + 4] === WIDE) {
          // a span of its own, cut to the view, a pixel's gap after it when it is wide enough
          const a = Math.max(x0, -1);
          const b = Math.min(x1, plotW + 1);
          const w = Math.max(1, b - a - (b - a > 3 ? 1 : 0));
          batches[c].push(this.gutter + a, y + 1, w);
          if (w >= LABEL_MIN_PX) labels.push(this.gutter + a, w, span, c, y);
        } else {
          // pixel columns: on whole pixels, so neighbouring runs neither overlap nor leave a seam
          const a = Math.round(x0);
          batches[c].push(this.gutter + a, y + 1, Math.max(1, Math.round(x1) - a));
        }
      }
    }
    if (matches) ctx.globalAlpha = DIMMED;
    this.paintBatches(batches, source);
    if (matches) {
      ctx.globalAlpha = 1;
      this.paintBatches(this.matchBatches(source, matches, scale, plotW), source);
    }
    for (let k = 0; k < labels.length; k += 5) {
      const left = labels[k];
      const w = labels[k + 1];
      const span = labels[k + 2];
      const c = labels[k + 3];
      const y = labels[k + 4];
      ctx.fillStyle = textOn(colorOf(this.theme, source.doc.categories[c] ?? "mixed"));
      const x = Math.max(left, this.gutter) + 3;
      const room = Math.min(left + w, this.width) - x - 3;
      if (room < 20) continue;
      ctx.globalAlpha = matches && !matches.isMatch[span] ? DIMMED : 1;
      ctx.fillText(this.fitted(source, span, room, charW), x, y + ROW / 2, room);
    }
    ctx.globalAlpha = 1;
    // step boundaries across the rows
    ctx.strokeStyle = this.colors.muted;
    ctx.globalAlpha = 0.6;
    ctx.beginPath();
    let lastX = -10;
    for (const step of model.doc.steps) {
      const x = this.xAt(step.completion_us);
      if (x < this.gutter || x > this.width || x - lastX < 2) continue;
      ctx.moveTo(Math.round(x) + 0.5, RULER);
      ctx.lineTo(Math.round(x) + 0.5, this.height);
      lastX = x;
    }
    ctx.stroke();
    ctx.globalAlpha = 1;
    // selection and focus
    if (this.selection) {
      const a = Math.max(this.gutter, this.xAt(this.selection[0]));
      const b = Math.min(this.width, this.xAt(this.selection[1]));
      if (b > a) {
        ctx.fillStyle = this.colors.accent;
        ctx.globalAlpha = 0.18;
        ctx.fillRect(a, RULER, b - a, this.height - RULER);
        ctx.globalAlpha = 1;
        ctx.strokeStyle = this.colors.accent;
        ctx.strokeRect(a + 0.5, RULER + 0.5, b - a - 1, this.height - RULER - 1);
      }
    }
    if (this.focus && this.focus.span >= 0 && (this.focus.model === model || this.focus.model === source)) {
      const y = this.layout.rowY[this.focus.row] - this.scrollY + RULER;
      const i = this.focus.span;
      const start = this.focus.model.start[i];
      const end = this.focus.model.end[i];
      const a = Math.max(this.gutter, this.xAt(start));
      const b = Math.min(this.width, Math.max(this.xAt(end), a + 2));
      ctx.strokeStyle = this.colors.foreground;
      ctx.lineWidth = 2;
      ctx.strokeRect(a, y, b - a, ROW);
      ctx.lineWidth = 1;
    }
    ctx.restore();
    this.drawGutter(model);
    this.drawRuler(model);
    const took = performance.now() - started;
    if (!this.frameTimes.length) performance.measure("stepscope frame", { start: started, end: started + took });
    this.lastVisited = visited;
    this.frameTimes.push(took);
    if (this.frameTimes.length > 500) this.frameTimes.shift();
    this.status.textContent = `${fmtUs(this.t0)} – ${fmtUs(this.t1)} · ${visited.toLocaleString("en-US")} spans in view${source !== model ? " (finer level)" : ""}`;
    this.zoomLevel.textContent = `showing ${fmtUs(this.t1 - this.t0)} of ${fmtUs(model.doc.range.end_us - model.doc.range.start_us)}`;
    return took;
  }

  // ------------------------------------------------------------------ drawing helpers

  /** Paints rectangles gathered per category (x, y, width triples), one fill style per category. */
  private paintBatches(batches: number[][], source: TimelineModel): void {
    const ctx = this.ctx;
    batches.forEach((batch, c) => {
      if (!batch.length) return;
      ctx.fillStyle = colorOf(this.theme, source.doc.categories[c] ?? "mixed");
      for (let k = 0; k < batch.length; k += 3) ctx.fillRect(batch[k], batch[k + 1], batch[k + 2], ROW - 2);
    });
  }

  /** The search's matches in view as rectangles per category, at most about one per pixel column of
   * a row: a match that ends inside a pixel already painted is skipped by a binary search, so a
   * frame's cost follows the canvas's width, not the number of matches. */
  private matchBatches(source: TimelineModel, matches: SpanMatches, scale: number, plotW: number): number[][] {
    const batches = this.batches(source.doc.categories.length);
    for (let r = 0; r < source.rows.length; r++) {
      const positions = matches.byRow[r];
      if (!positions.length) continue;
      const y = this.layout.rowY[r] - this.scrollY + RULER;
      if (y + ROW < RULER || y > this.height) continue;
      const row = source.rows[r];
      let j = matches.firstEndingFrom(r, this.t0);
      while (j < positions.length) {
        const k = positions[j];
        if (row.starts[k] > this.t1) break;
        const a = Math.max((row.starts[k] - this.t0) * scale, -1);
        const b = Math.min((row.ends[k] - this.t0) * scale, plotW + 1);
        const w = Math.max(1, b - a - (b - a > 3 ? 1 : 0));
        batches[source.category[row.spans[k]]].push(this.gutter + a, y + 1, w);
        // the next match that reaches past the pixel column just painted
        j = matches.firstEndingFrom(r, this.t0 + (Math.floor(a + w) + 1) / scale, j + 1);
      }
    }
    return batches;
  }

  /** One emptied array per category, kept from frame to frame. */
  private batches(n: number): number[][] {
    while (this.batchArrays.length < n) this.batchArrays.push([]);
    for (const b of this.batchArrays) b.length = 0;
    return this.batchArrays;
  }

  /** The binned rows for this zoom level, over an extent holding the view: kept while the view pans
   * at one zoom (the extent then reaches a view beyond each side), made anew when the zoom changes. */
  private levelFor(source: TimelineModel, plotW: number): Level {
    const binUs = (this.t1 - this.t0) / plotW;
    const old = this.level;
    const sameZoom = !!old && old.source === source && Math.abs(old.binUs - binUs) <= binUs * 1e-9;
    if (old && sameZoom && this.t0 >= old.from && this.t1 <= old.to) return old;
    const pad = sameZoom ? this.t1 - this.t0 : 0;
    const origin = source.doc.range.start_us;
    const step = sameZoom ? old!.binUs : binUs;
    // columns on one grid from the range's start, so a panned view meets the same columns
    const from = origin + Math.floor((this.t0 - pad - origin) / step) * step;
    const columns = Math.ceil((this.t1 + pad - from) / step - 1e-9);
    this.level = new Level(source, step, from, columns);
    return this.level;
  }

  private fitted(model: TimelineModel, span: number, room: number, charW: number): string {
    const chars = Math.max(1, Math.floor(room / charW));
    const cached = this.textCache.get(span);
    if (cached && cached[0] === chars) return cached[1];
    const text = shorten(marked(model.doc.redactable, model.name(span), model.label(span)), chars);
    if (this.textCache.size > 20000) this.textCache.clear();
    this.textCache.set(span, [chars, text]);
    return text;
  }

  private drawGutter(model: TimelineModel): void {
    const ctx = this.ctx;
    ctx.fillStyle = this.colors.background;
    ctx.fillRect(0, RULER, this.gutter, this.height - RULER);
    ctx.fillStyle = this.colors.foreground;
    ctx.textBaseline = "middle";
    const charW = ctx.measureText("M").width * 0.62 || 7;
    model.doc.tracks.forEach((track, k) => {
      const y = this.layout.trackY[k] - this.scrollY + RULER;
      if (y + ROW < RULER || y > this.height) return;
      const label = `${track.kind === "gpu" ? "▮ " : ""}${marked(model.doc.redactable, track.label)}${track.main ? " (main)" : ""}`;
      ctx.fillText(shorten(label, Math.floor((this.gutter - 12) / charW)), 6, y + ROW / 2, this.gutter - 10);
    });
    ctx.strokeStyle = this.colors.grid;
    ctx.beginPath();
    ctx.moveTo(this.gutter - 0.5, RULER);
    ctx.lineTo(this.gutter - 0.5, this.height);
    for (const y of this.layout.trackY.slice(1)) {
      const yy = Math.round(y - this.scrollY + RULER - TRACK_GAP / 2) + 0.5;
      if (yy > RULER && yy < this.height) {
        ctx.moveTo(0, yy);
        ctx.lineTo(this.width, yy);
      }
    }
    ctx.stroke();
  }

  private drawRuler(model: TimelineModel): void {
    const ctx = this.ctx;
    ctx.fillStyle = this.colors.background;
    ctx.fillRect(0, 0, this.width, RULER);
    ctx.fillStyle = this.colors.muted;
    ctx.strokeStyle = this.colors.grid;
    ctx.textBaseline = "top";
    const plotW = this.width - this.gutter;
    const tick = niceStep(((this.t1 - this.t0) / plotW) * 110);
    ctx.beginPath();
    for (let t = Math.ceil(this.t0 / tick) * tick; t <= this.t1; t += tick) {
      const x = Math.round(this.xAt(t)) + 0.5;
      ctx.moveTo(x, RULER - 6);
      ctx.lineTo(x, RULER);
      ctx.fillText(fmtUs(t), x + 2, 2);
    }
    ctx.moveTo(0, RULER - 0.5);
    ctx.lineTo(this.width, RULER - 0.5);
    ctx.stroke();
    // step boundaries and names
    ctx.fillStyle = this.colors.foreground;
    ctx.strokeStyle = this.colors.foreground;
    ctx.beginPath();
    let lastLabel = -Infinity;
    let lastX = -10;
    for (const step of model.doc.steps) {
      const a = this.xAt(step.start_us);
      const b = this.xAt(step.completion_us);
      if (b < this.gutter || a > this.width) continue;
      if (b - lastX >= 2) {
        ctx.moveTo(Math.round(b) + 0.5, 12);
        ctx.lineTo(Math.round(b) + 0.5, RULER);
        lastX = b;
      }
      const left = Math.max(a, this.gutter) + 3;
      if (b - left > 60 && left > lastLabel) {
        ctx.fillText(shorten(step.name, Math.floor((b - left) / 7)), left, 13, b - left - 4);
        lastLabel = b;
      }
    }
    ctx.stroke();
    ctx.fillStyle = this.colors.muted;
    ctx.fillText(model.doc.window.per === "step" ? "steps" : "window", 6, 13);
  }

  // ------------------------------------------------------------------ geometry

  private xAt(t: number): number {
    return this.gutter + ((t - this.t0) / (this.t1 - this.t0)) * (this.width - this.gutter);
  }

  private timeAt(x: number): number {
    return this.t0 + ((x - this.gutter) / (this.width - this.gutter)) * (this.t1 - this.t0);
  }

  private rowAt(y: number): number {
    const content = y - RULER + this.scrollY;
    const rows = this.layout.rowY;
    for (let r = 0; r < rows.length; r++) if (content >= rows[r] && content < rows[r] + ROW) return r;
    return -1;
  }

  private hit(x: number, y: number): { row: number; span: number; model: TimelineModel } | null {
    if (!this.model || x < this.gutter || y < RULER) return null;
    const row = this.rowAt(y);
    if (row < 0) return null;
    const model = this.detail && this.detail.doc.range.start_us <= this.t0 && this.detail.doc.range.end_us >= this.t1 ? this.detail : this.model;
    const slack = (3 * (this.t1 - this.t0)) / (this.width - this.gutter);
    const span = model.spanAt(row, this.timeAt(x), slack);
    return span >= 0 ? { row, span, model } : null;
  }

  // ------------------------------------------------------------------ sizing, theme, events

  resize(): void {
    const rect = this.canvas.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    this.width = Math.max(320, Math.floor(rect.width || this.canvas.parentElement?.clientWidth || 800));
    const wanted = RULER + this.layout.height + 4;
    this.height = Math.max(160, Math.min(wanted, Math.floor(window.innerHeight * 0.7) || wanted));
    this.gutter = Math.min(240, Math.max(120, Math.floor(this.width * 0.18)));
    this.canvas.width = Math.floor(this.width * dpr);
    this.canvas.height = Math.floor(this.height * dpr);
    this.canvas.style.height = `${this.height}px`;
    this.readTheme();
    this.scrollY = Math.max(0, Math.min(this.scrollY, this.layout.height - (this.height - RULER)));
    this.schedule();
  }

  private readTheme(): void {
    const body = document.body;
    if (body.classList.contains("vscode-light") || body.classList.contains("vscode-high-contrast-light")) this.theme = "light";
    else if (body.classList.contains("vscode-dark") || body.classList.contains("vscode-high-contrast")) this.theme = "dark";
    else this.theme = window.matchMedia?.("(prefers-color-scheme: light)").matches ? "light" : "dark";
    const style = getComputedStyle(this.root);
    const read = (name: string, fallback: string) => style.getPropertyValue(name).trim() || fallback;
    this.colors = {
      background: read("--ss-canvas-background", BACKGROUND[this.theme]),
      foreground: read("--ss-foreground", this.theme === "light" ? "#1f1f1f" : "#cccccc"),
      muted: read("--ss-muted", this.theme === "light" ? "#5f5f5f" : "#a6a6a6"),
      grid: read("--ss-grid", this.theme === "light" ? "#d4d4d4" : "#3c3c3c"),
      accent: read("--ss-accent", this.theme === "light" ? "#005fb8" : "#3794ff"),
    };
  }

  private schedule(): void {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => this.draw());
  }

  private maybeRequestDetail(): void {
    const model = this.model;
    if (!model || !model.doc.reduced || !this.options.onRangeRequest) return;
    const whole = model.doc.range.end_us - model.doc.range.start_us;
    const span = this.t1 - this.t0;
    if (span > whole / 4) return;
    if (this.detail && this.detail.doc.range.start_us <= this.t0 && this.detail.doc.range.end_us >= this.t1) return;
    if (this.requestTimer) clearTimeout(this.requestTimer);
    this.requestTimer = setTimeout(() => {
      // ask for a little more than the view, so panning stays on the finer level
      const a = Math.max(model.doc.range.start_us, this.t0 - span);
      const b = Math.min(model.doc.range.end_us, this.t1 + span);
      if (this.requested && this.requested[0] === a && this.requested[1] === b) return;
      this.requested = [a, b];
      this.options.onRangeRequest?.(a, b);
    }, 150);
  }

  private bind(): void {
    const c = this.canvas;
    new ResizeObserver(() => this.resize()).observe(this.root);
    // VS Code changes the body's class when the user switches theme: repaint in the new colours
    new MutationObserver(() => {
      this.readTheme();
      this.renderLegend();
      this.schedule();
    }).observe(document.body, { attributes: true, attributeFilter: ["class"] });
    c.addEventListener("wheel", (e) => {
      if (!this.model) return;
      const rect = c.getBoundingClientRect();
      if (e.ctrlKey || e.metaKey) {
        this.zoom(Math.exp(e.deltaY * 0.002), e.clientX - rect.left);
      } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        const delta = e.shiftKey && !e.deltaX ? e.deltaY : e.deltaX;
        this.pan(delta / (this.width - this.gutter));
      } else {
        const max = Math.max(0, this.layout.height - (this.height - RULER));
        if (max === 0) return; // nothing to scroll: let the page scroll
        this.scrollY = Math.max(0, Math.min(max, this.scrollY + e.deltaY));
        this.schedule();
      }
      e.preventDefault();
    }, { passive: false });
    c.addEventListener("mousedown", (e) => {
      if (!this.model || e.button !== 0) return;
      const rect = c.getBoundingClientRect();
      const y = e.clientY - rect.top;
      this.drag = { x: e.clientX - rect.left, y, t0: this.t0, t1: this.t1, scrollY: this.scrollY, select: e.shiftKey || y < RULER, moved: false };
      c.focus();
      e.preventDefault();
    });
    window.addEventListener("mousemove", (e) => {
      const rect = c.getBoundingClientRect();
      const x = e.clientX - rect.left;
      const y = e.clientY - rect.top;
      const d = this.drag;
      if (d) {
        if (Math.abs(x - d.x) + Math.abs(y - d.y) > 3) d.moved = true;
        if (!d.moved) return;
        if (d.select) {
          const a = this.timeAt(Math.min(d.x, x));
          const b = this.timeAt(Math.max(d.x, x));
          this.selection = [Math.max(this.model!.doc.range.start_us, a), Math.min(this.model!.doc.range.end_us, b)];
          this.schedule();
        } else {
          const dt = ((x - d.x) / (this.width - this.gutter)) * (d.t1 - d.t0);
          this.setView(d.t0 - dt, d.t1 - dt);
          const max = Math.max(0, this.layout.height - (this.height - RULER));
          this.scrollY = Math.max(0, Math.min(max, d.scrollY - (y - d.y)));
        }
        return;
      }
      this.pointerX = e.target === c && x >= this.gutter && x <= this.width ? x : null;
      if (e.target === c) this.hover(x, y, e.clientX - rect.left, e.clientY - rect.top);
    });
    window.addEventListener("mouseup", (e) => {
      const d = this.drag;
      this.drag = null;
      if (!d) return;
      if (d.moved) {
        if (d.select) this.setSelection(this.selection);
        return;
      }
      const rect = c.getBoundingClientRect();
      const found = this.hit(e.clientX - rect.left, e.clientY - rect.top);
      if (found) {
        this.focus = { row: found.row, span: found.span, model: found.model };
        this.announce(found.model, found.span);
        const src = found.model.source(found.span);
        if (src) this.options.onOpen(src.fileId, src.line);
        this.schedule();
      }
    });
    c.addEventListener("mouseleave", () => {
      this.tooltip.hidden = true;
      this.pointerX = null;
    });
    this.searchInput.addEventListener("input", () => this.search(this.searchInput.value));
    this.searchInput.addEventListener("keydown", (e) => {
      if (e.key === "Enter") this.goToMatch(e.shiftKey ? -1 : 1);
      else if (e.key === "Escape") this.search("");
      else return;
      e.preventDefault();
      e.stopPropagation();
    });
    c.addEventListener("keydown", (e) => this.onKey(e));
  }

  private hover(x: number, y: number, px: number, py: number): void {
    const found = this.hit(x, y);
    if (!found) {
      this.tooltip.hidden = true;
      this.canvas.style.cursor = "default";
      return;
    }
    this.canvas.style.cursor = found.model.source(found.span) ? "pointer" : "default";
    clear(this.tooltip);
    for (const line of describe(found.model, found.span)) this.tooltip.appendChild(h("div", {}, line));
    this.tooltip.hidden = false;
    const wrap = this.tooltip.parentElement!.getBoundingClientRect();
    const tip = this.tooltip.getBoundingClientRect();
    this.tooltip.style.left = `${Math.max(0, Math.min(px + 14, wrap.width - tip.width - 4))}px`;
    this.tooltip.style.top = `${py + 18 + tip.height > wrap.height ? Math.max(0, py - tip.height - 8) : py + 18}px`;
  }

  private announce(model: TimelineModel, span: number): void {
    this.live.textContent = describe(model, span).join(". ");
  }

  private moveFocus(rowDelta: number, spanDelta: number): void {
    const model = this.model;
    if (!model || !model.rows.length) return;
    let { row, span } = this.focus && this.focus.model === model ? this.focus : { row: 0, span: -1 };
    row = Math.max(0, Math.min(model.rows.length - 1, row + rowDelta));
    const r = model.rows[row];
    const mid = (this.t0 + this.t1) / 2;
    let k = span >= 0 ? r.spans.indexOf(span) : -1;
    if (k < 0 || rowDelta) {
      // the span of the new row nearest the middle of the view
      k = 0;
      while (k < r.starts.length - 1 && r.ends[k] < mid) k++;
    }
    k = Math.max(0, Math.min(r.spans.length - 1, k + spanDelta));
    if (!r.spans.length) {
      this.focus = { row, span: -1, model };
      this.live.textContent = `${model.doc.tracks[r.track].label}, depth ${r.depth}: no span`;
      this.schedule();
      return;
    }
    span = r.spans[k];
    this.focus = { row, span, model };
    // keep it in view
    if (model.end[span] < this.t0 || model.start[span] > this.t1) {
      const w = this.t1 - this.t0;
      this.setView(model.start[span] - w / 2, model.start[span] + w / 2);
    }
    this.scrollToRow(row);
    this.announce(model, span);
    this.schedule();
  }

  private scrollToRow(row: number): void {
    const y = this.layout.rowY[row];
    if (y === undefined) return;
    if (y < this.scrollY) this.scrollY = y;
    if (y + ROW > this.scrollY + this.height - RULER) this.scrollY = y + ROW - (this.height - RULER);
  }

  private onKey(e: KeyboardEvent): void {
    // the editor's own shortcuts (Ctrl+W closes it) are left alone
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const key = e.key;
    if (key === "ArrowLeft" || key === "a" || key === "A") this.pan(-0.2);
    else if (key === "ArrowRight" || key === "d" || key === "D") this.pan(0.2);
    else if (key === "+" || key === "=") this.zoom(0.5);
    else if (key === "-" || key === "_") this.zoom(2);
    // as in Perfetto, W/S zoom around the pointer while it is over the spans
    else if (key === "w" || key === "W") this.zoom(0.5, this.pointerX ?? undefined);
    else if (key === "s" || key === "S") this.zoom(2, this.pointerX ?? undefined);
    else if (key === "0") this.reset();
    else if (key === "ArrowUp") this.moveFocus(-1, 0);
    else if (key === "ArrowDown") this.moveFocus(1, 0);
    else if (key === "]") this.moveFocus(0, 1);
    else if (key === "[") this.moveFocus(0, -1);
    else if (key === "Escape") this.setSelection(null);
    else if (key === "Enter" && this.focus && this.focus.span >= 0) {
      const src = this.focus.model.source(this.focus.span);
      if (src) this.options.onOpen(src.fileId, src.line);
      else this.live.textContent = "This span has no source line.";
    } else return;
    e.preventDefault();
  }

  /** "N matches" in the loaded window, "k of N" once one is gone to; empty without a search. */
  private renderSearchStatus(at = -1): void {
    const m = this.matches;
    this.searchStatus.classList.toggle("none", !!m && m.count === 0);
    if (!m) this.searchStatus.textContent = "";
    else if (m.count === 0) this.searchStatus.textContent = "No match";
    else {
      const n = m.count.toLocaleString("en-US");
      const of = m.count === 1 ? "1 match" : `${n} matches`;
      this.searchStatus.textContent = at >= 0 ? `${(at + 1).toLocaleString("en-US")} of ${of}` : of;
    }
  }

  private renderLegend(): void {
    if (this.model) renderLegend(this.legend, legendEntries(this.model, this.theme));
    else clear(this.legend);
  }

  private renderSummary(): void {
    clear(this.summary);
    const model = this.model;
    if (!model) return;
    if (!this.selection) {
      this.summary.appendChild(h("p", { class: "hint" }, "Select a range (Shift+drag, or drag on the ruler) to see its totals."));
      return;
    }
    const [a, b] = this.selection;
    const totals = selectionTotals(model, a, b);
    const rows = [...totals.byCategory.entries()].filter(([, us]) => us > 0).sort((x, y) => y[1] - x[1]);
    const list = h("dl", { class: "totals" });
    const add = (label: string, us: number) => {
      list.appendChild(h("dt", {}, label));
      list.appendChild(h("dd", {}, `${fmtUs(us)} (${Math.round((100 * us) / Math.max(totals.duration, 1e-9))}%)`));
    };
    add("host busy (any thread)", totals.hostBusy);
    if (model.doc.window.gpu_observed) add("GPU busy (any stream)", totals.gpuBusy);
    for (const [cat, us] of rows) add(CATEGORY_LABELS[cat] ?? cat, us);
    this.summary.appendChild(
      h("h3", {}, `Selection: ${fmtUs(a)} – ${fmtUs(b)}, ${fmtUs(totals.duration)}`),
    );
    this.summary.appendChild(
      h("p", { class: "hint" }, "Each figure is a union of intervals over all threads or streams: nested and concurrent events count once, so figures do not add up."),
    );
    if (totals.merged) {
      this.summary.appendChild(
        h("p", { class: "hint" }, `≈ ${totals.merged} merged spans (shorter than ${fmtUs(model.doc.resolution_us)}) count their busy time in proportion: zoom in for exact figures.`),
      );
    }
    this.summary.appendChild(list);
  }
}

/** A span in words: name, kind, duration, source, track (the tooltip's lines). */
export function describe(model: TimelineModel, i: number): string[] {
  const doc = model.doc;
  const dur = model.end[i] - model.start[i];
  const label = model.label(i);
  const name = model.name(i);
  const out = [shorten(label === name ? name : `${label} (${name})`, 300)];
  const count = model.mergedCount.get(i);
  const cat = CATEGORY_LABELS[model.categoryName(i)] ?? model.categoryName(i);
  if (count) {
    out.push(`${count} spans (${cat}) merged (each shorter than ${fmtUs(doc.resolution_us)}), busy ${fmtUs(model.mergedBusy.get(i) ?? dur)} of ${fmtUs(dur)}`);
  } else {
    out.push(`${CATEGORY_ONE[model.categoryName(i)] ?? model.categoryName(i)} · ${fmtUs(dur)} · at ${fmtUs(model.start[i])}`);
  }
  const src = model.source(i);
  out.push(src ? `${shorten(src.path, 200)}:${src.line}` : "no source line");
  const track = doc.tracks[doc.spans.track[i]].label;
  out.push(shorten(track, 120));
  // what sharing the trace would change: the kind, never the replacement
  for (const [what, text] of [["name", name], ["path", src?.path ?? ""], ["thread", track]] as const) {
    const note = text ? redactionNote(doc.redactable, text) : null;
    if (note) out.push(`${MARK} ${what} ${note}`);
  }
  return out;
}

function computeLayout(model: TimelineModel): Layout {
  const rowY: number[] = [];
  const trackY: number[] = [];
  let y = 4;
  model.doc.tracks.forEach((track, k) => {
    trackY.push(y);
    const first = model.trackRow[k];
    const n = Math.max(1, track.rows);
    for (let d = 0; d < n; d++) rowY[first + d] = y + d * ROW;
    y += n * ROW + TRACK_GAP;
  });
  return { rowY, trackY, height: y };
}

/** A tick interval of 1, 2 or 5 times a power of ten, at least `rough`. */
export function niceStep(rough: number): number {
  if (!(rough > 0) || !Number.isFinite(rough)) return 1;
  const p = 10 ** Math.floor(Math.log10(rough));
  for (const m of [1, 2, 5, 10]) if (m * p >= rough) return m * p;
  return 10 * p;
}
