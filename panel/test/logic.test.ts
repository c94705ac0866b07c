import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { binRow, inView, ITEM, Level, WIDE } from "../src/binning";
import { fmtBytes, fmtMs, fmtPercent, fmtUs } from "../src/format";
import { contentSecurityPolicy, escapeHtml, makeNonce, panelHtml } from "../src/html";
import { mergeIntervals, selectionTotals, unionLength } from "../src/intervals";
import { dimsText, inputShapesText, NO_TENSOR_INPUT, recordedInputsText } from "../src/inputs";
import { histogram } from "../src/measure";
import { MARK, marked, redactionNote } from "../src/redaction";
import { FileIds, fusedWith, memoryRecorded, reportProblem, type LineRow } from "../src/report";
import { filterRows, placeText, sortRows, type Column } from "../src/table-logic";
import { BACKGROUND, contrast, palette, textOn } from "../src/theme";
import { awaitsSpans, joinTimeline, parseTimeline, splitTimeline, TimelineModel, type Row, type TimelineDoc } from "../src/timeline-doc";
import { smallDoc } from "./fixtures";

test("unions never count a moment twice", () => {
  assert.deepEqual(mergeIntervals([[5, 8], [0, 2], [1, 3], [8, 9], [4, 4]]), [[0, 3], [5, 9]]);
  assert.equal(unionLength([[0, 10], [2, 5], [3, 4], [9, 12]]), 12);
});

test("selection totals are unions per category, over every track", () => {
  const model = new TimelineModel(smallDoc());
  const all = selectionTotals(model, 0, 100);
  assert.equal(all.byCategory.get("region"), 80); // [0, 50] and [60, 90]
  assert.equal(all.byCategory.get("operator"), 30); // mm and add, inside the region: counted in their own category
  assert.equal(all.hostBusy, 80); // nested operators add nothing to the thread's busy time
  // the kernels: [20, 40] plain, [50, 60] merged with 4 µs busy, counted pro rata
  assert.equal(all.byCategory.get("kernel"), 24);
  assert.equal(all.merged, 1);
  const part = selectionTotals(model, 25, 40);
  assert.equal(part.duration, 15);
  assert.equal(part.byCategory.get("operator"), 10); // mm's [25, 30] and add's [35, 40]
  assert.equal(part.byCategory.get("region"), 15);
  assert.equal(part.gpuBusy, 15);
});

test("binning draws at most about one rectangle per pixel column", () => {
  const n = 100000;
  const starts = new Float64Array(n);
  const ends = new Float64Array(n);
  const spans = new Int32Array(n);
  const category = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    starts[i] = i * 10;
    ends[i] = i * 10 + (i % 7 === 0 ? 6 : 2);
    spans[i] = i;
    category[i] = i % 7 === 0 ? 8 : 3;
  }
  const row: Row = { track: 0, depth: 0, spans, starts, ends };
  const rects: [number, number, number, boolean][] = [];
  const visited = binRow(row, category, 0, n * 10, 1000, (x0, x1, c, _s, several) => rects.push([x0, x1, c, several]));
  assert.equal(visited, n);
  assert.ok(rects.length <= 1000, `${rects.length} rectangles`);
  assert.ok(rects.every(([, , , several]) => several));
  // every column holds 14-15 short spans and 2 long ones (6 µs vs 2 µs): the operators win 12×2 > 2×6
  assert.ok(rects.every(([, , c]) => c === 3));
  // ... so the row's thousand columns, all of one category and none empty, are one rectangle
  assert.deepEqual(rects.map(([x0, x1]) => [x0, x1]), [[0, 1000]]);
  // zoomed in, each span is its own rectangle, with its own category
  const close: number[] = [];
  binRow(row, category, 0, 100, 1000, (_x0, _x1, c) => close.push(c));
  assert.deepEqual(close, [8, 3, 3, 3, 3, 3, 3, 8, 3, 3, 3]);
});

/** A row of `n` spans with gaps of several sizes, categories cycling through three. */
function gappyRow(n: number): { row: Row; category: Uint8Array } {
  const starts = new Float64Array(n);
  const ends = new Float64Array(n);
  const spans = new Int32Array(n);
  const category = new Uint8Array(n);
  let t = 0;
  for (let i = 0; i < n; i++) {
    t += i % 97 === 0 ? 400 : i % 13 === 0 ? 25 : 1;
    starts[i] = t;
    t += i % 211 === 0 ? 300 : 0.5 + (i % 5) * 0.3;
    ends[i] = t;
    spans[i] = i;
    category[i] = Math.floor(i / 50) % 3;
  }
  return { row: { track: 0, depth: 0, spans, starts, ends }, category };
}

test("neighbouring columns of one category are one rectangle, and cover the columns they covered apart", () => {
  const { row, category } = gappyRow(20000);
  const t1 = row.ends[row.ends.length - 1];
  const width = 1500;
  const rects: [number, number, number, boolean][] = [];
  binRow(row, category, 0, t1, width, (x0, x1, c, _s, several) => rects.push([x0, x1, c, several]));
  // the columns each span would fill on its own: its start's column, or the pixels it spans
  const expected = new Set<number>();
  const scale = width / t1;
  for (let k = 0; k < row.starts.length; k++) {
    const x0 = row.starts[k] * scale;
    const x1 = row.ends[k] * scale;
    if (x1 - x0 >= 1) for (let p = Math.max(0, Math.floor(x0)); p < Math.min(width, Math.ceil(x1)); p++) expected.add(p);
    else expected.add(Math.floor(Math.max(0, Math.min(width - 1, x0))));
  }
  const covered = new Set<number>();
  for (const [x0, x1] of rects) for (let p = Math.max(0, Math.floor(x0)); p < Math.min(width, Math.ceil(x1)); p++) covered.add(p);
  assert.deepEqual([...covered].sort((a, b) => a - b), [...expected].sort((a, b) => a - b));
  // fewer rectangles than columns covered: runs of one category are merged
  assert.ok(rects.length < covered.size * 0.8, `${rects.length} rectangles for ${covered.size} columns`);
  // they come in order, and two column runs never share a column
  for (let k = 1; k < rects.length; k++) {
    assert.ok(rects[k][0] >= rects[k - 1][0], `rectangle ${k} out of order`);
    if (rects[k][3] && rects[k - 1][3]) assert.ok(rects[k][0] >= rects[k - 1][1], `runs ${k - 1} and ${k} share a column`);
  }
});

test("a zoom level keeps every span of its extent, in order, and counts the spans in view exactly", () => {
  const { row, category } = gappyRow(5000);
  const t1 = row.ends[row.ends.length - 1];
  const n = row.spans.length;
  const start = new Float64Array(n);
  const end = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    start[row.spans[k]] = row.starts[k];
    end[row.spans[k]] = row.ends[k];
  }
  const source = { rows: [row], category, start, end } as unknown as TimelineModel;
  const binUs = t1 / 700;
  const level = new Level(source, binUs, 0, 1000);
  const items = level.row(0);
  assert.equal(level.row(0), items); // binned once
  for (let k = ITEM; k < items.length; k += ITEM) assert.ok(items[k + 1] >= items[k + 1 - ITEM], "items in order of their ends");
  // every span lies in an item of its category or in a column run that holds it
  let j = 0;
  for (let k = 0; k < n; k++) {
    while (j < items.length && items[j + 1] < row.starts[k]) j += ITEM;
    assert.ok(j < items.length && items[j] <= row.starts[k] + 1e-9, `span ${k} at ${row.starts[k]} is drawn`);
    if (items[j + 4] === WIDE) assert.equal(items[j + 3], row.spans[k]);
  }
  for (const [a, b] of [[0, t1], [100, 900], [t1 / 3, t1 / 2], [t1 + 1, t1 + 5]]) {
    let brute = 0;
    for (let k = 0; k < n; k++) if (row.ends[k] >= a && row.starts[k] <= b) brute++;
    assert.equal(inView(row, a, b), brute);
  }
});

test("a timeline document with an index out of place is refused", () => {
  assert.equal(parseTimeline(smallDoc()).ok, true);
  const bad = smallDoc();
  bad.spans.name[2] = 99;
  const parsed = parseTimeline(bad);
  assert.ok(!parsed.ok && /spans.name\[2\]/.test(parsed.reason));
  const short = smallDoc();
  short.spans.depth.pop();
  assert.equal(parseTimeline(short).ok, false);
  const newer = { ...smallDoc(), schema_version: 2 };
  const refused = parseTimeline(newer);
  assert.ok(!refused.ok && /version 2/.test(refused.reason));
  const deep = smallDoc();
  deep.spans.depth[1] = 5;
  assert.equal(parseTimeline(deep).ok, false);
  const file = smallDoc();
  file.lines.file[0] = "f9";
  assert.equal(parseTimeline(file).ok, false);
});

test("a timeline split as the host posts it reads, joined again, as the same timeline; splitting lets nothing bad pass", () => {
  const { rest, spans } = splitTimeline(smallDoc())!;
  assert.ok(awaitsSpans(rest) && !awaitsSpans(smallDoc()));
  // what the webview gets: structured clones, as VS Code's webview side posts each message
  const joined = joinTimeline(structuredClone(rest), structuredClone(spans)) as TimelineDoc;
  assert.ok(joined.spans.start_us instanceof Float64Array && joined.spans.track instanceof Uint8Array);
  assert.ok(joined.spans.line instanceof Int16Array); // -1: none
  const check = parseTimeline(joined);
  assert.ok(check.ok, check.ok ? "" : check.reason);
  const plain = new TimelineModel(smallDoc());
  const model = new TimelineModel(joined);
  assert.deepEqual(model.rows, plain.rows);
  const every = [0, 1, 2, 3, 4, 5];
  assert.deepEqual(every.map((i) => [model.label(i), model.source(i)]), every.map((i) => [plain.label(i), plain.source(i)]));
  assert.deepEqual(selectionTotals(model, 25, 40), selectionTotals(plain, 25, 40));
  // a value the check refuses is refused after the split too: not a number, not an integer, not finite
  const refused = (edit: (d: ReturnType<typeof smallDoc>) => void, what: RegExp) => {
    const doc = smallDoc();
    edit(doc);
    const parts = splitTimeline(doc)!;
    const parsed = parseTimeline(joinTimeline(structuredClone(parts.rest), structuredClone(parts.spans)));
    assert.ok(!parsed.ok && what.test(parsed.reason), parsed.ok ? "accepted" : parsed.reason);
  };
  refused((d) => { (d.spans.start_us as unknown[])[1] = null; }, /spans.start_us\[1\]/);
  refused((d) => { d.spans.track[2] = 0.5; }, /spans.track\[2\]/);
  refused((d) => { d.spans.dur_us[0] = Number.NaN; }, /spans.dur_us\[0\]/);
  refused((d) => { d.spans.line[3] = 2 ** 40; }, /spans.line\[3\]/);
  refused((d) => { d.spans.name[0] = -1; }, /spans.name\[0\]/);
  // a document without columns is not split: posted as it is, for the webview to refuse
  assert.equal(splitTimeline({ schema_version: 1 } as unknown as TimelineDoc), null);
});

test("the model finds the span under a moment, row by row", () => {
  const model = new TimelineModel(smallDoc());
  assert.equal(model.rows.length, 3);
  assert.equal(model.spanAt(0, 5), 0);
  assert.equal(model.spanAt(0, 55), -1);
  assert.equal(model.spanAt(0, 57, 6), 3); // within the slack of the next span
  assert.equal(model.spanAt(1, 36), 2);
  assert.deepEqual(model.source(1), { fileId: "f0", line: 3, path: "train.py" });
  assert.equal(model.source(5), null);
});

test("a Stepscope region reads as its line, never as its label; other names as written", () => {
  const doc = smallDoc();
  doc.names.push("ss:f0:7:next", "ss:f0:9", "ss:optimizer-closure");
  doc.spans.name[3] = 4; // the second region: a loop header's batch read
  doc.spans.name[4] = 5; // a region whose line is not known (line -1 below)
  doc.spans.line[4] = -1;
  doc.spans.name[5] = 6; // the closure an optimizer's step ran
  doc.spans.line[5] = -1;
  const model = new TimelineModel(doc);
  assert.equal(model.label(0), "train.py:3");
  assert.equal(model.label(3), "train.py:3 (batch read)"); // its line is the header's: lines[0]
  assert.equal(model.label(4), "line 9");
  assert.equal(model.label(5), "optimizer closure (the code optimizer.step ran)");
  assert.equal(model.label(1), "aten::mm");
});

test("tables sort numbers and names, nulls last, and filter on every word", () => {
  type R = { name: string; ms: number | null };
  const rows: R[] = [
    { name: "ProfilerStep#10", ms: 3 },
    { name: "ProfilerStep#9", ms: null },
    { name: "ProfilerStep#2", ms: 7 },
  ];
  const ms: Column<R> = { key: "ms", label: "ms", numeric: true, value: (r) => r.ms };
  const name: Column<R> = { key: "name", label: "name", numeric: false, value: (r) => r.name };
  assert.deepEqual(sortRows(rows, ms, "descending").map((r) => r.ms), [7, 3, null]);
  assert.deepEqual(sortRows(rows, ms, "ascending").map((r) => r.ms), [3, 7, null]);
  assert.deepEqual(sortRows(rows, name, "ascending").map((r) => r.name), ["ProfilerStep#2", "ProfilerStep#9", "ProfilerStep#10"]);
  assert.deepEqual(filterRows(rows, [name], "step #1").map((r) => r.name), ["ProfilerStep#10"]);
  assert.equal(filterRows(rows, [name], "  ").length, 3);
});

test("report paths find their file ids through the timeline's table", () => {
  const ids = new FileIds({ f0: "train.py", f1: "pkg/train.py" });
  assert.equal(ids.of("/home/u/ws/pkg/train.py"), "f1");
  assert.equal(ids.of("/home/u/ws/train.py"), "f0");
  assert.equal(ids.of("C:\\ws\\pkg\\train.py"), "f1");
  assert.equal(ids.of("/home/u/ws/mytrain.py"), null);
  assert.equal(ids.of(null), null);
  // the report's own table: file_id 1 is pkg/train.py relative to the run's root, whatever the absolute path
  const both = new FileIds({ f0: "train.py", f1: "pkg/train.py" }, [{ path: "train.py", in_root: true }, { path: "pkg/train.py", in_root: true }, { path: "/elsewhere/x.py", in_root: false }]);
  assert.equal(both.of("/moved/somewhere/else.py", 1), "f1");
  assert.equal(both.of("/elsewhere/x.py", 2), null);
});

test("numbers read as a person writes them", () => {
  assert.equal(fmtMs(12.345), "12.3 ms");
  assert.equal(fmtMs(0.0452), "45.2 µs");
  assert.equal(fmtMs(null), "n/o");
  assert.equal(fmtUs(2500000), "2.50 s");
  assert.equal(fmtPercent(110, 100), "100%"); // never above 100%
  assert.deepEqual(histogram([1, 2, 2, 3, 10], 3, 1, 10), [4, 0, 1]);
});

test("the page carries a strict policy with a fresh nonce and escapes what it is given", () => {
  const nonce = makeNonce();
  assert.match(nonce, /^[A-Za-z0-9_-]{32}$/);
  assert.notEqual(nonce, makeNonce());
  const csp = contentSecurityPolicy("https://file+.vscode-resource.vscode-cdn.net", nonce);
  assert.match(csp, /^default-src 'none'; script-src 'nonce-/);
  assert.doesNotMatch(csp, /unsafe|\*(?!\.)/);
  const page = panelHtml({ cspSource: "vscode-resource:", nonce, scripts: ['x.js"><script>alert(1)</script>'], style: "s.css", title: "<b>run</b>" });
  assert.ok(!page.includes("<script>alert(1)"));
  assert.ok(page.includes("&#60;b&#62;run&#60;/b&#62;"));
  assert.equal((page.match(/<script /g) ?? []).length, 1);
  assert.throws(() => contentSecurityPolicy("x", "short"));
  assert.throws(() => contentSecurityPolicy("x; script-src *", nonce));
  // what VS Code for the web gives is taken; a quoted keyword other than 'self' is not
  assert.match(contentSecurityPolicy("'self' https://*.vscode-cdn.net", nonce), /style-src 'self' https:\/\/\*\.vscode-cdn\.net;/);
  assert.throws(() => contentSecurityPolicy("'unsafe-inline' https://x", nonce));
  assert.throws(() => contentSecurityPolicy("'unsafe-eval'", nonce));
  assert.equal(escapeHtml(`"'<&>`), "&#34;&#39;&#60;&#38;&#62;");
});

test("every colour keeps its contrast in light and dark themes", () => {
  for (const kind of ["light", "dark"] as const) {
    for (const [name, fill] of Object.entries(palette(kind))) {
      assert.ok(contrast(fill, BACKGROUND[kind]) >= 3, `${kind} ${name}: ${contrast(fill, BACKGROUND[kind]).toFixed(2)}:1 against the background`);
      assert.ok(contrast(fill, textOn(fill)) >= 4.5, `${kind} ${name}: text on it`);
    }
  }
});

test("the stylesheet's fallback colours keep text at 4.5:1 in both themes", () => {
  // the bundled tests run from .cache/panel-tests/
  const css = readFileSync(new URL("../../panel/src/panel.css", import.meta.url), "utf8");
  const blocks = [css.slice(css.indexOf(":root {"), css.indexOf("@media (prefers-color-scheme: light)")),
    css.slice(css.indexOf("@media (prefers-color-scheme: light)"), css.indexOf("body.vscode-light {"))];
  for (const block of blocks) {
    const value = (name: string) => new RegExp(`--ss-${name}: var\\(--vscode-[\\w-]+, (#[0-9a-f]{6})\\)`, "i").exec(block)?.[1];
    const pairs: [string, string][] = [["foreground", "background"], ["muted", "background"], ["accent", "background"],
      ["button-fg", "button-bg"], ["input-fg", "input-bg"], ["error-fg", "error-bg"], ["warning", "background"]];
    for (const [fg, bg] of pairs) {
      const a = value(fg);
      const b = value(bg);
      assert.ok(a && b, `${fg}/${bg} fallbacks present`);
      assert.ok(contrast(a!, b!) >= 4.5, `${fg} on ${bg}: ${contrast(a!, b!).toFixed(2)}:1`);
    }
  }
});

test("the marks of what sharing would change: looked up, worded by kind, never the replacement", () => {
  const marks = { "jane.doe@example.com": ["email"], "/home/jdoe/x.py(3): f": ["path", "user"] };
  assert.equal(redactionNote(marks, "jane.doe@example.com"), "would be redacted as email");
  assert.equal(redactionNote(marks, "/home/jdoe/x.py(3): f"), "would be redacted as path, user");
  assert.equal(redactionNote(marks, "aten::mm"), null);
  assert.equal(redactionNote(marks, "constructor"), null); // an object's own properties only
  assert.equal(redactionNote(undefined, "jane.doe@example.com"), null); // a document made before marks
  assert.equal(marked(marks, "jane.doe@example.com", "jane.doe@exa…"), `${MARK} jane.doe@exa…`);
  assert.equal(marked(marks, "aten::mm"), "aten::mm");
});

test("a document's marks are checked with the rest of it", () => {
  const withMarks = { ...smallDoc(), redactable: { "thread 1": ["host"] } };
  assert.equal(parseTimeline(withMarks).ok, true);
  assert.equal(parseTimeline(smallDoc()).ok, true); // no marks: a document made before them
  for (const bad of [[], "x", { "thread 1": [] }, { "thread 1": ["secret"] }, { "thread 1": "host" }]) {
    const parsed = parseTimeline({ ...smallDoc(), redactable: bad });
    assert.equal(parsed.ok, false, JSON.stringify(bad));
    if (!parsed.ok) assert.match(parsed.reason, /redactable/);
  }
});

test("a line's fused kernels name the other lines as the hover does: runs joined, other files by name", () => {
  const row = (fused: { file: string; line: number }[] | undefined): LineRow => ({
    file: "/ws/model.py", line: 17, precision: "compiled", wall_ms: 1, cpu_self_ms: 1, cpu_total_ms: 1, gpu_ms: 1,
    backward_ms: null, kernels: 2, copies: { h2d: { count: 0, bytes: 0 }, d2h: { count: 0, bytes: 0 }, d2d: { count: 0, bytes: 0 } },
    sync_ms: 0, compiled: fused === undefined ? undefined : { fused_with: fused },
  });
  assert.equal(fusedWith(row(undefined)), null);
  assert.equal(fusedWith(row([])), null);
  assert.equal(fusedWith(row([{ file: "/ws/model.py", line: 21 }, { file: "/ws/model.py", line: 20 }])), "lines 20–21");
  assert.equal(fusedWith(row([{ file: "/ws/model.py", line: 16 }, { file: "/ws/model.py", line: 18 },
    { file: "C:\\ws\\train.py", line: 33 }])), "lines 16, 18, train.py:33");
  assert.equal(fusedWith(row([{ file: "/ws/model.py", line: 14 }])), "line 14");
});

test("a report is refused with a reason when its parts are not what the panel reads", () => {
  const report = { lines: [], findings: [], steps: [], machine: {}, gpu: { observed: false, reason: null }, startup: {} };
  assert.equal(reportProblem(report), null);
  assert.equal(reportProblem({ ...report, distortion_words: "without the profiler: 1.60 ms/step" }), null);
  assert.equal(reportProblem({ ...report, distortion_words: { html: "<b>x</b>" } }), "the report's distortion words are not text");
  assert.equal(reportProblem({ ...report, lines: "many" }), "the report has no lines list");
  assert.equal(reportProblem([]), "the report is not an object");
});

test("a place names how many of the calls it holds when other lines make the rest", () => {
  assert.equal(placeText("train.py:22", 60, 68, "calls"), "train.py:22 (60 of 68 calls)");
  assert.equal(placeText("model.py:15", 0.5, 2.25, "launches"), "model.py:15 (0.5 of 2.25 launches)");
  // every call on that line, or a document from before the count was recorded: the place alone
  assert.equal(placeText("train.py:22", 68, 68, "calls"), "train.py:22");
  assert.equal(placeText("train.py:22", undefined, 68, "calls"), "train.py:22");
  assert.equal(placeText(null, 3, 68, "calls"), "");
});

test("bytes read as the hover and the CLI write them (present.bytes_text's cases)", () => {
  const cases: [number | null, string][] = [[0, "0 B"], [512, "512 B"], [1024, "1.00 KiB"], [4 << 20, "4.00 MiB"], [12337664, "11.77 MiB"], [5 * 2 ** 30, "5.00 GiB"], [null, "n/o"]];
  for (const [n, text] of cases) assert.equal(fmtBytes(n), text);
});

test("input shapes read as lists of dims, never as the recorded JSON (present.input_shapes_text's cases)", () => {
  const cases: [unknown, unknown, string][] = [
    [[[256, 512], [512]], ["float", "float"], "[256, 512], [512]"],
    [[[3, 72, 72], [], [], [], [], [], []], ["float", "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", ""], "[3, 72, 72]"],
    [[[], [], []], ["ScalarList", "", ""], ""],
    [[[]], ["float"], "[]"],
    [[[[2, 3], [2, 3]], []], ["TensorList", "Scalar"], "[[2, 3], [2, 3]]"],
    [[[8, 32], []], null, "[8, 32]"],
    [[], [], ""],
    [null, null, ""],
  ];
  for (const [dims, types, text] of cases) assert.equal(inputShapesText(dims, types), text, JSON.stringify(dims));
  assert.equal(dimsText([256, 512]), "[256, 512]");
  // as timeline.json holds them: the trace's `[dims, types]` text
  assert.equal(recordedInputsText('[[[256,512],[1024,512],[1024]],["float","float","float"]]'), "[256, 512], [1024, 512], [1024]");
  assert.equal(recordedInputsText('[[[],[]],["ScalarList",""]]'), NO_TENSOR_INPUT);
  assert.equal(recordedInputsText(null), "not recorded");
  assert.equal(recordedInputsText("[[1,2"), "unreadable");
  assert.equal(recordedInputsText('{"a": 1}'), "unreadable");
});

test("memory is recorded where a line has a figure, 0 included, never where all are null", () => {
  const line = { file: "/w/t.py", line: 3 } as LineRow;
  assert.equal(memoryRecorded([{ ...line, alloc_bytes: null }, line]), false);
  assert.equal(memoryRecorded([{ ...line, alloc_bytes: 0, peak_bytes: 1024 }]), true);
});
