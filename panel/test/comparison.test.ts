// Two profile runs statement by statement: the check of the server's document, the rows of the table
// and of the one-sided lists, and their words.
import assert from "node:assert/strict";
import { test } from "node:test";
import { changeWords, comparisonProblem, matchWords, ratioWords, RunComparison, runWords, statementRows } from "../src/comparison";
import { parseHostMessage } from "../src/messages";

function doc(): RunComparison {
  const side = (line: number, wall_ms: number | null) => ({ file: "/ws/train.py", line, wall_ms });
  return {
    a: { run: "20261201T101500Z-train-aaaa", root: "/ws", ms_per_step: 12.5, unprofiled_ms_per_step: 9.75, steps: 5, per: "step", machine: "CPU only, host ci" },
    b: { run: "20261201T111500Z-train-bbbb", root: "/ws", ms_per_step: 20.25, unprofiled_ms_per_step: null, steps: 5, per: "step", machine: "CPU only, host ci" },
    lines: [
      { a: side(69, 2.522), b: side(71, 5.1), text: "loss = model(x)", match: "code", change_ms: 2.578, ratio: 2.0222 },
      { a: side(72, null), b: side(74, 0.3), text: "opt.step()", match: "code", change_ms: null, ratio: null },
      { a: side(70, 1.0), b: null, text: "y = old(x)", match: null, change_ms: null, ratio: null },
      { a: null, b: side(72, 0.5), text: "y = new(x)", match: null, change_ms: null, ratio: null },
    ],
    notes: ["two profiled runs are not a measurement"],
  };
}

test("statements in both runs are rows with both places; one-sided ones are listed apart", () => {
  const { both, onlyA, onlyB } = statementRows(doc());
  assert.deepEqual(both.map((r) => [r.statement, r.a, r.b, r.aMs, r.bMs]), [
    ["loss = model(x)", "train.py:69", "train.py:71", 2.522, 5.1],
    ["opt.step()", "train.py:72", "train.py:74", null, 0.3],
  ]);
  assert.deepEqual(onlyA.map((r) => [r.statement, r.a]), [["y = old(x)", "train.py:70"]]);
  assert.deepEqual(onlyB.map((r) => [r.statement, r.b]), [["y = new(x)", "train.py:72"]]);
  assert.equal(changeWords(both[0]), "+2.58 ms");
  assert.equal(ratioWords(both[0]), "2.02×");
  assert.equal(changeWords(both[1]), "–");
});

test("each run and the matching are said in words", () => {
  const c = doc();
  assert.equal(runWords("A", c.a), "A · run 20261201T101500Z-train-aaaa · 12.5 ms per step profiled, 9.75 ms without the profiler · 5 steps · CPU only, host ci");
  assert.match(matchWords(c), /matched by their code, so one that moved keeps its row\.$/);
  c.lines[0].match = "number";
  assert.match(matchWords(c), /by line number\.$/);
});

test("a comparison that is not what the server writes is refused with the reason", () => {
  assert.equal(comparisonProblem(doc()), null);
  const bad: [unknown, RegExp][] = [
    [null, /not an object/],
    [{ ...doc(), a: null }, /run A is missing/],
    [{ ...doc(), lines: "x" }, /no list of statements/],
    [{ ...doc(), lines: [{ a: null, b: null, text: "x", match: null, change_ms: null, ratio: null }] }, /in neither run/],
    [{ ...doc(), lines: [{ ...doc().lines[0], a: { file: "/ws/t.py", line: 0, wall_ms: 1 } }] }, /line number/],
    [{ ...doc(), lines: [{ ...doc().lines[0], text: 3 }] }, /text is not text/],
    [{ ...doc(), lines: [{ ...doc().lines[0], match: "guess" }] }, /match is unknown/],
    [{ ...doc(), notes: [1] }, /notes are not text/],
  ];
  for (const [value, reason] of bad) assert.match(comparisonProblem(value) ?? "", reason);
  const state = { runId: "r1", title: "t", report: null, timeline: null, measure: null, stale: false };
  assert.equal(parseHostMessage({ type: "state", state: { ...state, comparison: doc() } }).ok, true);
  assert.equal(parseHostMessage({ type: "state", state: { ...state, comparison: "x" } }).ok, false);
});
