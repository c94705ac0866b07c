import assert from "node:assert/strict";
import { test } from "node:test";
import { palette } from "../src/theme";
import { TimelineModel } from "../src/timeline-doc";
import { CATEGORY_LABELS, CATEGORY_ONE, legendEntries } from "../src/timeline-legend";
import { findMatches } from "../src/timeline-search";
import { smallDoc } from "./fixtures";

test("a search matches names and the labels a person reads, case-insensitively, by start", () => {
  const model = new TimelineModel(smallDoc());
  const aten = findMatches(model, "ATEN::")!;
  assert.deepEqual([...aten.order], [1, 2]); // mm [10, 30], add [35, 45]
  assert.deepEqual([...aten.isMatch], [0, 1, 1, 0, 0, 0]);
  assert.deepEqual(aten.byRow.map((r) => [...r]), [[], [0, 1], []]);
  // a line region is found by its line, as it is shown (train.py:3), not by its ss: name only
  assert.deepEqual([...findMatches(model, "train.py:3")!.order], [0, 3]);
  assert.equal(findMatches(model, "no such")!.count, 0);
  assert.equal(findMatches(model, "  "), null); // blank: nothing highlighted
});

test("going from match to match wraps around and starts from the view's middle", () => {
  const m = findMatches(new TimelineModel(smallDoc()), "mm")!; // aten::mm, gemm ×2
  assert.deepEqual([...m.order], [1, 4, 5]); // by start: 10, 20, 50
  assert.equal(m.step(-1, 1, 30), 2); // the first starting at or after 30
  assert.equal(m.step(-1, -1, 30), 1); // the last before it
  assert.equal(m.step(2, 1, 0), 0); // wraps
  assert.equal(m.step(0, -1, 0), 2);
  assert.equal(m.step(-1, 1, 99), 0);
  assert.equal(m.firstEndingFrom(2, 41), 1); // the GPU row: gemm [20, 40] ends before 41, the merged one not
});

test("the legend lists the categories drawn, in the drawing's colours and words", () => {
  const model = new TimelineModel(smallDoc());
  for (const theme of ["dark", "light"] as const) {
    const entries = legendEntries(model, theme);
    assert.deepEqual(entries.map((e) => e.category), ["region", "operator", "kernel"]);
    for (const e of entries) assert.equal(e.color, palette(theme)[e.category]);
  }
  assert.deepEqual(legendEntries(model, "dark").map((e) => e.label), ["line region", "operator", "kernel"]);
  // every category the document may hold has its words and a fill of its own
  for (const c of smallDoc().categories) {
    assert.ok(CATEGORY_ONE[c] && CATEGORY_LABELS[c] && palette("dark")[c] && palette("light")[c], c);
  }
});
