// The heat scale of the inline timings and the one spelling of a document URI: pure, no `vscode`
// import (decorations.ts paints with them).
import { URI } from "vscode-uri";

/** Heat scale: the lower bound of each bucket's share of the step and its colours. */
export const HEAT = [
  { from: 0.0, text: "#8c8c8c", background: undefined },
  { from: 0.05, text: "#c8a400", background: undefined },
  { from: 0.15, text: "#e07b00", background: "rgba(224, 123, 0, 0.07)" },
  { from: 0.3, text: "#e5531a", background: "rgba(229, 83, 26, 0.11)" },
  { from: 0.5, text: "#e0281f", background: "rgba(224, 40, 31, 0.16)" },
] as const;

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
