// The server's answer to stepscope/shareTrace, checked: where each redacted copy is and what it
// replaced. Pure, no `vscode` import. The summary line is the server's; the client only shows it.

export interface SharedCopy {
  trace: string;
  copy: string;
  /** distinct secrets replaced, by kind (never the secrets) */
  counts: Record<string, number>;
}

export interface ShareAnswer {
  runId: string;
  folder: string;
  copies: SharedCopy[];
  summary: string;
}

export class BadShareAnswer extends Error {}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The answer, or BadShareAnswer naming what is missing. */
export function parseShareAnswer(value: unknown): ShareAnswer {
  if (!isObject(value) || typeof value.runId !== "string" || typeof value.folder !== "string"
      || typeof value.summary !== "string" || !Array.isArray(value.copies)) {
    throw new BadShareAnswer("the server's answer to Share Trace has no run, folder, summary or copies");
  }
  const copies: SharedCopy[] = [];
  for (const c of value.copies) {
    if (!isObject(c) || typeof c.trace !== "string" || typeof c.copy !== "string" || !isObject(c.counts)) {
      throw new BadShareAnswer("the server's answer to Share Trace names a copy without its path or counts");
    }
    const counts: Record<string, number> = {};
    for (const [kind, n] of Object.entries(c.counts)) {
      if (typeof n === "number" && Number.isInteger(n) && n >= 0) counts[kind] = n;
    }
    copies.push({ trace: c.trace, copy: c.copy, counts });
  }
  if (!copies.length) throw new BadShareAnswer("the server's answer to Share Trace names no copy");
  return { runId: value.runId, folder: value.folder, copies, summary: value.summary.split("\n")[0] };
}

/** The run a command argument names: a run id, `{runId}` (the trace panel, a link), or a view's item
 * (`{id}`, or `{run: {id}}` as a runs view's node holds its run); undefined when none is given (the
 * command then asks), a one-line reason when the argument is not one. */
export function runIdOf(arg: unknown, pattern: RegExp, command = "Share Trace"): string | undefined | { refused: string } {
  if (arg === undefined || arg === null) return undefined;
  const nested = isObject(arg) && isObject(arg.run) ? arg.run.id : undefined;
  const id = typeof arg === "string" ? arg : isObject(arg) ? (arg.runId ?? arg.id ?? nested) : undefined;
  if (typeof id !== "string" || !pattern.test(id)) return { refused: `${command} needs a run id (the name of a folder in .stepscope/runs)` };
  return id;
}
