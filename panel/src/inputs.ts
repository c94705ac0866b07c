// Input shapes and memory as the panel shows them (`--shapes` / `--memory`). No DOM.
//
// One writing of a shape list on every surface: the server's present.input_shapes_text writes the
// hover's and the CLI's, this module the panel's, from the same cases (tests/analysis and
// panel/test). A table never shows the JSON the trace recorded.

/** Argument types torch records for inputs that are not tensors (their dims are recorded empty). */
const NOT_TENSOR_TYPES = new Set(["", "Scalar", "ScalarList", "GenericList", "None", "Device", "Layout", "ScalarType", "MemoryFormat", "String"]);

/** The mark of an op that had no tensor input (said, not left blank: it is not "not recorded"). */
export const NO_TENSOR_INPUT = "—";

/** `[256, 512]`: one tensor's shape (a tensor list's shapes nested: `[[2, 3], [4]]`). */
export function dimsText(dims: unknown[]): string {
  return `[${dims.map((d) => (Array.isArray(d) ? dimsText(d) : String(d))).join(", ")}]`;
}

/** `[256, 512], [512]`: the shapes of an op's tensor inputs in order; a 0-dim tensor is `[]`;
 * scalars, None and other non-tensor arguments are left out ("" when it had no tensor input).
 * `types` is torch's `Input type`; without it, an input with no dims is taken as a non-tensor. */
export function inputShapesText(dims: unknown, types: unknown): string {
  if (!Array.isArray(dims)) return "";
  const kinds = Array.isArray(types) ? types : null;
  const shown: string[] = [];
  dims.forEach((d, i) => {
    if (!Array.isArray(d)) return;
    const kind = kinds && i < kinds.length ? String(kinds[i]) : null;
    if (d.length || (kind !== null && !NOT_TENSOR_TYPES.has(kind))) shown.push(dimsText(d));
  });
  return shown.join(", ");
}

/** An operator's inputs as timeline.json holds them (the trace's `[dims, types]` JSON text) written
 * as a cell shows them: `[256, 512], [512]`, `—` for no tensor input, `not recorded` for none, and
 * `unreadable` for a text that is not such a pair (never the text itself). */
export function recordedInputsText(recorded: string | null | undefined): string {
  if (recorded === null || recorded === undefined) return "not recorded";
  let parsed: unknown;
  try {
    parsed = JSON.parse(recorded);
  } catch {
    return "unreadable";
  }
  if (!Array.isArray(parsed) || !Array.isArray(parsed[0])) return "unreadable";
  return inputShapesText(parsed[0], parsed[1]) || NO_TENSOR_INPUT;
}
