// Colours of the timeline and the bars, for light and dark themes, and the contrast they keep. No DOM.
//
// Text: every label is drawn in the theme's foreground on its background, or, on a coloured span, in
// black or white, whichever contrasts more (at least 4.58:1 for any fill). Fills: each keeps at least
// 3:1 against the background of its theme (WCAG's non-text contrast), tested.

export type ThemeKind = "light" | "dark";

/** One fill per timeline category (timeline.CATEGORIES) and per breakdown part. */
const LIGHT: Record<string, string> = {
  region: "#1f5fbf",
  batch_read: "#b04a00",
  annotation: "#6b3fa0",
  operator: "#00756b",
  python: "#4a5f7a",
  runtime: "#6b6b6b",
  sync: "#c0002a",
  collective: "#a1006b",
  kernel: "#2e7d32",
  copy_h2d: "#9a6a00",
  copy_d2h: "#a34700",
  copy_d2d: "#7a5230",
  copy_other: "#6d5d4b",
  memset: "#5f6b00",
  gpu_annotation: "#5a4a9c",
  device_other: "#737373",
  mixed: "#595959",
  // breakdown parts
  gpu_busy: "#2e7d32",
  copies: "#9a6a00",
  host_wait: "#c0002a",
  cpu_work: "#1f5fbf",
  other: "#767676",
};

const DARK: Record<string, string> = {
  region: "#5b9cf2",
  batch_read: "#f0a050",
  annotation: "#b58de8",
  operator: "#3cc4b0",
  python: "#93a9c8",
  runtime: "#a0a0a0",
  sync: "#ff6b7f",
  collective: "#f07cc6",
  kernel: "#6cc96f",
  copy_h2d: "#e0b040",
  copy_d2h: "#f08a50",
  copy_d2d: "#c8a07a",
  copy_other: "#b8a58f",
  memset: "#b8c640",
  gpu_annotation: "#a99af0",
  device_other: "#9a9a9a",
  mixed: "#8c8c8c",
  gpu_busy: "#6cc96f",
  copies: "#e0b040",
  host_wait: "#ff6b7f",
  cpu_work: "#5b9cf2",
  other: "#8c8c8c",
};

/** Backgrounds the palettes are checked against (VS Code's default editor backgrounds). */
export const BACKGROUND: Record<ThemeKind, string> = { light: "#ffffff", dark: "#1e1e1e" };

export function palette(kind: ThemeKind): Record<string, string> {
  return kind === "light" ? LIGHT : DARK;
}

export function colorOf(kind: ThemeKind, name: string): string {
  return palette(kind)[name] ?? palette(kind).mixed;
}

/** #rrggbb, #rgb or rgb()/rgba() text to [r, g, b] in 0..255; null when unreadable. */
export function parseColor(text: string): [number, number, number] | null {
  const t = text.trim();
  let m = /^#([0-9a-f]{6})$/i.exec(t);
  if (m) return [0, 2, 4].map((k) => parseInt(m![1].slice(k, k + 2), 16)) as [number, number, number];
  m = /^#([0-9a-f]{3})$/i.exec(t);
  if (m) return [0, 1, 2].map((k) => parseInt(m![1][k] + m![1][k], 16)) as [number, number, number];
  m = /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)/i.exec(t);
  if (m) return [Number(m[1]), Number(m[2]), Number(m[3])];
  return null;
}

/** WCAG relative luminance. */
export function luminance([r, g, b]: [number, number, number]): number {
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

/** WCAG contrast ratio of two colours (1..21). */
export function contrast(a: string, b: string): number {
  const ca = parseColor(a);
  const cb = parseColor(b);
  if (!ca || !cb) return 1;
  const [hi, lo] = [luminance(ca), luminance(cb)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/** Black or white, whichever reads better on `fill`. */
export function textOn(fill: string): string {
  return contrast(fill, "#000000") >= contrast(fill, "#ffffff") ? "#000000" : "#ffffff";
}
