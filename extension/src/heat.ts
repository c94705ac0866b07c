// The heat scale of the inline timings and the one spelling of a document URI: pure, no `vscode`
// import (decorations.ts paints with them).
//
// The colours are theme colours (package.json `contributes.colors`, one id per bucket), so a theme
// can change them and each kind of theme gets its own defaults. The defaults below are those
// package.json declares (a unit test holds the two together); each reaches a contrast of at least
// 4.5:1 (WCAG AA for text) against the default editor background of its kind of theme, with the
// bucket's line background laid over it.
import { URI } from "vscode-uri";

export type ThemeKind = "dark" | "light" | "highContrast" | "highContrastLight";

export interface HeatStep {
  /** Lower bound of the bucket's share of the step. */
  from: number;
  /** Theme colour id of the label's text. */
  text: string;
  /** Theme colour id of the line's background, for the hot buckets. */
  background?: string;
}

/** Heat scale: the lower bound of each bucket's share of the step and its theme colours. */
export const HEAT: readonly HeatStep[] = [
  { from: 0.0, text: "stepscope.heat.cold" },
  { from: 0.05, text: "stepscope.heat.warm" },
  { from: 0.15, text: "stepscope.heat.warmer", background: "stepscope.heat.warmerBackground" },
  { from: 0.3, text: "stepscope.heat.hot", background: "stepscope.heat.hotBackground" },
  { from: 0.5, text: "stepscope.heat.hottest", background: "stepscope.heat.hottestBackground" },
];

/** Default colours per kind of theme, as package.json declares them. */
export const COLOR_DEFAULTS: Record<string, Record<ThemeKind, string>> = {
  "stepscope.heat.cold": { dark: "#A0A0A0", light: "#616161", highContrast: "#FFFFFF", highContrastLight: "#000000" },
  "stepscope.heat.warm": { dark: "#D7BA7D", light: "#795E00", highContrast: "#FFD700", highContrastLight: "#5C4700" },
  "stepscope.heat.warmer": { dark: "#F0A35E", light: "#9C4A00", highContrast: "#FFB870", highContrastLight: "#7A3A00" },
  "stepscope.heat.hot": { dark: "#F48771", light: "#B03000", highContrast: "#FF9C85", highContrastLight: "#8C2600" },
  "stepscope.heat.hottest": { dark: "#FF7A7A", light: "#B0201A", highContrast: "#FF8F8F", highContrastLight: "#8C1A14" },
  "stepscope.heat.warmerBackground": {
    dark: "#E07B0012", light: "#E07B0012", highContrast: "#00000000", highContrastLight: "#00000000",
  },
  "stepscope.heat.hotBackground": {
    dark: "#E5531A1C", light: "#E5531A1C", highContrast: "#00000000", highContrastLight: "#00000000",
  },
  "stepscope.heat.hottestBackground": {
    dark: "#E0281F29", light: "#E0281F29", highContrast: "#00000000", highContrastLight: "#00000000",
  },
};

/** The default editor background of each kind of theme (VS Code's Dark Modern, Light Modern, ...). */
export const EDITOR_BACKGROUNDS: Record<ThemeKind, string[]> = {
  dark: ["#1F1F1F", "#1E1E1E"],
  light: ["#FFFFFF"],
  highContrast: ["#000000"],
  highContrastLight: ["#FFFFFF"],
};

/** The bucket of a share of the step (0..1; anything else falls in the nearest bucket). */
export function heatBucket(fraction: number): number {
  let bucket = 0;
  HEAT.forEach((step, index) => {
    if (fraction >= step.from) {
      bucket = index;
    }
  });
  return bucket;
}

/** Whether a line gets an inline label: its heat (the larger of its CPU wall and GPU time as a share of the step) reaches the threshold (setting). */
export function worthALabel(fraction: number, minShare: number): boolean {
  return !(fraction < minShare);
}

function rgba(hex: string): [number, number, number, number] {
  const m = /^#([0-9a-f]{6})([0-9a-f]{2})?$/i.exec(hex);
  if (!m) {
    throw new Error(`not a colour: ${hex}`);
  }
  const n = parseInt(m[1], 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255, m[2] ? parseInt(m[2], 16) / 255 : 1];
}

/** `over` laid on the opaque `under`, as a browser composites them. */
export function composite(over: string, under: string): string {
  const [r, g, b, a] = rgba(over);
  const [R, G, B] = rgba(under);
  const mix = (x: number, y: number) => Math.round(a * x + (1 - a) * y);
  return "#" + [mix(r, R), mix(g, G), mix(b, B)].map((v) => v.toString(16).padStart(2, "0")).join("");
}

function luminance(hex: string): number {
  const channel = (v: number) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const [r, g, b] = rgba(hex);
  return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
}

/** WCAG contrast ratio of two opaque colours (1 to 21). */
export function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/**
 * The same document can be spelled with different escapes (the server writes `%C3%BC` where VS Code
 * may write `ü`, or `%3A` for a drive's colon): compare documents by VS Code's own spelling, which
 * vscode-uri (the same implementation) gives. A string that is no URI is kept as it is.
 */
export function normaliseUri(uri: string): string {
  try {
    return URI.parse(uri, true).toString();
  } catch {
    return uri;
  }
}
