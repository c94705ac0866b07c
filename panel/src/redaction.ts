// What sharing the trace would change, as the panel marks it. The server decides (the timeline
// document's `redactable`: a string -> the kinds it would be redacted as, computed as
// `stepscope redact` decides); the panel only looks strings up and words the mark. The replacement
// text never reaches the panel. No DOM.

export const REDACT_KINDS = ["email", "token", "path", "workspace", "host", "user", "input", "phone", "national-id", "birth-date"] as const;
/** The mark put before a string that would be redacted (on the timeline's canvas and in cells). */
export const MARK = "⚑";

export type Redactable = Record<string, string[]>;

/** A document's `redactable`, checked: an object of non-empty lists of known kinds (or absent). */
export function redactableProblem(value: unknown): string | null {
  if (value === undefined) return null;
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "redactable is not an object";
  for (const [text, kinds] of Object.entries(value)) {
    if (!Array.isArray(kinds) || !kinds.length || !kinds.every((k) => (REDACT_KINDS as readonly string[]).includes(k))) {
      return `redactable["${text.slice(0, 20)}"] is not a list of kinds`;
    }
  }
  return null;
}

/** "would be redacted as email" (or "as path, user"), or null when sharing keeps `text` as it is. */
export function redactionNote(marks: Redactable | undefined, text: string): string | null {
  const kinds = marks && Object.prototype.hasOwnProperty.call(marks, text) ? marks[text] : undefined;
  return kinds && kinds.length ? `would be redacted as ${kinds.join(", ")}` : null;
}

/** `text` with the mark before it when sharing would change it (for the canvas, which has no title). */
export function marked(marks: Redactable | undefined, text: string, shown: string = text): string {
  return redactionNote(marks, text) ? `${MARK} ${shown}` : shown;
}
