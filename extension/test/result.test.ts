// Checking the server's profile result before painting it (result.ts).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BadResult, parseMeasureResult, parseProfileResult } from "../src/result";

const GOOD = {
  runId: "20261201T153517Z-train-1a2b",
  runDir: "/ws/.stepscope/runs/20261201T153517Z-train-1a2b",
  msPerStep: 51.39,
  machine: "CPU only, host vm, from the scenario",
  summary: "51.4 ms/step on CPU only, host vm, from the scenario",
  status: { text: "51.4 ms/step", tooltip: "51\\.4 ms/step on CPU only" },
  lines: [
    { uri: "file:///ws/train.py", line: 68, wallMs: 44.9, gpuMs: null, fraction: 0.87, precision: "exact",
      label: "44.9 ms/step · 87%" },
  ],
  findings: [],
};

describe("parseProfileResult", () => {
  it("keeps a good result as the server sent it", () => {
    const parsed = parseProfileResult(GOOD);
    assert.equal(parsed.runId, GOOD.runId);
    assert.deepEqual(parsed.status, GOOD.status);
    assert.deepEqual(parsed.lines, [{ uri: "file:///ws/train.py", line: 68, wallMs: 44.9, gpuMs: null, fraction: 0.87,
      label: "44.9 ms/step · 87%" }]);
  });

  it("accepts a run without ms/step (a trace without step markers)", () => {
    assert.equal(parseProfileResult({ ...GOOD, msPerStep: null }).msPerStep, null);
  });

  it("refuses a reply it cannot paint, in one line", () => {
    for (const bad of [null, "text", [], { ...GOOD, lines: undefined }, { ...GOOD, status: "fast" },
      { ...GOOD, summary: 3 }, { ...GOOD, msPerStep: "12" }, { ...GOOD, msPerStep: Number.NaN }]) {
      assert.throws(() => parseProfileResult(bad), BadResult);
    }
  });

  it("leaves out lines it cannot place and clamps the heat", () => {
    const lines = [
      { uri: 3, line: 1, label: "x" }, { uri: "file:///a.py", line: -1, label: "x" },
      { uri: "file:///a.py", line: 1.5, label: "x" }, { uri: "file:///a.py", line: 2 },
      { uri: "file:///a.py", line: 4, label: "ok", fraction: 1.1, wallMs: "9" },
    ];
    const parsed = parseProfileResult({ ...GOOD, lines });
    assert.deepEqual(parsed.lines, [{ uri: "file:///a.py", line: 4, wallMs: 0, gpuMs: null, fraction: 1, label: "ok" }]);
  });
});

describe("parseMeasureResult", () => {
  const MEASURED = {
    runId: "20261201T153900Z-train-3c4d", runDir: "/ws/.stepscope/runs/20261201T153900Z-train-3c4d", kind: "measure",
    msPerStep: 12.3, iqrMs: 0.4, noisy: false, passes: 30, machine: "CPU only on vm, torch 2.13.0",
    summary: "12.3 ms/step without the profiler (median of 30 passes; IQR 0.400 ms, 3% of the median) on CPU only on vm",
    status: { text: "12.3 ms/step measured, IQR 3%", tooltip: "12.3 ms/step without the profiler" }, verdict: null,
  };

  it("keeps the median, its spread, the noise flag and the server's words", () => {
    const parsed = parseMeasureResult(MEASURED);
    assert.deepEqual([parsed.runId, parsed.msPerStep, parsed.iqrMs, parsed.noisy], [MEASURED.runId, 12.3, 0.4, false]);
    assert.equal(parsed.summary, MEASURED.summary);
    assert.deepEqual(parsed.status, MEASURED.status);
  });

  it("refuses a profile's result, or one without a median or a run, with the reason", () => {
    assert.throws(() => parseMeasureResult(GOOD), /not a measure run's result/);
    assert.throws(() => parseMeasureResult({ ...MEASURED, msPerStep: null }), /no run or no median/);
    assert.throws(() => parseMeasureResult({ ...MEASURED, runId: "" }), /no run or no median/);
    assert.throws(() => parseMeasureResult({ ...MEASURED, status: {} }), BadResult);
  });
});
