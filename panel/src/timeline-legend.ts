// What the timeline's colours mean: each category's words and fill, from the tables the drawing uses
// (theme.ts's palette through `colorOf`, and the words here), so the legend cannot disagree with the
// canvas. No DOM here but `renderLegend`.

import { clear, h } from "./dom";
import { colorOf, ThemeKind } from "./theme";
import { TimelineModel } from "./timeline-doc";

/** A category's words in the plural (selection totals, merged spans). */
export const CATEGORY_LABELS: Record<string, string> = {
  region: "line regions",
  batch_read: "batch reads",
  annotation: "annotations",
  operator: "operators",
  python: "Python frames",
  runtime: "runtime calls",
  sync: "synchronisations",
  collective: "collectives",
  kernel: "kernels",
  copy_h2d: "copies host→device",
  copy_d2h: "copies device→host",
  copy_d2d: "copies device→device",
  copy_other: "other copies",
  memset: "memsets",
  gpu_annotation: "GPU annotations",
  device_other: "other device events",
  mixed: "merged, mixed",
};

/** One span's kind (the tooltip, the legend). */
export const CATEGORY_ONE: Record<string, string> = {
  region: "line region",
  batch_read: "batch read",
  annotation: "annotation",
  operator: "operator",
  python: "Python frame",
  runtime: "runtime call",
  sync: "synchronisation",
  collective: "collective",
  kernel: "kernel",
  copy_h2d: "copy host→device",
  copy_d2h: "copy device→host",
  copy_d2d: "copy device→device",
  copy_other: "copy",
  memset: "memset",
  gpu_annotation: "GPU annotation",
  device_other: "device event",
  mixed: "merged, mixed",
};

export interface LegendEntry {
  category: string;
  label: string;
  color: string;
}

/** One entry per category that has a span in `model`, in the document's order of categories. */
export function legendEntries(model: TimelineModel, theme: ThemeKind): LegendEntry[] {
  const present = new Uint8Array(model.doc.categories.length);
  const category = model.category;
  for (let i = 0; i < category.length; i++) present[category[i]] = 1;
  const out: LegendEntry[] = [];
  model.doc.categories.forEach((name, c) => {
    if (present[c]) out.push({ category: name, label: CATEGORY_ONE[name] ?? name, color: colorOf(theme, name) });
  });
  return out;
}

/** Fills `list` (a `ul.legend`) with a swatch and words per entry; the swatch's colour is set through
 * the style object, which the page's policy allows (no style attribute is written as text). */
export function renderLegend(list: HTMLElement, entries: LegendEntry[]): void {
  clear(list);
  for (const entry of entries) {
    const swatch = h("span", { class: "swatch" });
    swatch.style.backgroundColor = entry.color;
    list.appendChild(h("li", { "data-category": entry.category }, swatch, entry.label));
  }
}
