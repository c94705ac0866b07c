// The trace panel's webview: receives the run's state from the host, shows it in tabs (overview,
// timeline, lines, operators, kernels, steps), and asks the host to open source lines.

import { clear, h, shorten } from "./dom";
import { fmtBytes, fmtCount, fmtMs, fmtUs } from "./format";
import { recordedInputsText } from "./inputs";
import { HostMessage, PanelState, parseHostMessage, WebviewMessage } from "./messages";
import { comparisonProblem } from "./comparison";
import { measureProblem } from "./measure";
import { redactionNote } from "./redaction";
import { partLabels, renderOverview } from "./overview";
import { FileIds, fusedWith, LineRow, memoryRecorded, PanelReport, reportProblem } from "./report";
import { DataTable } from "./table-view";
import { placeText } from "./table-logic";
import type { Column } from "./table-logic";
import { awaitsSpans, BreakdownStep, joinTimeline, KernelRow, OperatorRow, OperatorShapeRow, parseTimeline, TimelineDoc, TimelineModel } from "./timeline-doc";
import { TimelineView } from "./timeline-view";

interface VsCodeApi {
  postMessage(message: WebviewMessage): void;
  getState(): unknown;
  setState(state: unknown): void;
}

declare global {
  interface Window {
    acquireVsCodeApi?: () => VsCodeApi;
    stepscopePanel?: { timeline: TimelineView; state: () => PanelState | null; posted: WebviewMessage[] };
  }
}

const TABS = ["overview", "timeline", "lines", "operators", "kernels", "steps"] as const;
type Tab = (typeof TABS)[number];
const TAB_LABELS: Record<Tab, string> = {
  overview: "Overview",  // two runs compared: their statements, side by side
  timeline: "Timeline",
  lines: "Lines",
  operators: "Operators",
  kernels: "Kernels",
  steps: "Steps",
};

class Panel {
  private readonly api: VsCodeApi;
  private readonly app: HTMLElement;
  private readonly banner: HTMLElement;
  private readonly share: HTMLButtonElement;
  private readonly perfetto: HTMLButtonElement;
  private readonly panels = new Map<Tab, HTMLElement>();
  private readonly tabs = new Map<Tab, HTMLButtonElement>();
  private readonly timeline: TimelineView;
  private state: PanelState | null = null;
  private current: Tab = "overview";
  /** the tabs the shown run has something for: a measure run (no trace) has its overview only */
  private available: readonly Tab[] = TABS;
  private readonly pending = new Map<Tab, () => HTMLElement | null>();
  private pendingTimeline: (() => void) | null = null;
  /** what waits for its span columns (a `spans` message), and a reveal of that run meanwhile */
  private awaiting: { state?: PanelState; range?: { runId: string; timeline: unknown }; reveal?: { runId: string; fileId: string; line: number } } = {};
  private lines: DataTable<LineRow> | null = null;
  private fileIds: FileIds | null = null;
  readonly posted: WebviewMessage[] = [];

  constructor(app: HTMLElement, api: VsCodeApi) {
    this.api = api;
    this.app = app;
    this.banner = h("div", { class: "banner", role: "alert", hidden: true });
    this.timeline = new TimelineView({
      onOpen: (fileId, line) => this.post({ type: "openSource", fileId, line }),
      onRangeRequest: (startUs, endUs) => {
        if (this.state) this.post({ type: "requestRange", runId: this.state.runId, startUs, endUs, maxSpans: 200_000 });
      },
    });
    // the host writes the redacted copies of the run's traces and reveals them (Stepscope: Share Trace…)
    this.share = h("button", {
      type: "button",
      class: "share",
      disabled: true,
      title: "Write a copy of this run's trace with secrets, private paths, host and user names replaced, and reveal it",
    }, "Share Trace…") as HTMLButtonElement;
    this.share.addEventListener("click", () => {
      if (this.state) this.post({ type: "shareTrace", runId: this.state.runId });
    });
    // the host says where the run's trace is, to open in Perfetto or chrome://tracing (it sends it nowhere)
    this.perfetto = h("button", { type: "button", class: "perfetto", disabled: true }, "Open in Perfetto…") as HTMLButtonElement;
    this.perfetto.addEventListener("click", () => {
      if (this.state) this.post({ type: "openInPerfetto", runId: this.state.runId });
    });
    const actions = h("div", { class: "actions", role: "toolbar", "aria-label": "Run" }, this.share, this.perfetto);
    const saved = api.getState() as { tab?: string } | undefined;
    if (saved && TABS.includes(saved.tab as Tab)) this.current = saved.tab as Tab;
    const tablist = h("div", { class: "tabs", role: "tablist", "aria-label": "Trace panel" });
    for (const tab of TABS) {
      const button = h("button", {
        type: "button",
        role: "tab",
        id: `tab-${tab}`,
        "aria-controls": `panel-${tab}`,
        "aria-selected": tab === this.current ? "true" : "false",
        tabindex: tab === this.current ? 0 : -1,
      }, TAB_LABELS[tab]);
      button.addEventListener("click", () => this.show(tab));
      button.addEventListener("keydown", (e) => this.onTabKey(e, tab));
      this.tabs.set(tab, button);
      tablist.appendChild(button);
      const panel = h("div", { role: "tabpanel", id: `panel-${tab}`, "aria-labelledby": `tab-${tab}`, class: `tabpanel panel-${tab}`, tabindex: 0, hidden: tab !== this.current });
      this.panels.set(tab, panel);
    }
    this.panels.get("timeline")!.appendChild(this.timeline.root);
    clear(app);
    app.append(this.banner, actions, tablist, ...this.panels.values());
    window.addEventListener("message", (e) => this.receive(e.data));
    window.stepscopePanel = { timeline: this.timeline, state: () => this.state, posted: this.posted };
    this.post({ type: "ready" });
  }

  private post(message: WebviewMessage): void {
    this.posted.push(message);
    this.api.postMessage(message);
  }

  private error(text: string): void {
    this.banner.textContent = shorten(text, 500);
    this.banner.hidden = false;
    this.post({ type: "log", level: "error", message: text });
  }

  private show(tab: Tab): void {
    if (!this.available.includes(tab)) tab = "overview";
    this.current = tab;
    if (tab === "timeline" && this.pendingTimeline) {
      const build = this.pendingTimeline;
      this.pendingTimeline = null;
      build();
    }
    const build = this.pending.get(tab);
    if (build) {
      this.pending.delete(tab);
      this.fill(tab, build());
    }
    for (const t of TABS) {
      const selected = t === tab;
      this.tabs.get(t)!.setAttribute("aria-selected", selected ? "true" : "false");
      this.tabs.get(t)!.tabIndex = selected ? 0 : -1;
      this.panels.get(t)!.hidden = !selected;
    }
    if (tab === "timeline") this.timeline.resize();
    this.api.setState({ tab });
  }

  private onTabKey(e: KeyboardEvent, tab: Tab): void {
    const tabs = this.available;
    const k = tabs.indexOf(tab);
    const to: Record<string, number> = { ArrowRight: k + 1, ArrowLeft: k - 1, Home: 0, End: tabs.length - 1 };
    if (!(e.key in to)) return;
    const next = tabs[(to[e.key] + tabs.length) % tabs.length];
    this.show(next);
    this.tabs.get(next)!.focus();
    e.preventDefault();
  }

  private receive(data: unknown): void {
    const parsed = parseHostMessage(data);
    if (!parsed.ok) {
      this.error(`Ignored a message from the editor: ${parsed.reason}`);
      return;
    }
    const message: HostMessage = parsed.message;
    if (message.type === "error") this.error(message.message);
    else if (message.type === "state") {
      // a timeline whose span columns follow in a `spans` message is shown with them
      this.awaiting = { ...this.awaiting, state: awaitsSpans(message.state.timeline) ? message.state : undefined };
      if (!this.awaiting.state) this.load(message.state);
    } else if (message.type === "reveal" && this.state && message.runId === this.state.runId) this.reveal(message.fileId, message.line);
    else if (message.type === "reveal" && this.awaiting.state?.runId === message.runId) this.awaiting.reveal = message;
    else if (message.type === "range") {
      this.awaiting = { ...this.awaiting, range: awaitsSpans(message.timeline) ? message : undefined };
      if (!this.awaiting.range) this.showRange(message.runId, message.timeline);
    } else if (message.type === "spans") {
      const { state, range, reveal } = this.awaiting;
      if (message.of === "state" && state && state.runId === message.runId) {
        this.awaiting = {};
        this.load({ ...state, timeline: joinTimeline(state.timeline, message.spans) as TimelineDoc });
        if (reveal && this.state?.runId === reveal.runId) this.reveal(reveal.fileId, reveal.line);
      } else if (message.of === "range" && range && range.runId === message.runId) {
        this.awaiting = { ...this.awaiting, range: undefined };
        this.showRange(range.runId, joinTimeline(range.timeline, message.spans));
      }
    }
  }

  private showRange(runId: string, timeline: unknown): void {
    if (!this.state || runId !== this.state.runId) return;
    const doc = parseTimeline(timeline);
    if (doc.ok) this.timeline.setDetail(new TimelineModel(doc.doc));
    else this.error(`A finer level of the timeline was refused: ${doc.reason}`);
  }

  private load(state: PanelState): void {
    const started = performance.now();
    const phase = (name: string, since: number) => performance.measure(`stepscope ${name}`, { start: since, end: performance.now() });
    this.banner.hidden = true;
    const problems: string[] = [];
    let report: PanelReport | null = state.report;
    const reportIssue = report ? reportProblem(report) : null;
    if (reportIssue) {
      problems.push(reportIssue);
      report = null;
    }
    let timeline: TimelineDoc | null = null;
    if (state.timeline) {
      const parsed = parseTimeline(state.timeline);
      if (parsed.ok) timeline = parsed.doc;
      else problems.push(`the timeline cannot be shown: ${parsed.reason}`);
    }
    phase("check", started);
    const measure = state.measure && !measureProblem(state.measure) ? state.measure : null;
    if (state.measure && !measure) problems.push(measureProblem(state.measure)!);
    const comparison = state.comparison && !comparisonProblem(state.comparison) ? state.comparison : null;
    if (state.comparison && !comparison) problems.push(comparisonProblem(state.comparison)!);
    this.state = { ...state, report, timeline, measure, comparison };
    this.share.disabled = !report && !timeline;  // a measure run, or two runs compared, has no trace to share
    this.share.title = !this.share.disabled ? ""
      : comparison ? "Two runs compared: share each run's trace from its own panel."
        : "This run has no trace to share (it was measured without the profiler).";
    this.perfetto.disabled = this.share.disabled;
    this.perfetto.title = !this.perfetto.disabled
      ? "Where this run's trace is, to open in Perfetto (ui.perfetto.dev) or chrome://tracing"
      : comparison ? "Two runs compared: open each run's trace from its own panel."
        : "This run has no trace (it was measured without the profiler).";
    // a run without a report or a timeline (a measure run, two runs compared) has nothing for the trace's tabs
    this.available = report || timeline ? TABS : ["overview"];
    for (const t of TABS) this.tabs.get(t)!.hidden = !this.available.includes(t);
    const fileIds = new FileIds(timeline?.files ?? {}, Array.isArray(report?.files) ? report!.files : []);
    this.fileIds = fileIds;
    this.lines = null;
    const open = (fileId: string, line: number) => this.post({ type: "openSource", fileId, line });
    let t = performance.now();
    renderOverview(this.panels.get("overview")!, { title: state.title, stale: state.stale, report, timeline, measure, comparison, fileIds, onOpen: open });
    phase("overview", t);
    // the timeline is indexed when its tab is shown: a panel opened on another tab is ready sooner
    this.pendingTimeline = () => {
      const since = performance.now();
      this.timeline.setModel(timeline ? new TimelineModel(timeline) : null);
      phase("timeline model", since);
    };
    this.timeline.setModel(null);
    t = performance.now();
    if (!timeline) {
      const p = this.panels.get("timeline")!;
      p.querySelector(".empty")?.remove();
      p.prepend(h("p", { class: "empty" }, "No timeline for this run (runs analysed before the trace panel existed have none)."));
    } else {
      this.panels.get("timeline")!.querySelector(".empty")?.remove();
    }
    // each table is built when its tab is first shown (a window of thousands of steps makes big ones)
    this.pending.clear();
    this.pending.set("lines", () => {
      this.lines = report ? linesTable(report, timeline, fileIds, open) : null;
      return this.lines?.root ?? null;
    });
    this.pending.set("operators", () => (timeline?.operators ? operatorsTable(timeline, open) : null));
    this.pending.set("kernels", () => (timeline?.kernels ? kernelsTable(timeline, open) : null));
    this.pending.set("steps", () => stepsTable(report, timeline, open, (a, b) => this.showStep(a, b)));
    for (const tab of this.pending.keys()) clear(this.panels.get(tab)!);
    phase("tables", t);
    if (problems.length) this.error(problems.join("; "));
    this.show(this.current);
    this.app.setAttribute("aria-busy", "false");
    this.app.dataset.state = "ready";
  }

  /** The panel opened on a source line: its row of the lines table, in view and focused. */
  private reveal(fileId: string, line: number): void {
    this.show("lines");
    const ids = this.fileIds;
    const where = `${this.state?.timeline?.files[fileId] ?? fileId}:${line}`;
    if (!this.lines || !ids) return;
    this.lines.reveal((r) => r.line === line && ids.of(r.file, r.file_id) === fileId, `line ${where}`);
  }

  private showStep(startUs: number, endUs: number): void {
    this.show("timeline");
    this.timeline.setView(startUs, endUs);
  }

  private fill(tab: Tab, table: HTMLElement | null): void {
    const panel = this.panels.get(tab)!;
    clear(panel);
    panel.appendChild(table ?? h("p", { class: "empty" }, "Nothing to show for this run."));
  }
}

function relPath(timeline: TimelineDoc | null, fileId: string | null, fallback: string): string {
  if (fileId && timeline?.files[fileId]) return timeline.files[fileId];
  return fallback.replace(/\\/g, "/").split("/").slice(-2).join("/");
}

type Open = (fileId: string, line: number) => void;

function linesTable(report: PanelReport, timeline: TimelineDoc | null, ids: FileIds, onOpen: Open): DataTable<LineRow> {
  const gpu = report.gpu.observed;
  const copies = (r: LineRow) => {
    const c = r.copies;
    return c ? c.h2d.count + c.d2h.count + c.d2d.count : 0;
  };
  const columns: Column<LineRow>[] = [
    { key: "file", label: "File", numeric: false, value: (r) => relPath(timeline, ids.of(r.file, r.file_id), r.file),
      mark: (r) => redactionNote(timeline?.redactable, timeline?.files[ids.of(r.file, r.file_id) ?? ""] ?? r.file) },
    { key: "line", label: "Line", numeric: true, value: (r) => r.line },
    { key: "wall", label: "Wall", numeric: true, value: (r) => r.wall_ms, format: (r) => fmtMs(r.wall_ms), help: "elapsed time on the line per step (a union: nested work counts once)" },
    { key: "self", label: "Self", numeric: true, value: (r) => r.cpu_self_ms, format: (r) => fmtMs(r.cpu_self_ms), help: "CPU time of the line less that of other lines inside it" },
    { key: "backward", label: "Backward", numeric: true, value: (r) => r.backward_ms, format: (r) => fmtMs(r.backward_ms), help: "CPU time of the backward work its forward caused" },
    { key: "syncs", label: "Syncs", numeric: true, value: (r) => r.sync_ms, format: (r) => fmtMs(r.sync_ms), help: "time the host waited on the device" },
  ];
  if (gpu) {
    // a CPU-only trace has no GPU, kernel or copy figures to show: no columns that are always empty
    columns.splice(4, 0,
      { key: "gpu", label: "GPU", numeric: true, value: (r) => r.gpu_ms, format: (r) => fmtMs(r.gpu_ms), help: "GPU work it launched per step" });
    columns.splice(6, 0,
      { key: "backwardGpu", label: "Backward GPU", numeric: true, value: (r) => r.backward_gpu_ms ?? null, format: (r) => fmtMs(r.backward_gpu_ms ?? null), help: "GPU work of the backward its forward caused" },
      { key: "kernels", label: "Kernels", numeric: true, value: (r) => r.kernels, format: (r) => fmtCount(r.kernels) },
      { key: "copies", label: "Copies", numeric: true, value: copies, format: (r) => (r.copies ? `${r.copies.h2d.count} H→D · ${r.copies.d2h.count} D→H · ${r.copies.d2d.count} D→D` : "") });
  }
  if (report.lines.some((r) => fusedWith(r) !== null)) {
    // compiled code: a kernel made from several statements is on each of their rows, never added up
    columns.push({ key: "fused", label: "Fused with", numeric: false, value: (r) => fusedWith(r),
      format: (r) => fusedWith(r) ?? "", help: "other lines its compiled kernels also came from: the time in shared kernels is on each of those rows (not added up)" });
  }
  const unit = report.window?.per === "window" ? "window" : "step";
  const memory = memoryRecorded(report.lines);
  const device = report.lines.find((r) => r.memory_device)?.memory_device;
  const whose = device ? `${device} memory` : "memory";
  if (memory) {
    // only where memory was recorded: a column of "not recorded" (or of zeros) would say nothing true
    columns.push(
      { key: "allocated", label: "Allocated", numeric: true, value: (r) => r.alloc_bytes ?? null, format: (r) => fmtBytes(r.alloc_bytes),
        help: `${whose} allocated per ${unit} on the line's thread while it ran (frees not subtracted)` },
      { key: "peak", label: "Peak memory", numeric: true, value: (r) => r.peak_bytes ?? null, format: (r) => fmtBytes(r.peak_bytes),
        help: `the most ${whose} in use while the line ran (every thread's allocations)` });
  }
  const said = [report.window?.per === "window" ? "Figures per window (the trace has no step markers)." : "Figures per active step."];
  if (!gpu) said.push("GPU activity was not recorded in this trace: no GPU, kernel or copy columns.");
  said.push(memory
    ? `Allocated: ${whose} allocated per ${unit} on the line's thread while it ran (frees not subtracted); Peak memory: the most in use while it ran.`
    : "Memory was not recorded: turn on stepscope.profile.memory (stepscope profile --memory) and profile again to see it.");
  const note = said.join(" ");
  return new DataTable<LineRow>({
    id: "lines",
    caption: "Lines",
    columns,
    rows: report.lines,
    sortBy: "wall",
    note,
    source: (r) => {
      const id = ids.of(r.file, r.file_id);
      return id ? { fileId: id, line: r.line, label: `${relPath(timeline, id, r.file)}:${r.line}` } : null;
    },
    onOpen,
  });
}

function operatorsTable(timeline: TimelineDoc, onOpen: Open): HTMLElement {
  const gpu = timeline.window.gpu_observed;
  const t = timeline.operators!;
  const shapes = t.rows.some((r) => r.shapes !== null);
  const columns: Column<OperatorRow>[] = [
    { key: "name", label: "Operator", numeric: false, value: (r) => r.name, mark: (r) => redactionNote(timeline.redactable, r.name) },
    { key: "calls", label: "Calls", numeric: true, value: (r) => r.calls, format: (r) => fmtCount(r.calls), help: "its calls per step on every line" },
    { key: "self", label: "Self CPU", numeric: true, value: (r) => r.self_ms, format: (r) => fmtMs(r.self_ms), help: "its time less that of the operators it calls" },
    { key: "total", label: "Total CPU", numeric: true, value: (r) => r.total_ms, format: (r) => fmtMs(r.total_ms), help: "its time including what it calls (outermost calls only)" },
    ...(gpu ? [{ key: "gpu", label: "GPU", numeric: true, value: (r: OperatorRow) => r.gpu_ms, format: (r: OperatorRow) => fmtMs(r.gpu_ms), help: "GPU work launched from inside it (a union)" }] : []),
    ...(shapes ? [{ key: "shapes", label: "Input shapes", numeric: false, value: (r: OperatorRow) => (r.shapes ? recordedInputsText(r.shapes.text) : null),
      format: (r: OperatorRow) => (r.shapes ? `${recordedInputsText(r.shapes.text)} (${Math.round(r.shapes.share * 100)}% of calls)` : ""),
      help: "its most common input shapes and their share of its calls (group by input shapes to see each)" }] : []),
    { key: "where", label: "Line", numeric: false, place: true, value: (r) => (r.file ? `${timeline.files[r.file] ?? r.file}:${r.line}` : null), format: (r) => placeText(r.file ? `${timeline.files[r.file] ?? r.file}:${r.line}` : null, r.line_calls, r.calls, "calls"), help: "the line with most of its self time, and its calls there where other lines call it too" },
  ];
  const said = [`Per ${timeline.window.per} of the window, batch read included${t.left_out ? `; ${t.left_out} smaller operators are not listed` : ""}.`];
  if (!shapes) said.push("Input shapes were not recorded: turn on stepscope.profile.shapes (stepscope profile --shapes) and profile again to see them.");
  const byOperator = new DataTable<OperatorRow>({
    id: "operators",
    caption: "Operators",
    columns,
    rows: t.rows,
    sortBy: "total",
    note: said.join(" "),
    source: (r) => (r.file && r.line ? { fileId: r.file, line: r.line, label: `${timeline.files[r.file] ?? r.file}:${r.line}` } : null),
    onOpen,
  }).root;
  const byShapes = t.by_shapes && Array.isArray(t.by_shapes.rows) ? t.by_shapes : null;
  if (!byShapes) return byOperator;
  return groupedOperators(byOperator, () => operatorShapesTable(timeline, byShapes, onOpen));
}

/** The operators table with its grouping (as TensorBoard's "Group by: Operator / Operator + Input
 * Shape"): by operator at first; by operator and input shapes built when first chosen. */
function groupedOperators(byOperator: HTMLElement, makeByShapes: () => HTMLElement): HTMLElement {
  const holder = h("div", { class: "grouped" }, byOperator);
  let byShapes: HTMLElement | null = null;
  const choice = h("select", { id: "operators-group", "aria-label": "Group operators by" },
    h("option", { value: "operator" }, "Operator"),
    h("option", { value: "shapes" }, "Operator and input shapes"));
  choice.addEventListener("change", () => {
    clear(holder);
    if (choice.value === "shapes") holder.appendChild((byShapes ??= makeByShapes()));
    else holder.appendChild(byOperator);
  });
  return h("div", {}, h("label", { class: "group-by" }, "Group by ", choice), holder);
}

function operatorShapesTable(timeline: TimelineDoc, t: { rows: OperatorShapeRow[]; left_out: number }, onOpen: Open): HTMLElement {
  const place = (r: OperatorShapeRow) => (r.file ? `${timeline.files[r.file] ?? r.file}:${r.line}` : null);
  const columns: Column<OperatorShapeRow>[] = [
    { key: "name", label: "Operator", numeric: false, value: (r) => r.name, mark: (r) => redactionNote(timeline.redactable, r.name) },
    { key: "inputs", label: "Input shapes", numeric: false, value: (r) => recordedInputsText(r.inputs), help: "the shapes of its tensor inputs (— : none was a tensor)" },
    { key: "calls", label: "Calls", numeric: true, value: (r) => r.calls, format: (r) => fmtCount(r.calls), help: "its calls per step with these input shapes, on every line" },
    { key: "self", label: "Self CPU", numeric: true, value: (r) => r.self_ms, format: (r) => fmtMs(r.self_ms), help: "its time less that of the operators it calls" },
    { key: "total", label: "Total CPU", numeric: true, value: (r) => r.total_ms, format: (r) => fmtMs(r.total_ms), help: "its time including what it calls (calls no call of the same name holds)" },
    { key: "where", label: "Line", numeric: false, place: true, value: place, format: (r) => placeText(place(r), r.line_calls, r.calls, "calls"), help: "the line with most of its self time, and its calls there where other lines call it too" },
  ];
  const said = [`Per ${timeline.window.per} of the window: one row per operator and input shapes; an operator's rows add up to its row grouped by operator${t.left_out ? `; ${t.left_out} smaller rows are not listed` : ""}.`];
  if (timeline.window.gpu_observed) said.push("GPU time is not split by input shapes: group by operator to see it.");
  return new DataTable<OperatorShapeRow>({
    id: "operators-shapes",
    caption: "Operators by input shapes",
    columns,
    rows: t.rows,
    sortBy: "total",
    note: said.join(" "),
    source: (r) => (r.file && r.line ? { fileId: r.file, line: r.line, label: `${timeline.files[r.file] ?? r.file}:${r.line}` } : null),
    onOpen,
  }).root;
}

function kernelsTable(timeline: TimelineDoc, onOpen: Open): HTMLElement {
  const t = timeline.kernels!;
  if (!timeline.window.gpu_observed) return h("p", { class: "empty" }, "GPU events were not observed in this trace: no kernel to list (not zero kernels).");
  const columns: Column<KernelRow>[] = [
    { key: "name", label: "Kernel", numeric: false, value: (r) => r.name, mark: (r) => redactionNote(timeline.redactable, r.name) },
    { key: "launches", label: "Launches", numeric: true, value: (r) => r.launches, format: (r) => fmtCount(r.launches) },
    { key: "total", label: "Total", numeric: true, value: (r) => r.total_ms, format: (r) => fmtMs(r.total_ms), help: "its time on every stream (a union) per step" },
    { key: "mean", label: "Mean", numeric: true, value: (r) => r.mean_us, format: (r) => fmtUs(r.mean_us), help: "mean duration of one launch" },
    { key: "where", label: "Launched from", numeric: false, place: true, value: (r) => (r.file ? `${timeline.files[r.file] ?? r.file}:${r.line}` : null), format: (r) => placeText(r.file ? `${timeline.files[r.file] ?? r.file}:${r.line}` : null, r.line_launches, r.launches, "launches") },
  ];
  return new DataTable<KernelRow>({
    id: "kernels",
    caption: "Kernels",
    columns,
    rows: t.rows,
    sortBy: "total",
    note: `Per ${timeline.window.per} of the window${t.left_out ? `; ${t.left_out} smaller kernels are not listed` : ""}.`,
    source: (r) => (r.file && r.line ? { fileId: r.file, line: r.line, label: `${timeline.files[r.file] ?? r.file}:${r.line}` } : null),
    onOpen,
  }).root;
}

interface StepRow {
  name: string;
  ms: number;
  cpu_ms: number | null;
  parts: Record<string, number | null>;
  start: number | null;
  end: number | null;
}

function stepsTable(report: PanelReport | null, timeline: TimelineDoc | null, onOpen: Open, show: (a: number, b: number) => void): HTMLElement | null {
  const bounds = new Map((timeline?.steps ?? []).map((s) => [s.name, s]));
  const parts = new Map((timeline?.breakdown?.steps ?? []).map((s: BreakdownStep) => [s.name, s.parts]));
  const source = report?.steps?.length ? report.steps : (timeline?.steps ?? []).map((s) => ({ name: s.name, ms: s.ms, cpu_ms: null }));
  if (!source.length) return null;
  const rows: StepRow[] = source.map((s) => ({
    name: s.name,
    ms: s.ms,
    cpu_ms: s.cpu_ms ?? null,
    parts: parts.get(s.name) ?? {},
    start: bounds.get(s.name)?.start_us ?? null,
    end: bounds.get(s.name)?.completion_us ?? null,
  }));
  const labels = partLabels(timeline?.window.gpu_observed ?? false);
  const partNames = timeline?.breakdown?.parts.filter((p) => timeline.window.gpu_observed || (p !== "gpu_busy" && p !== "copies")) ?? [];
  const columns: Column<StepRow>[] = [
    { key: "name", label: "Step", numeric: false, value: (r) => r.name },
    { key: "ms", label: "Elapsed", numeric: true, value: (r) => r.ms, format: (r) => fmtMs(r.ms), help: "from the previous step's completion to its own" },
    { key: "cpu", label: "CPU span", numeric: true, value: (r) => r.cpu_ms, format: (r) => (r.cpu_ms === null ? "unknown" : fmtMs(r.cpu_ms)) },
    ...partNames.map((p) => ({ key: p, label: labels[p] ?? p, numeric: true, value: (r: StepRow) => r.parts[p] ?? null, format: (r: StepRow) => fmtMs(r.parts[p] ?? null) })),
  ];
  return new DataTable<StepRow>({
    id: "steps",
    caption: "Steps",
    columns,
    rows,
    sortBy: "name",
    direction: "ascending",
    limit: 5000,
    note: "Enter or a click shows the step on the timeline.",
    source: () => null,
    activate: (r) => {
      if (r.start !== null && r.end !== null) show(r.start, r.end);
    },
    activateLabel: (r) => (r.start !== null ? `Show ${r.name} on the timeline` : ""),
    onOpen,
  }).root;
}

function start(): void {
  const app = document.getElementById("app");
  if (!app) return;
  const api: VsCodeApi = window.acquireVsCodeApi
    ? window.acquireVsCodeApi()
    : { postMessage: () => undefined, getState: () => undefined, setState: () => undefined };
  new Panel(app, api);
}

start();
