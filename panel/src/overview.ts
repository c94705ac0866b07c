// The overview: the headline (ms/step, samples/s, the machine), where each step's time went (stacked
// bars that add up to the step), start-up apart from the window, the findings with their next check,
// and, when there is one, the profiler's distortion and a measure run's distribution.

import { append, clear, h, shorten, svg } from "./dom";
import { fmtMs, fmtPercent, fmtRate } from "./format";
import { changeWords, matchWords, ratioWords, RunComparison, runWords, StatementRow, statementRows } from "./comparison";
import { comparisonWords, histogram, MeasureResult, measureFacts, noiseWords, stripRows } from "./measure";
import { FileIds, PanelReport } from "./report";
import { DataTable } from "./table-view";
import type { Column } from "./table-logic";
import type { TimelineDoc } from "./timeline-doc";

const PART_LABELS: Record<string, string> = {
  gpu_busy: "GPU busy",
  copies: "copies (no kernel running)",
  batch_read: "batch read (GPU idle)",
  host_wait: "host waits on the device (GPU idle)",
  cpu_work: "CPU-bound work (GPU idle)",
  other: "nothing recorded",
};

const CPU_PART_LABELS: Record<string, string> = {
  batch_read: "batch read",
  host_wait: "host waits",
  cpu_work: "recorded CPU work",
  other: "nothing recorded (Python between events)",
};

/** The time parts' names: what the GPU was doing meanwhile is said only where GPU activity was recorded. */
export function partLabels(gpuObserved: boolean): Record<string, string> {
  return gpuObserved ? PART_LABELS : { ...PART_LABELS, ...CPU_PART_LABELS };
}

const MAX_BARS = 200;

export interface OverviewInput {
  title: string;
  stale: boolean;
  report: PanelReport | null;
  timeline: TimelineDoc | null;
  measure: MeasureResult | null;
  /** two profile runs statement by statement (no report, no timeline) */
  comparison?: RunComparison | null;
  fileIds: FileIds;
  onOpen: (fileId: string, line: number) => void;
}

export function machineLabel(machine: PanelReport["machine"] | MeasureResult["machine"] | undefined): string {
  if (!machine) return "an unnamed machine";
  const device = typeof machine.device === "string" ? machine.device : "";
  const host = typeof machine.host === "string" ? machine.host : "";
  return [device, host ? `host ${host}` : ""].filter(Boolean).join(", ") || "an unnamed machine";
}

export function renderOverview(root: HTMLElement, input: OverviewInput): void {
  clear(root);
  const { report, timeline } = input;
  append(root, h("h2", { class: "run-title name" }, shorten(input.title, 300)));
  if (input.stale) {
    root.appendChild(h("p", { class: "stale", role: "note" }, "The code changed since this run: these figures describe the code as it was then."));
  }
  if (input.comparison) {
    root.appendChild(comparisonSection(input.comparison));
    return;
  }
  if (!report) {
    // a measure run has no report: its distribution is all it has, and all it needs
    if (!input.measure) root.appendChild(h("p", { class: "empty" }, "No report for this run."));
  } else {
    root.appendChild(headline(report));
    const distortion = distortionSection(report);
    if (distortion) root.appendChild(distortion);
  }
  if (timeline?.breakdown) root.appendChild(breakdownSection(timeline, report));
  if (report) root.appendChild(startupSection(report));
  if (input.measure) root.appendChild(measureSection(input.measure));
  if (report) root.appendChild(findingsSection(report, input));
  const notes = [...(report?.notes ?? []), ...(timeline?.notes ?? [])];
  if (notes.length) {
    root.appendChild(h("section", { class: "notes", "aria-label": "Notes" }, h("h3", {}, "Not observed, limits"), listOf(notes)));
  }
}

function listOf(items: string[]): HTMLElement {
  const ul = h("ul");
  for (const item of items) ul.appendChild(h("li", { class: "name" }, shorten(item, 2000)));
  return ul;
}

/** samples/s as the headline is: of the step without the profiler where it leads (the profiled rate
 * beside it), else of the profiled median step. */
function samplesWords(profiled: number, realMs: number | null, profiledMs: number | null): string {
  if (realMs === null || !(realMs > 0) || profiledMs === null) return `${fmtRate(profiled)} samples/s`;
  return `${fmtRate((profiled * profiledMs) / realMs)} samples/s without the profiler (${fmtRate(profiled)} profiled)`;
}

function headline(report: PanelReport): HTMLElement {
  const per = report.window?.per === "window";
  const steps = report.steps.length;
  // where the step was timed without the profiler, that is the headline; the profiled figure (what every
  // line and share below is of) is said beside it, as on the CLI and the status bar
  const real = per ? null : report.unprofiled?.ms_per_step ?? null;
  const main = per
    ? `No step markers: one window of ${fmtMs(report.window?.ms ?? null)} (figures are per window)`
    : real !== null
      ? `${fmtMs(real)} per step without the profiler`
      : `${fmtMs(report.ms_per_step)} per step`;
  const profiled = `median of ${steps} active step${steps === 1 ? "" : "s"}, each from the previous one's completion to its own`;
  const detail = per ? "" : real !== null
    ? `median of ${report.unprofiled?.passes} passes after the window, same process; profiled: ${fmtMs(report.ms_per_step)} per step (${profiled}), which the lines and shares below are of`
    : profiled;
  return h(
    "section",
    { class: "headline", "aria-label": "Headline" },
    h("p", { class: "big" }, main),
    detail ? h("p", { class: "hint" }, detail) : null,
    report.samples_per_s !== null && report.samples_per_s !== undefined
      ? h("p", {}, samplesWords(report.samples_per_s, real, report.ms_per_step))
      : null,
    h("p", { class: "machine name" }, `Measured on ${shorten(machineLabel(report.machine), 200)}`),
    report.gpu.observed ? null : h("p", { class: "hint name" }, shorten(report.gpu.reason ?? "GPU time was not observed", 500)),
  );
}

function distortionSection(report: PanelReport): HTMLElement | null {
  // the server's words: whether the ratio is the profiler's cost or the steps' own variation is its call
  if (typeof report.distortion_words !== "string") return null;
  return h(
    "section",
    { class: "distortion", "aria-label": "Profiler distortion" },
    h("h3", {}, "Outside the profiler"),
    h("p", {}, shorten(report.distortion_words, 600)),
  );
}

function breakdownSection(timeline: TimelineDoc, report: PanelReport | null): HTMLElement {
  const b = timeline.breakdown!;
  const gpu = timeline.window.gpu_observed;
  const parts = b.parts.filter((p) => gpu || (p !== "gpu_busy" && p !== "copies"));
  const labels = partLabels(gpu);
  const section = h("section", { class: "breakdown", "aria-label": "Where each step's time went" });
  section.appendChild(h("h3", {}, timeline.window.per === "window" ? "Where the window's time went" : "Where each step's time went"));
  section.appendChild(
    h(
      "p",
      { class: "hint" },
      "Each moment of a step counts once, in the first part that holds then: ",
      gpu ? "GPU busy, then copies, then, while the GPU does neither, batch read, host waits, CPU work; the rest had nothing recorded." : "batch read, host waits, recorded CPU work; the rest had nothing recorded (GPU time was not observed).",
    ),
  );
  const legend = h("ul", { class: "legend", "aria-hidden": "true" });
  for (const p of parts) legend.appendChild(h("li", {}, h("span", { class: `swatch part-${p}` }), labels[p] ?? p));
  section.appendChild(legend);
  const steps = b.steps;
  const longest = Math.max(...steps.map((s) => s.ms), 1e-9);
  const list = h("ol", { class: "bars" });
  const total: Record<string, number> = {};
  let totalMs = 0;
  for (const s of steps) {
    totalMs += s.ms;
    for (const p of parts) total[p] = (total[p] ?? 0) + (s.parts[p] ?? 0);
  }
  if (steps.length > 1) list.appendChild(bar("all steps (mean)", totalMs / steps.length, longest, Object.fromEntries(parts.map((p) => [p, total[p] / steps.length])), parts, labels));
  for (const s of steps.slice(0, MAX_BARS)) list.appendChild(bar(s.name, s.ms, longest, s.parts, parts, labels));
  section.appendChild(list);
  if (steps.length > MAX_BARS) section.appendChild(h("p", { class: "hint" }, `The first ${MAX_BARS} of ${steps.length} steps are shown; the steps table lists every one.`));
  if (report && report.ms_per_step !== null && timeline.window.per === "step") {
    const said = report.unprofiled?.ms_per_step != null
      ? `These are the profiled steps (median ${fmtMs(report.ms_per_step)}; the headline is the step without the profiler)`
      : `The headline is the median step (${fmtMs(report.ms_per_step)})`;
    section.appendChild(h("p", { class: "hint" }, `${said}; the first bar is the mean of the steps shown below it.`));
  }
  return section;
}

function bar(name: string, ms: number, longest: number, values: Record<string, number | null>, parts: string[], labels: Record<string, string>): HTMLElement {
  const words = parts
    .filter((p) => (values[p] ?? 0) > 0)
    .map((p) => `${labels[p] ?? p} ${fmtMs(values[p])} (${fmtPercent(values[p] ?? 0, ms)})`);
  const track = h("div", { class: "bar", role: "img", "aria-label": `${name}: ${fmtMs(ms)}; ${words.join("; ")}`, title: words.join("\n") });
  track.style.width = `${Math.max(0.5, (100 * ms) / longest)}%`;
  let used = 0;
  for (const p of parts) {
    const v = values[p] ?? 0;
    if (!(v > 0) || !(ms > 0)) continue;
    const share = Math.min(100 - used, (100 * v) / ms); // never above the step
    used += share;
    const seg = h("span", { class: `segment part-${p}` });
    seg.style.width = `${share}%`;
    track.appendChild(seg);
  }
  return h("li", {}, h("span", { class: "bar-label name" }, shorten(name, 80)), h("span", { class: "bar-ms" }, fmtMs(ms)), h("div", { class: "bar-track" }, track));
}

function startupSection(report: PanelReport): HTMLElement {
  const s = report.startup;
  const section = h("section", { class: "startup", "aria-label": "Start-up" }, h("h3", {}, "Start-up, apart from the window"));
  if (s.to_first_step_ms === null && !s.first_steps_ms.length) {
    section.appendChild(h("p", { class: "hint" }, "Not recorded in this trace."));
    return section;
  }
  if (s.to_first_step_ms !== null) section.appendChild(h("p", {}, `${fmtMs(s.to_first_step_ms)} from the program's start to its first step.`));
  if (s.first_steps_ms.length) {
    section.appendChild(h("p", {}, `Steps before the window (waited and warmed up): ${s.first_steps_ms.map((v) => fmtMs(v)).join(", ")}.`));
  }
  return section;
}

function findingsSection(report: PanelReport, input: OverviewInput): HTMLElement {
  const section = h("section", { class: "findings", "aria-label": "Findings" }, h("h3", {}, `Findings (${report.findings.length})`));
  if (!report.findings.length) {
    section.appendChild(h("p", { class: "hint" }, "No finding: nothing in this window matched a pattern worth a next check."));
    return section;
  }
  const list = h("ol", { class: "finding-list" });
  for (const f of report.findings) {
    const fileId = input.fileIds.of(f.file, f.file_id ?? null);
    const where = f.file && f.line ? `${shorten(fileId && input.timeline?.files[fileId] ? input.timeline.files[fileId] : baseName(f.file), 120)}:${f.line}` : null;
    let link: HTMLElement | null = null;
    if (where && fileId && f.line) {
      const line = f.line;
      link = h("button", { type: "button", class: "link", title: `Open ${where}` }, where);
      link.addEventListener("click", () => input.onOpen(fileId, line));
    } else if (where) {
      link = h("span", { class: "muted" }, where);
    }
    list.appendChild(
      h(
        "li",
        { class: "finding" },
        h("p", {}, h("span", { class: "kind" }, shorten(f.kind, 60)), " ", link),
        h("p", { class: "name" }, shorten(f.observation, 3000)),
        h("p", {}, h("strong", {}, "Hypothesis: "), shorten(f.hypothesis, 3000)),
        h("p", {}, h("strong", {}, "Next check: "), shorten(f.next_check, 3000)),
      ),
    );
  }
  section.appendChild(list);
  return section;
}

function baseName(path: string): string {
  const parts = path.replace(/\\/g, "/").split("/");
  return parts.slice(-2).join("/");
}

function measureSection(m: MeasureResult): HTMLElement {
  const section = h("section", { class: "measure", "aria-label": "Measured without the profiler" }, h("h3", {}, "Measured without the profiler"));
  section.appendChild(h("p", { class: "big" }, `${fmtMs(m.median_ms)} per step`));
  section.appendChild(h("p", { class: "hint" }, "median of every measured pass, each step timed completion to completion without the profiler"));
  const facts = h("dl", { class: "facts" });
  for (const [label, value] of measureFacts(m)) facts.appendChild(h("div", {}, h("dt", {}, label), h("dd", {}, value)));
  section.appendChild(facts);
  section.appendChild(h("p", { class: m.noisy ? "stale noise" : "hint noise" }, noiseWords(m)));
  if (typeof m.pace_words === "string") section.appendChild(h("p", { class: "stale pace" }, shorten(m.pace_words, 400)));
  section.appendChild(h("p", { class: "machine name" }, `Measured on ${shorten(machineLabel(m.machine), 200)}`));
  section.appendChild(stripPlot(m));
  const verdict = comparisonWords(m);
  if (verdict) {
    section.appendChild(h("p", { class: "verdict name" }, shorten(verdict, 600)));
    if (m.values_match === false) section.appendChild(h("p", { class: "stale" }, "The values (the loss, or the value compared) differ between the runs: the change altered the results."));
  }
  if (m.tried) section.appendChild(triedSection(m.tried));
  return section;
}

/** A try run's change: its title, the server's words for its verdict, and its diff (each line as
 * text, added and removed lines marked). */
function triedSection(tried: NonNullable<MeasureResult["tried"]>): HTMLElement {
  const section = h("section", { class: "tried", "aria-label": "The change tried" }, h("h3", {}, `The change tried: ${shorten(tried.title, 200)}`));
  section.appendChild(h("p", { class: "name tried-words" }, shorten(tried.words, 800)));
  const pre = h("pre", { class: "diff" });
  for (const line of tried.diff.split("\n").slice(0, 400)) {
    const cls = line.startsWith("+") && !line.startsWith("+++") ? "added" : line.startsWith("-") && !line.startsWith("---") ? "removed" : "";
    pre.appendChild(h("span", cls ? { class: cls } : {}, `${shorten(line, 400)}\n`));
  }
  section.appendChild(pre);
  return section;
}

/** Every pass as a dot, one row per process (warm-ups apart, the compared run below), and a
 * histogram of the measured passes (and of the compared run's) on the same axis. */
function stripPlot(m: MeasureResult): HTMLElement {
  // the axis spans the measured passes (and the compared ones); warm-up passes beyond it sit at its edge
  const values = [...m.raw_ms, ...(m.compare_raw_ms ?? [])];
  const pad = (Math.max(...values) - Math.min(...values)) * 0.08 || Math.abs(m.median_ms) * 0.05 || 1;
  const lo = Math.min(...values) - pad;
  const hi = Math.max(...values) + pad;
  const rows = stripRows(m);
  const W = 560;
  const rowH = 26;
  const histH = 30;
  const H = 8 + rows.length * rowH + histH + 22;
  const x = (v: number) => 80 + ((Math.min(hi, Math.max(lo, v)) - lo) / (hi - lo)) * (W - 100);
  const measured = rows.filter((r) => r.kind === "measured").reduce((n, r) => n + r.values.length, 0);
  const plot = svg("svg", {
    viewBox: `0 0 ${W} ${H}`, class: "strip", role: "img",
    "aria-label": `Distribution of ${measured} measured passes, ${m.warmup_ms.length} warm-up passes shown apart` +
      (m.compare_raw_ms?.length ? `, and the baseline's ${m.compare_raw_ms.length} passes` : ""),
  });
  rows.forEach((row, r) => {
    const y = 14 + r * rowH;
    plot.appendChild(svg("text", { x: 0, y: y + 4, class: "axis" }, row.label));
    const cls = row.kind === "warm" ? "dot warm" : row.kind === "before" ? "dot before" : "dot";
    row.values.forEach((v, k) => {
      const beyond = v > hi || v < lo;
      plot.appendChild(svg("circle", { cx: x(v).toFixed(1), cy: (y + ((k % 5) - 2) * 2.5).toFixed(1), r: 3, class: cls + (beyond ? " beyond" : ""), "data-ms": String(v) }));
    });
  });
  const firstMeasured = rows.findIndex((r) => r.kind === "measured");
  const lastMeasured = rows.length - 1 - [...rows].reverse().findIndex((r) => r.kind === "measured");
  plot.appendChild(svg("line", { x1: x(m.median_ms).toFixed(1), x2: x(m.median_ms).toFixed(1), y1: 14 + firstMeasured * rowH - 10, y2: 14 + lastMeasured * rowH + 10, class: "median" }));
  const base = 8 + rows.length * rowH + histH;
  const bins = 16;
  const mine = histogram(m.raw_ms, bins, lo, hi);
  const theirs = m.compare_raw_ms?.length ? histogram(m.compare_raw_ms, bins, lo, hi) : null;
  const most = Math.max(...mine, ...(theirs ?? []), 1);
  const binW = (W - 100) / bins;
  const bars = (counts: number[], cls: string, offset: number, width: number) => counts.forEach((count, k) => {
    const bh = (count / most) * (histH - 4);
    if (count) plot.appendChild(svg("rect", { x: (80 + k * binW + offset).toFixed(1), y: (base - bh).toFixed(1), width: width.toFixed(1), height: bh.toFixed(1), class: cls }));
  });
  if (theirs) {
    bars(theirs, "hist before", 0, binW / 2 - 0.5);
    bars(mine, "hist", binW / 2, binW / 2 - 0.5);
  } else {
    bars(mine, "hist", 0, binW - 1);
  }
  plot.appendChild(svg("text", { x: 80, y: H - 6, class: "axis" }, fmtMs(lo)));
  plot.appendChild(svg("text", { x: W - 4, y: H - 6, "text-anchor": "end", class: "axis" }, fmtMs(hi)));
  const figure = h("figure", { class: "distribution" }, plot);
  const beyond = m.warmup_ms.filter((v) => v > hi || v < lo);
  if (beyond.length) {
    // drawn at the axis's edge (hollow): their values said here
    figure.appendChild(h("figcaption", { class: "hint" }, `Warm-up passes beyond the axis, at its edge: ${beyond.slice(0, 8).map((v) => fmtMs(v)).join(", ")}${beyond.length > 8 ? " …" : ""}`));
  }
  return figure;
}

/** Two profile runs statement by statement: each run's headline, the statements in both runs' code (a
 * sortable table: place and wall time in each, the change, the ratio), those in one run's code only,
 * and the server's notes. Every string is text (textContent), whatever the source holds. */
function comparisonSection(c: RunComparison): HTMLElement {
  const section = h("section", { class: "comparison", "aria-label": "Two runs, statement by statement" });
  section.appendChild(h("h3", {}, "Two runs, statement by statement"));
  section.appendChild(h("p", { class: "run-a name" }, shorten(runWords("A", c.a), 600)));
  section.appendChild(h("p", { class: "run-b name" }, shorten(runWords("B", c.b), 600)));
  section.appendChild(h("p", { class: "hint" }, matchWords(c)));
  const { both, onlyA, onlyB } = statementRows(c);
  const ms = (v: number | null) => (v === null ? "–" : fmtMs(v));
  const columns: Column<StatementRow>[] = [
    { key: "statement", label: "Statement", numeric: false, value: (r) => r.statement },
    { key: "a", label: "A", numeric: false, value: (r) => r.a, help: "where the statement is in run A's code" },
    { key: "b", label: "B", numeric: false, value: (r) => r.b, help: "where the statement is in run B's code" },
    { key: "aMs", label: "A ms", numeric: true, value: (r) => r.aMs, format: (r) => ms(r.aMs), help: "wall time per step in run A (–: not measured)" },
    { key: "bMs", label: "B ms", numeric: true, value: (r) => r.bMs, format: (r) => ms(r.bMs), help: "wall time per step in run B (–: not measured)" },
    { key: "change", label: "B − A", numeric: true, value: (r) => r.change, format: changeWords },
    { key: "ratio", label: "B ÷ A", numeric: true, value: (r) => r.ratio, format: ratioWords },
  ];
  const table = new DataTable<StatementRow>({
    id: "statements",
    caption: "Statements in both runs",
    columns,
    rows: both,
    sortBy: "bMs",
    note: "–: not measured in that run (not reached).",
    source: () => null,
    onOpen: () => undefined,
  });
  section.appendChild(table.root);
  for (const [title, rows, side, cls] of [
    ["Only in A's code (changed or removed since)", onlyA, "a", "only-a"],
    ["Only in B's code (new, or changed since A)", onlyB, "b", "only-b"],
  ] as const) {
    if (!rows.length) continue;
    section.appendChild(h("h4", {}, title));
    const list = h("ul", { class: `one-side ${cls}` });
    for (const r of rows.slice(0, 500)) {
      const where = side === "a" ? r.a : r.b;
      const figure = side === "a" ? r.aMs : r.bMs;
      list.appendChild(h("li", {}, h("code", { class: "name" }, shorten(r.statement, 300)), ` ${shorten(where, 200)} · ${ms(figure)}`));
    }
    section.appendChild(list);
  }
  if (c.notes.length) section.appendChild(h("section", { class: "notes", "aria-label": "Notes" }, h("h3", {}, "Notes"), listOf(c.notes)));
  return section;
}
