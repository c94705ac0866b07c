// Per-pixel binning: what one row of the timeline draws for a view, in at most one rectangle per pixel
// column, and far fewer where neighbouring columns show the same category, whatever the number of
// spans in view. No DOM.
//
// Invariants:
// - a span at least a pixel wide is drawn as itself; narrower ones are gathered per pixel column
//   (the column holding their start), and the column takes the category with the most time in it;
// - neighbouring columns of one category become one rectangle: the columns covered are exactly
//   those covered without the merge (an empty column between two keeps them apart);
// - nothing is allocated per span or per column.

import type { Row, TimelineModel } from "./timeline-doc";

/** Receives each rectangle: x from/to in px, the category to paint, the span it shows (the longest
 * one of its columns), and whether it stands for several spans. */
export type Emit = (x0: number, x1: number, category: number, span: number, several: boolean) => void;

const MAX_CATEGORIES = 256; // categories are a Uint8Array's values
const perCategory = new Float64Array(MAX_CATEGORIES);
const touched = new Uint8Array(MAX_CATEGORIES);

/** Draw one row over the view [t0, t1] µs mapped onto `width` px (see the invariants above). Returns
 * the number of spans visited. */
export function binRow(row: Row, category: Uint8Array, t0: number, t1: number, width: number, emit: Emit): number {
  const scale = width / (t1 - t0);
  const { starts, ends, spans } = row;
  // first span that ends at or after t0
  let lo = 0;
  let hi = ends.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ends[mid] < t0) lo = mid + 1;
    else hi = mid;
  }
  let nTouched = 0;
  // the column being filled
  let pixel = -1;
  let pxCount = 0;
  let pxSpan = -1;
  let pxLongest = -1;
  // the run of finished columns of one category, not emitted yet
  let runFrom = -1;
  let runTo = -1;
  let runCategory = -1;
  let runSpan = -1;
  let runLongest = -1;
  let runCount = 0;
  const emitRun = () => {
    if (runFrom >= 0) emit(runFrom, runTo, runCategory, runSpan, runCount > 1);
    runFrom = -1;
  };
  const closeColumn = () => {
    if (pixel < 0) return;
    let best = -1;
    let bestTime = -1;
    for (let k = 0; k < nTouched; k++) {
      const c = touched[k];
      if (perCategory[c] > bestTime) {
        bestTime = perCategory[c];
        best = c;
      }
      perCategory[c] = 0;
    }
    nTouched = 0;
    if (runFrom >= 0 && runTo === pixel && runCategory === best) {
      runTo = pixel + 1;
      runCount += pxCount;
      if (pxLongest > runLongest) {
        runLongest = pxLongest;
        runSpan = pxSpan;
      }
    } else {
      emitRun();
      runFrom = pixel;
      runTo = pixel + 1;
      runCategory = best;
      runSpan = pxSpan;
      runLongest = pxLongest;
      runCount = pxCount;
    }
    pixel = -1;
    pxCount = 0;
    pxSpan = -1;
    pxLongest = -1;
  };
  let visited = 0;
  for (let k = lo; k < starts.length && starts[k] <= t1; k++) {
    visited++;
    const x0 = (starts[k] - t0) * scale;
    const x1 = (ends[k] - t0) * scale;
    const i = spans[k];
    if (x1 - x0 >= 1) {
      closeColumn();
      emitRun();
      emit(Math.max(x0, -1), Math.min(x1, width + 1), category[i], i, false);
      continue;
    }
    const p = Math.floor(Math.max(0, Math.min(width - 1, x0)));
    if (p !== pixel) {
      closeColumn();
      pixel = p;
    }
    const c = category[i];
    if (perCategory[c] === 0) touched[nTouched++] = c;
    const dur = ends[k] - starts[k];
    perCategory[c] += dur > 0 ? dur : 1e-9;
    pxCount++;
    if (dur > pxLongest) {
      pxLongest = dur;
      pxSpan = i;
    }
  }
  closeColumn();
  emitRun();
  return visited;
}

/** Fields of an item of a level's row: start µs, end µs, category, span, kind (WIDE or COLUMNS). */
export const ITEM = 5;
export const WIDE = 1;
export const COLUMNS = 0;

/** One zoom level's drawing of the rows over [from, from + columns × binUs]: per row, the spans at
 * least a column wide as themselves and runs of pixel columns (binning.ts), in time, so any view
 * inside it is drawn without visiting a span again. A row is binned when first drawn. */
export class Level {
  readonly to: number;
  private readonly rows: (number[] | undefined)[];

  constructor(readonly source: TimelineModel, readonly binUs: number, readonly from: number, private readonly columns: number) {
    this.to = from + columns * binUs;
    this.rows = new Array(source.rows.length);
  }

  row(r: number): number[] {
    let items = this.rows[r];
    if (items) return items;
    const out: number[] = [];
    const { start, end } = this.source;
    binRow(this.source.rows[r], this.source.category, this.from, this.to, this.columns, (x0, x1, c, span, several) => {
      if (!several && end[span] - start[span] >= this.binUs) out.push(start[span], end[span], c, span, WIDE);
      else out.push(this.from + x0 * this.binUs, this.from + x1 * this.binUs, c, span, COLUMNS);
    });
    items = out;
    this.rows[r] = items;
    return items;
  }
}

/** How many spans of a row lie in [t0, t1] (two binary searches: the status line's count). */
export function inView(row: Row, t0: number, t1: number): number {
  let lo = 0;
  let hi = row.ends.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (row.ends[mid] < t0) lo = mid + 1;
    else hi = mid;
  }
  let a = lo;
  let b = row.starts.length;
  while (a < b) {
    const mid = (a + b) >> 1;
    if (row.starts[mid] <= t1) a = mid + 1;
    else b = mid;
  }
  return Math.max(0, a - lo);
}
