// A measure run's result as the panel shows it (shared/PRODUCT.md, `measure --json`): raw values and
// their distribution, and with a comparison its ratio, interval and verdict. No DOM here.

export interface MeasureResult {
  raw_ms: number[];
  warmup_ms: number[];
  median_ms: number;
  iqr_ms: number;
  p10_ms: number;
  p90_ms: number;
  min_ms: number;
  max_ms: number;
  samples_per_s: number | null;
  noisy: boolean;
  machine: { device?: string; host?: string; [key: string]: unknown };
  ratio?: number | null;
  ci95?: [number, number] | null;
  verdict?: "faster" | "slower" | "no detectable difference" | null;
  /** the other run of a comparison, for its strip */
  compare_raw_ms?: number[] | null;
}

export function measureProblem(value: unknown): string | null {
  if (typeof value !== "object" || value === null) return "the measure result is not an object";
  const v = value as Record<string, unknown>;
  if (!Array.isArray(v.raw_ms) || !v.raw_ms.every((x) => typeof x === "number" && Number.isFinite(x))) {
    return "the measure result has no raw values";
  }
  if (typeof v.median_ms !== "number") return "the measure result has no median";
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
