// A measure run's distribution as the panel words it: every figure over the measured passes only,
// warm-ups apart, run-to-run beside pass-to-pass, and a comparison's ratio, interval and verdict.
import assert from "node:assert/strict";
import { test } from "node:test";
import { comparisonWords, measureFacts, measureProblem, MeasureResult, noiseWords, runToRun, stripRows } from "../src/measure";
import { fmtRate } from "../src/format";

function result(extra: Partial<MeasureResult> = {}): MeasureResult {
  return {
    raw_ms: [2.0, 2.1, 1.9, 2.2], warmup_ms: [9.0, 3.0], median_ms: 2.05, iqr_ms: 0.15, p10_ms: 1.93, p90_ms: 2.17,
    min_ms: 1.9, max_ms: 2.2, mean_ms: 2.05, samples_per_s: 7804.9, noisy: false,
    machine: { device: "CPU only", host: "ci" }, scope: { batch_size: 16 },
    ...extra,
  };
}

test("a measure run's figures are its median, spread, percentiles, extremes, samples/s and passes", () => {
  const rows = Object.fromEntries(measureFacts(result()));
  assert.equal(rows["median"], "2.05 ms per step");
  assert.equal(rows["IQR"], "150 µs (7.3% of the median)");
  assert.equal(rows["p10 / p90"], "1.93 ms / 2.17 ms");
  assert.equal(rows["min / max"], "1.90 ms / 2.20 ms");
  assert.equal(rows["samples/s"], "7,805 at batch 16");
  assert.equal(rows["passes"], "4 measured; 2 warm-up apart, in no figure");
  assert.equal(rows["run to run"], undefined); // one process: run-to-run variation is not observed
  assert.equal(Object.fromEntries(measureFacts(result({ samples_per_s: null })))["samples/s"], "not known (no batch size read)");
});

test("what the step computed is shown in the server's words, and only text is accepted", () => {
  const words = "loss 3.092 → 2.635 (first → last of 4 passes)";
  assert.equal(Object.fromEntries(measureFacts(result({ value_words: words })))["value"], words);
  assert.equal(Object.fromEntries(measureFacts(result()))["value"], undefined);
  assert.equal(measureProblem({ ...result(), value_words: { html: "<b>" } }), "the measure result's value words are not text");
  assert.equal(measureProblem(result({ value_words: words })), null);
});

test("a --function step's call is shown beside ms/step in the server's words, and only text is accepted", () => {
  const words = "10.2 ms per call, start to return (median; p10 9.80, p90 11.0), 26% of the time between call starts; the rest runs between calls";
  const rows = measureFacts(result({ call_words: words }));
  assert.deepEqual(rows.find(([label]) => label === "call"), ["call", words]);
  assert.ok(rows.findIndex(([label]) => label === "call") > rows.findIndex(([label]) => label === "median"));
  assert.equal(Object.fromEntries(measureFacts(result({ call_words: null })))["call"], undefined); // a loop's step
  assert.equal(measureProblem({ ...result(), call_words: 10.2 }), "the measure result's call words are not text");
});

test("the noise flag is said either way", () => {
  assert.match(noiseWords(result()), /^Steady/);
  assert.match(noiseWords(result({ noisy: true })), /^Noisy: the IQR is more than 10% of the median/);
});

test("with several processes, run-to-run variation stands beside pass-to-pass, one strip row per process", () => {
  const m = result({
    runs: [{ raw_ms: [2.0, 2.1] }, { raw_ms: [1.9, 2.2] }],
    variation: { run_medians_ms: [2.05, 2.05], run_to_run_pct: 0.0, pass_to_pass_pct: 7.3 },
  });
  assert.equal(runToRun(m), "0.0% between the processes' medians (2.05 ms, 2.05 ms), beside 7.3% pass to pass (IQR)");
  assert.equal(Object.fromEntries(measureFacts(m))["passes"], "4 measured in 2 processes; 2 warm-up apart, in no figure");
  assert.deepEqual(stripRows(m).map((r) => [r.label, r.kind, r.values.length]), [
    ["warm-up", "warm", 2], ["process 1", "measured", 2], ["process 2", "measured", 2]]);
});

test("a comparison gives both distributions, the ratio of medians, its interval and the verdict", () => {
  const m = result({
    ratio: 0.912, ci95: [0.893, 0.931], verdict: "faster", compare_raw_ms: [2.3, 2.2, 2.25],
    compare_label: "run 20261201T101500Z-train-1a2b", baseline: { median_ms: 2.25 },
  });
  assert.equal(comparisonWords(m),
    "This run (2.05 ms) / run 20261201T101500Z-train-1a2b (2.25 ms): 0.912× median, 95% interval 0.893 – 0.931: faster.");
  assert.deepEqual(stripRows(m).map((r) => r.label), ["warm-up", "passes", "baseline"]);
  assert.equal(comparisonWords(result()), null);
  // bursty passes: the ratio is of the means, and so are the figures beside it
  const bursty = result({ median_ms: 30.6, mean_ms: 74.0, ratio: 1.12, ci95: [0.7, 1.9], verdict: "no detectable difference",
    method: { statistic: "mean" }, baseline: { run: "r0", median_ms: 61.0, mean_ms: 66.0 } });
  assert.match(comparisonWords(bursty)!, /^This run \(74\.0 ms\) \/ run r0 \(66\.0 ms\): 1\.120× mean, /);
  // the server's words carry the margin: a difference ruled out apart from an open question
  const open = result({ ratio: 0.913, ci95: [0.822, 0.974], verdict: "no detectable difference",
    verdict_words: "inconclusive: the interval reaches past ±5% and inside it; with one process a side, run-to-run "
      + "variation is not observed: measure with --runs 3 or more" });
  assert.match(comparisonWords(open)!, /0\.913× median, 95% interval 0\.822 – 0\.974: inconclusive: the interval reaches past ±5%/);
  assert.equal(measureProblem({ ...open, verdict_words: 3 }), "the comparison's verdict words are not text");
});

test("a try run's change comes as its title, the server's words and its diff, or is refused", () => {
  const tried = { title: "DataLoader with 2 workers", words: "faster (beyond the 1% margin), saves 38% of the step",
    diff: "--- a/train.py\n+++ b/train.py\n@@ -1 +1 @@\n-a\n+b\n" };
  assert.equal(measureProblem(result({ tried })), null);
  assert.equal(measureProblem(result({ tried: null })), null);
  assert.equal(measureProblem({ ...result(), tried: { ...tried, diff: 3 } }), "the tried change is not {title, words, diff}");
  assert.equal(measureProblem({ ...result(), tried: "a diff" }), "the tried change is not {title, words, diff}");
});

test("a measure result without its figures is refused with the reason", () => {
  assert.equal(measureProblem(result()), null);
  assert.equal(measureProblem({ ...result(), raw_ms: [] }), "the measure result has no raw values");
  assert.equal(measureProblem({ ...result(), raw_ms: [1, Number.NaN] }), "the measure result has no raw values");
  assert.equal(measureProblem({ ...result(), p90_ms: undefined }), "the measure result has no p90_ms");
  assert.equal(measureProblem({ ...result(), warmup_ms: null }), "the measure result's warm-up passes are not a list of numbers");
  assert.equal(measureProblem({ ...result(), ci95: [1] }), "the comparison's interval is not [low, high]");
});

test("a rate reads no more precise than the step time it comes from", () => {
  assert.equal(fmtRate(1582.21), "1,582");
  assert.equal(fmtRate(12.46), "12.5");
  assert.equal(fmtRate(null), "n/o");
});

test("the pace words are accepted only as text", () => {
  assert.equal(measureProblem({ ...result(), pace_words: ["the mean"] }), "the measure result's pace words are not text");
  assert.equal(measureProblem(result({ pace_words: "the mean (27.1 ms) is 54% above the median" })), null);
});

test("under a launcher, each rank's median is shown in the server's words, and only text is accepted", () => {
  const words = "rank 0 12.1, rank 1 12.4 ms (median of each rank's passes); slowest: rank 1";
  const rows = measureFacts(result({ ranks_words: words }));
  assert.deepEqual(rows.find(([label]) => label === "ranks"), ["ranks", words]);
  assert.equal(Object.fromEntries(measureFacts(result({ ranks_words: null })))["ranks"], undefined); // one process
  assert.equal(measureProblem({ ...result(), ranks_words: [0, 1] }), "the measure result's rank words are not text");
  assert.equal(measureProblem(result({ ranks_words: words })), null);
});
