// A measure run's result as the panel shows it (shared/PRODUCT.md, `measure --json`; the server's
// `stepscope/measure`): raw values and their distribution, warm-ups apart, and with a comparison
// both sides, the ratio of medians, its interval and the verdict. No DOM here: the words and the
// rows the overview draws (overview.ts), so the unit tests read exactly what a person reads.
import { fmtMs, fmtRate } from "./format";

export interface MeasureRun {
  raw_ms: number[];
  warmup_ms?: number[];
  median_ms?: number;
  iqr_ms?: number;
}

export interface MeasureResult {
  raw_ms: number[];
  warmup_ms: number[];
  median_ms: number;
  iqr_ms: number;
  p10_ms: number;
  p90_ms: number;
  min_ms: number;
  max_ms: number;
  mean_ms?: number | null;
  samples_per_s: number | null;
  noisy: boolean;
  machine: { device?: string; host?: string; [key: string]: unknown };
  /** one entry per process (`--runs`), each with its own measured and warm-up passes */
  runs?: MeasureRun[] | null;
  variation?: { run_medians_ms?: number[] | null; run_to_run_pct?: number | null; pass_to_pass_pct?: number | null } | null;
  scope?: { batch_size?: number | null; [key: string]: unknown } | null;
  run_id?: string;
  ratio?: number | null;
  ci95?: [number, number] | null;
  verdict?: "faster" | "slower" | "no detectable difference" | null;
  /** the verdict with the margin it was called against, in the server's words ("no difference larger
   * than 1%", "inconclusive: …; about 8 processes a side … would likely decide it") */
  verdict_words?: string | null;
  values_match?: boolean | null;
  /** what the step computed, first to last (the loss), in the server's words */
  value_words?: string | null;
  /** a --function step's call itself, start to return (null for a loop's step), in the server's words */
  call_words?: string | null;
  /** when the median is not the loop's pace (the mean is far from it), in the server's words */
  pace_words?: string | null;
  /** under a launcher: each rank's median and the slowest (null without ranks), in the server's words */
  ranks_words?: string | null;
  baseline?: { run?: string; label?: string; median_ms?: number | null; mean_ms?: number | null; processes?: number } | null;
  /** how the comparison was made: `statistic` says what its ratio is of ("median", or "mean" where a
   * side's median is not its pace) */
  method?: { statistic?: string | null; [key: string]: unknown } | null;
  /** the other run of a comparison (the baseline), for its strip */
  compare_raw_ms?: number[] | null;
  compare_label?: string | null;
  /** a try run (`stepscope try`): the change it measured, in the server's words, and its diff */
  tried?: { title: string; words: string; diff: string } | null;
}

const finiteList = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === "number" && Number.isFinite(x));

export function measureProblem(value: unknown): string | null {
  if (typeof value !== "object" || value === null) return "the measure result is not an object";
  const v = value as Record<string, unknown>;
  if (!finiteList(v.raw_ms) || (v.raw_ms as number[]).length === 0) return "the measure result has no raw values";
  if (!finiteList(v.warmup_ms)) return "the measure result's warm-up passes are not a list of numbers";
  for (const key of ["median_ms", "iqr_ms", "p10_ms", "p90_ms", "min_ms", "max_ms"]) {
    if (typeof v[key] !== "number" || !Number.isFinite(v[key])) return `the measure result has no ${key}`;
  }
  if (v.compare_raw_ms !== undefined && v.compare_raw_ms !== null && !finiteList(v.compare_raw_ms)) {
    return "the compared run's passes are not a list of numbers";
  }
  if (v.value_words !== undefined && v.value_words !== null && typeof v.value_words !== "string") {
    return "the measure result's value words are not text";
  }
  if (v.call_words !== undefined && v.call_words !== null && typeof v.call_words !== "string") {
    return "the measure result's call words are not text";
  }
  if (v.pace_words !== undefined && v.pace_words !== null && typeof v.pace_words !== "string") {
    return "the measure result's pace words are not text";
  }
  if (v.ranks_words !== undefined && v.ranks_words !== null && typeof v.ranks_words !== "string") {
    return "the measure result's rank words are not text";
  }
  if (v.verdict_words !== undefined && v.verdict_words !== null && typeof v.verdict_words !== "string") {
    return "the comparison's verdict words are not text";
  }
  if (v.tried !== undefined && v.tried !== null) {
    const t = v.tried as Record<string, unknown>;
    if (typeof t !== "object" || typeof t.title !== "string" || typeof t.words !== "string" || typeof t.diff !== "string") {
      return "the tried change is not {title, words, diff}";
    }
  }
  if (v.ci95 !== undefined && v.ci95 !== null && !(finiteList(v.ci95) && (v.ci95 as number[]).length === 2)) {
    return "the comparison's interval is not [low, high]";
  }
  return null;
}

/** Bins of a histogram over [lo, hi]: counts per bin, `bins` equal widths. */
export function histogram(values: number[], bins: number, lo: number, hi: number): number[] {
  const out = new Array<number>(bins).fill(0);
  const width = (hi - lo) / bins || 1;
  for (const v of values) {
    const k = Math.min(bins - 1, Math.max(0, Math.floor((v - lo) / width)));
    out[k] += 1;
  }
  return out;
}

/** The figures of a measure run, as label/value rows (every one over the measured passes only). */
export function measureFacts(m: MeasureResult): [string, string][] {
  const processes = m.runs?.length ?? 1;
  const share = m.median_ms > 0 ? ` (${((100 * m.iqr_ms) / m.median_ms).toFixed(1)}% of the median)` : "";
  const rows: [string, string][] = [
    ["median", `${fmtMs(m.median_ms)} per step`],
    ["IQR", `${fmtMs(m.iqr_ms)}${share}`],
    ["p10 / p90", `${fmtMs(m.p10_ms)} / ${fmtMs(m.p90_ms)}`],
    ["min / max", `${fmtMs(m.min_ms)} / ${fmtMs(m.max_ms)}`],
  ];
  if (typeof m.mean_ms === "number") rows.push(["mean", `${fmtMs(m.mean_ms)} (the passes' total / passes)`]);
  if (typeof m.call_words === "string") rows.push(["call", m.call_words]);
  if (typeof m.ranks_words === "string") rows.push(["ranks", m.ranks_words]);
  rows.push([
    "samples/s",
    typeof m.samples_per_s === "number" ? `${fmtRate(m.samples_per_s)} at batch ${m.scope?.batch_size ?? "?"}` : "not known (no batch size read)",
  ]);
  rows.push(["passes", `${m.raw_ms.length} measured${processes > 1 ? ` in ${processes} processes` : ""}; ${m.warmup_ms.length} warm-up apart, in no figure`]);
  const variation = runToRun(m);
  if (variation) rows.push(["run to run", variation]);
  if (typeof m.value_words === "string") rows.push(["value", m.value_words]);
  return rows;
}

/** Run-to-run beside pass-to-pass variation, when more than one process ran; null otherwise. */
export function runToRun(m: MeasureResult): string | null {
  const v = m.variation;
  if (!v || typeof v.run_to_run_pct !== "number" || (m.runs?.length ?? 1) < 2) return null;
  const medians = (v.run_medians_ms ?? []).map((x) => fmtMs(x)).join(", ");
  const pass = typeof v.pass_to_pass_pct === "number" ? `, beside ${v.pass_to_pass_pct.toFixed(1)}% pass to pass (IQR)` : "";
  return `${v.run_to_run_pct.toFixed(1)}% between the processes' medians (${medians})${pass}`;
}

/** The noise flag in words. */
export function noiseWords(m: MeasureResult): string {
  return m.noisy
    ? "Noisy: the IQR is more than 10% of the median; look at the raw passes before trusting one figure."
    : "Steady: the IQR is within 10% of the median.";
}

/** The comparison in words (this run against its baseline), or null when the result has none. */
export function comparisonWords(m: MeasureResult): string | null {
  if (typeof m.ratio !== "number" || !m.ci95) return null;
  const label = m.compare_label ?? m.baseline?.label ?? (m.baseline?.run ? `run ${m.baseline.run}` : "the baseline");
  const byMean = m.method?.statistic === "mean" && typeof m.mean_ms === "number" && typeof m.baseline?.mean_ms === "number";
  const mine = byMean ? (m.mean_ms as number) : m.median_ms;
  const theirs = byMean ? m.baseline?.mean_ms : m.baseline?.median_ms;
  const before = typeof theirs === "number" ? ` (${fmtMs(theirs)})` : "";
  return `This run (${fmtMs(mine)}) / ${label}${before}: ${m.ratio.toFixed(3)}× ${byMean ? "mean" : "median"}, 95% interval ` +
    `${m.ci95[0].toFixed(3)} – ${m.ci95[1].toFixed(3)}: ${m.verdict_words ?? m.verdict ?? "no verdict"}.`;
}

/** The strip plot's rows, top to bottom: warm-ups apart, then each process's measured passes (one
 * row when there is one process), then the compared run's. */
export function stripRows(m: MeasureResult): { label: string; values: number[]; kind: "warm" | "measured" | "before" }[] {
  const rows: { label: string; values: number[]; kind: "warm" | "measured" | "before" }[] = [];
  rows.push({ label: "warm-up", values: m.warmup_ms, kind: "warm" });
  const runs = m.runs && m.runs.length > 1 ? m.runs : null;
  if (runs) runs.forEach((r, k) => rows.push({ label: `process ${k + 1}`, values: r.raw_ms, kind: "measured" }));
  else rows.push({ label: "passes", values: m.raw_ms, kind: "measured" });
  if (m.compare_raw_ms?.length) rows.push({ label: "baseline", values: m.compare_raw_ms, kind: "before" });
  return rows;
}
