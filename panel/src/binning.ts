// Per-pixel binning: what one row of the timeline draws for a view, in at most about one rectangle
// per pixel column, whatever the number of spans in view. No DOM.

import type { Row } from "./timeline-doc";

/** Receives each rectangle: x from/to in px, the category to paint, the span it shows (the longest
 * one of a pixel column), and whether it stands for several spans. */
export type Emit = (x0: number, x1: number, category: number, span: number, several: boolean) => void;

const MAX_CATEGORIES = 64;

/** Draw one row over the view [t0, t1] µs mapped onto `width` px: spans at least a pixel wide as
 * they are; narrower ones gathered per pixel column into one rectangle of the category with the most
 * time in that column. Returns the number of spans visited. */
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
  const perCategory = new Float64Array(MAX_CATEGORIES);
  const touched: number[] = [];
  let pixel = -1;
  let pxCount = 0;
  let pxSpan = -1;
  let pxLongest = -1;
  const flush = () => {
    if (pixel < 0) return;
    let best = -1;
    let bestTime = -1;
    for (const c of touched) {
      if (perCategory[c] > bestTime) {
        bestTime = perCategory[c];
        best = c;
      }
      perCategory[c] = 0;
    }
    touched.length = 0;
    emit(pixel, pixel + 1, best, pxSpan, pxCount > 1);
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
      flush();
      emit(Math.max(x0, -1), Math.min(x1, width + 1), category[i], i, false);
      continue;
    }
    const p = Math.floor(Math.max(0, Math.min(width - 1, x0)));
    if (p !== pixel) {
      flush();
      pixel = p;
    }
    const c = category[i];
    if (perCategory[c] === 0) touched.push(c);
    const dur = ends[k] - starts[k];
    perCategory[c] += dur > 0 ? dur : 1e-9;
    pxCount++;
    if (dur > pxLongest) {
      pxLongest = dur;
      pxSpan = i;
    }
  }
  flush();
  return visited;
}
