// Unions of intervals: what a selection's totals are made of (never a sum of nested events). No DOM.

import type { TimelineModel } from "./timeline-doc";

export type Interval = [number, number];

/** Sorted, disjoint intervals covering exactly the moments of the input. */
export function mergeIntervals(intervals: Interval[]): Interval[] {
  const sorted = intervals.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  const out: Interval[] = [];
  for (const [a, b] of sorted) {
    const last = out[out.length - 1];
    if (last && a <= last[1]) {
      if (b > last[1]) last[1] = b;
    } else {
      out.push([a, b]);
    }
  }
  return out;
}

export function unionLength(intervals: Interval[]): number {
  return mergeIntervals(intervals).reduce((sum, [a, b]) => sum + (b - a), 0);
}

/** How much of the sorted, disjoint `merged` intervals lies inside [lo, hi]. */
export function coveredIn(merged: Interval[], lo: number, hi: number): number {
  let sum = 0;
  for (const [a, b] of merged) {
    if (b <= lo) continue;
    if (a >= hi) break;
    sum += Math.min(b, hi) - Math.max(a, lo);
  }
  return sum;
}

export interface SelectionTotals {
  /** elapsed time of the selection, µs */
  duration: number;
  /** per category name: the union of its spans inside the selection, µs */
  byCategory: Map<string, number>;
  /** any CPU span / any GPU kernel or copy, union over all threads / streams, µs */
  hostBusy: number;
  gpuBusy: number;
  /** merged spans in the selection: their figures count their busy time pro rata (approximate) */
  merged: number;
}

const GPU_WORK = new Set(["kernel", "collective", "copy_h2d", "copy_d2h", "copy_d2d", "copy_other", "memset"]);

/** Totals of [lo, hi] (µs from the window's start): per category, each a union over every track.
 * A merged span whose time no plain span of its category covers adds its busy time in proportion to
 * the part of it inside the selection. */
export function selectionTotals(model: TimelineModel, lo: number, hi: number): SelectionTotals {
  const plain = new Map<number, Interval[]>();
  const mergedSpans: number[] = [];
  const host: Interval[] = [];
  const gpu: Interval[] = [];
  const cats = model.doc.categories;
  for (const row of model.rows) {
    const track = model.doc.tracks[row.track];
    // first span that ends after lo (ends are sorted within a row)
    let k = 0;
    let hiIdx = row.ends.length;
    while (k < hiIdx) {
      const mid = (k + hiIdx) >> 1;
      if (row.ends[mid] <= lo) k = mid + 1;
      else hiIdx = mid;
    }
    for (; k < row.spans.length && row.starts[k] < hi; k++) {
      const i = row.spans[k];
      const a = Math.max(row.starts[k], lo);
      const b = Math.min(row.ends[k], hi);
      if (b <= a) continue;
      const c = model.category[i];
      if (model.mergedCount.has(i)) mergedSpans.push(i);
      else {
        let list = plain.get(c);
        if (!list) plain.set(c, (list = []));
        list.push([a, b]);
      }
      if (track.kind === "cpu") host.push([a, b]);
      else if (GPU_WORK.has(cats[c])) gpu.push([a, b]);
    }
  }
  const byCategory = new Map<string, number>();
  const mergedPlain = new Map<number, Interval[]>();
  for (const [c, list] of plain) {
    const m = mergeIntervals(list);
    mergedPlain.set(c, m);
    byCategory.set(cats[c], m.reduce((s, [a, b]) => s + b - a, 0));
  }
  for (const i of mergedSpans) {
    const c = model.category[i];
    const a = Math.max(model.start[i], lo);
    const b = Math.min(model.end[i], hi);
    const covered = coveredIn(mergedPlain.get(c) ?? [], a, b);
    const dur = model.end[i] - model.start[i];
    const share = dur > 0 ? (model.mergedBusy.get(i) ?? dur) / dur : 1;
    const add = Math.max(0, (b - a - covered) * share);
    byCategory.set(cats[c], (byCategory.get(cats[c]) ?? 0) + add);
  }
  return {
    duration: Math.max(0, hi - lo),
    byCategory,
    hostBusy: unionLength(host),
    gpuBusy: unionLength(gpu),
    merged: mergedSpans.length,
  };
}
