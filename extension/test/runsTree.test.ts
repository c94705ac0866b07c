// How a run reads in the runs view (runsTree.ts) and how the server's runs list is checked (result.ts).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BadResult, parseFigures, parseRuns, RunSummary } from "../src/result";
import { runItem } from "../src/runsTree";

const RUN: RunSummary = {
  id: "20261201T163831Z-train_cpu-0ec0", kind: "profile", folder: "/ws/.stepscope/runs/20261201T163831Z-train_cpu-0ec0",
  started: "2026-12-01T16:38:31Z", script: "train_cpu.py", stepLine: 69, stepFunction: null, status: "complete",
  reason: null, analysed: true, msPerStep: 182.9, statusText: "183 ms/step",
  summary: "183 ms/step on CPU only, host vm, from the scenario", machine: "CPU only, host vm, from the scenario",
  problem: null,
};

describe("runItem", () => {
  it("names a good run by when and where, with the server's ms/step", () => {
    const item = runItem(RUN);
    assert.equal(item.label, "train_cpu.py:69");
    assert.equal(item.description, "183 ms/step · 2026-12-01 16:38 UTC");
    assert.equal(item.icon, "pass");
    assert.equal(item.contextValue, "run.analysed");
    assert.ok(item.tooltip.includes("183 ms/step on CPU only, host vm, from the scenario"));
  });

  it("says how a failed run ended, and offers only to delete it", () => {
    const item = runItem({ ...RUN, status: "failed", analysed: false, msPerStep: null, statusText: null, summary: null,
      reason: "the program raised AssertionError at train.py:12 before the window completed: Torch not compiled" });
    assert.equal(item.description, "failed · 2026-12-01 16:38 UTC");
    assert.equal(item.icon, "error");
    assert.equal(item.contextValue, "run.ended");
    assert.ok(item.tooltip.includes("failed: the program raised AssertionError at train\\.py:12"));
    // a click opens its log: how it ended, where it raised, the program's output
    assert.equal(item.opensLog, true);
    assert.ok(item.tooltip.includes("Click to open its log."));
  });

  it("opens the log only of a run that ended without figures", () => {
    assert.equal(runItem(RUN).opensLog, false);
    assert.equal(runItem({ ...RUN, analysed: false, status: "incomplete" }).opensLog, false);  // maybe still going
    assert.equal(runItem({ ...RUN, kind: "measure", analysed: false, statusText: "12.5 ms/step" }).opensLog, false);
    assert.equal(runItem({ ...RUN, kind: "measure", analysed: false, status: "timeout" }).opensLog, true);
    assert.ok(!runItem(RUN).tooltip.includes("log"));
  });

  it("shows a measure run's timed figure, and offers its distribution and a comparison (it has no report)", () => {
    const item = runItem({ ...RUN, kind: "measure", analysed: false, msPerStep: 12.5, summary: null,
      statusText: "12.5 ms/step (IQR 0.3 ms)" });
    assert.equal(item.description, "measured: 12.5 ms/step (IQR 0.3 ms) · 2026-12-01 16:38 UTC");
    assert.equal(item.icon, "dashboard");
    assert.equal(item.contextValue, "run.measured");
  });

  it("shows a try's verdict as a timed run, and one that was cancelled as how it ended", () => {
    const item = runItem({ ...RUN, kind: "try", analysed: false, msPerStep: 30.1, summary: null,
      statusText: "30.1 ms/step (IQR 0.5 ms); against its baseline: faster (beyond the 1% margin) (ratio 0.520)" });
    assert.equal(item.description,
      "tried: 30.1 ms/step (IQR 0.5 ms); against its baseline: faster (beyond the 1% margin) (ratio 0.520) · 2026-12-01 16:38 UTC");
    assert.equal(item.contextValue, "run.measured");
    const cancelled = runItem({ ...RUN, kind: "try", analysed: false, msPerStep: null, statusText: null, status: "cancelled" });
    assert.equal(cancelled.description, "try cancelled · 2026-12-01 16:38 UTC");
    assert.equal(cancelled.contextValue, "run.ended");
  });

  it("says how a measure run that did not complete ended, and offers only to delete it", () => {
    const item = runItem({ ...RUN, kind: "measure", analysed: false, msPerStep: null, summary: null, statusText: null,
      status: "cancelled", reason: "cancelled" });
    assert.equal(item.description, "measure cancelled · 2026-12-01 16:38 UTC");
    assert.equal(item.contextValue, "run.ended");
  });

  it("never lets a script name or a reason become markup", () => {
    const item = runItem({ ...RUN, script: "<img src=x onerror=alert(1)>.py", reason: "[x](http://evil)" });
    assert.ok(!/(?<!\\)[<>[\]()]/.test(item.tooltip.split("\n\n")[0]), item.tooltip);
    assert.ok(item.tooltip.includes("\\[x\\]\\(http://evil\\)"));
  });
});

describe("parseRuns and parseFigures", () => {
  it("keeps the runs it can name and refuses a reply that is no list", () => {
    const runs = parseRuns({ schemaVersion: 1, runs: [RUN, { id: "" }, "x", { ...RUN, id: "b", msPerStep: "1" }] });
    assert.deepEqual(runs.map((r) => r.id), [RUN.id, "b"]);
    assert.equal(runs[1].msPerStep, null);
    assert.throws(() => parseRuns({ runs: "many" }), BadResult);
  });

  it("reads a document's figures, and anything odd as no run shown", () => {
    const figures = parseFigures({ runId: "r1", hidden: 2, stale: true, notes: ["a", 3],
      lines: [{ uri: "file:///a.py", line: 3, label: "1.00 ms/step · 2%", fraction: 0.02 }] }, "file:///a.py");
    assert.deepEqual([figures.runId, figures.hidden, figures.stale, figures.notes], ["r1", 2, true, ["a"]]);
    assert.equal(figures.lines[0].line, 3);
    assert.equal(parseFigures(null, "file:///a.py").runId, null);
    assert.equal(parseFigures({ runId: 7 }, "file:///a.py").lines.length, 0);
  });

  it("keeps the run's status-bar words, so the status item names the run the editor shows", () => {
    const status = { text: "12.3 ms/step (15.0 profiled)", tooltip: "run **r1**" };
    assert.deepEqual(parseFigures({ runId: "r1", status }, "file:///a.py").status, status);
    assert.equal(parseFigures({ runId: "r1", status: { text: 1 } }, "file:///a.py").status, undefined);
    assert.equal(parseFigures({ runId: "r1" }, "file:///a.py").status, undefined);
  });
});
