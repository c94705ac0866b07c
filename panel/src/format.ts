// How the panel writes numbers: durations, counts, bytes. No DOM.

/** A duration given in ms, with 3 significant digits (`12.3 ms`, `0.0452 ms` as `45.2 µs`). */
export function fmtMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "n/o";
  return fmtUs(ms * 1000);
}

/** A duration given in µs. */
export function fmtUs(us: number): string {
  if (!Number.isFinite(us)) return "n/o";
  const abs = Math.abs(us);
  if (abs === 0) return "0 ms";
  if (abs < 1) return `${(us * 1000).toPrecision(3)} ns`;
  if (abs < 1000) return `${trim(us.toPrecision(3))} µs`;
  if (abs < 1e6) return `${trim((us / 1000).toPrecision(3))} ms`;
  return `${trim((us / 1e6).toPrecision(3))} s`;
}

function trim(text: string): string {
  return text.includes("e") ? Number(text).toString() : text;
}

export function fmtCount(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "n/o";
  return Number.isInteger(n) ? n.toLocaleString("en-US") : n.toLocaleString("en-US", { maximumFractionDigits: 2 });
}

/** A rate such as samples/s: whole numbers from 100 on (`1,582`), one decimal below (`12.5`), so
 * that no rate reads more precise than the step time it comes from. */
export function fmtRate(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "n/o";
  return n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(1);
}

/** Bytes as every surface says them (present.bytes_text on the server): binary units with two
 * decimals (`4.00 MiB`, `512 B`), `n/o` when not recorded (never 0). */
export function fmtBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "n/o";
  for (const [unit, size] of [["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]] as const) {
    if (Math.abs(n) >= size) return `${(n / size).toFixed(2)} ${unit}`;
  }
  return `${n} B`;
}

export function fmtPercent(part: number, whole: number): string {
  if (!(whole > 0)) return "";
  const share = Math.min(100, Math.max(0, (100 * part) / whole));
  return `${share < 10 ? share.toFixed(1) : Math.round(share)}%`;
}
