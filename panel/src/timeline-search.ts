// Search the timeline by name: which spans match a text, computed once per query so that drawing the
// highlight costs a lookup, never a string comparison. No DOM here.
//
// A span matches when its name, or the label a person reads for it (a line region's `train.py:12`),
// contains the query, case-insensitively. Nothing is filtered out: the view dims the others.

import { TimelineModel } from "./timeline-doc";

/** The matches of one query in one model. Invariants: `order` holds each matching span once, by start
 * (then index); `byRow[r]` holds the positions in `model.rows[r]` of its matches, ascending, so their
 * starts and ends ascend too (the spans of a row never overlap). */
export class SpanMatches {
  readonly model: TimelineModel;
  /** the query as typed */
  readonly query: string;
  /** 1 for a span that matches, by span index */
  readonly isMatch: Uint8Array;
  readonly order: Int32Array;
  readonly byRow: Int32Array[];

  constructor(model: TimelineModel, query: string) {
    this.model = model;
    this.query = query;
    const needle = query.trim().toLowerCase();
    const n = model.size;
    const names = model.doc.names;
    const nameId = model.doc.spans.name;
    // one comparison per distinct name; a span whose label differs from its name is read apart
    const nameHits = new Uint8Array(names.length);
    const relabelled = new Uint8Array(names.length);
    for (let k = 0; k < names.length; k++) {
      nameHits[k] = names[k].toLowerCase().includes(needle) ? 1 : 0;
      relabelled[k] = hasOwnLabel(names[k]) ? 1 : 0;
    }
    this.isMatch = new Uint8Array(n);
    let count = 0;
    for (let i = 0; i < n; i++) {
      const k = nameId[i];
      if (nameHits[k] || (relabelled[k] && model.label(i).toLowerCase().includes(needle))) {
        this.isMatch[i] = 1;
        count++;
      }
    }
    // taken in the model's start order, sorted once per model: a query costs no sort
    const byStart = startOrder(model);
    const order = new Int32Array(count);
    for (let k = 0, j = 0; k < n; k++) if (this.isMatch[byStart[k]]) order[j++] = byStart[k];
    this.order = order;
    this.byRow = model.rows.map((row) => {
      let m = 0;
      for (let k = 0; k < row.spans.length; k++) m += this.isMatch[row.spans[k]];
      const positions = new Int32Array(m);
      for (let k = 0, j = 0; k < row.spans.length; k++) if (this.isMatch[row.spans[k]]) positions[j++] = k;
      return positions;
    });
  }

  get count(): number {
    return this.order.length;
  }

  /** The position in `order` of the match after (`direction` 1) or before (-1) position `at`, or,
   * with `at` -1, the first match that starts at or after `t` (the last before it going back); wraps
   * around. -1 when nothing matches. */
  step(at: number, direction: 1 | -1, t: number): number {
    const n = this.order.length;
    if (!n) return -1;
    if (at >= 0 && at < n) return (at + direction + n) % n;
    // the first match starting at or after t
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.model.start[this.order[mid]] < t) lo = mid + 1;
      else hi = mid;
    }
    return direction === 1 ? lo % n : (lo - 1 + n) % n;
  }

  /** The first position in `byRow[row]` whose span ends at or after `t`, from `from` on. */
  firstEndingFrom(row: number, t: number, from = 0): number {
    const positions = this.byRow[row];
    const ends = this.model.rows[row].ends;
    let lo = from;
    let hi = positions.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ends[positions[mid]] < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

const startOrders = new WeakMap<TimelineModel, Int32Array>();

/** Every span of `model` by start, then index; made once per model. */
function startOrder(model: TimelineModel): Int32Array {
  let order = startOrders.get(model);
  if (!order) {
    const start = model.start;
    order = new Int32Array(model.size);
    for (let i = 0; i < order.length; i++) order[i] = i;
    order.sort((a, b) => start[a] - start[b] || a - b);
    startOrders.set(model, order);
  }
  return order;
}

/** Whether a span of this name is read by another label (`TimelineModel.label`): Stepscope's regions. */
function hasOwnLabel(name: string): boolean {
  return name.startsWith("ss:");
}

/** The matches of `query` in `model`, or null for an empty (or blank) query: nothing is highlighted. */
export function findMatches(model: TimelineModel, query: string): SpanMatches | null {
  return query.trim() ? new SpanMatches(model, query) : null;
}
