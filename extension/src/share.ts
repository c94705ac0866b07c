// A run's trace, taken elsewhere. "Stepscope: Share Trace…" asks the server to write the redacted
// copies of a run's traces beside them (stepscope/shareTrace; the server's redaction never shows a
// secret), then reveals the copy and says in one line what was replaced. "Stepscope: Open Trace in
// Perfetto…" says where the run's traces are (stepscope/traceFiles): Perfetto and chrome://tracing
// open them as the profiler wrote them, in the browser; Stepscope sends them nowhere. From the
// palette each asks which run; the trace panel's buttons and the runs view pass the run id. Both
// work in restricted mode: nothing of the user's code runs.
import * as path from "path";
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import { RUN_ID } from "../../panel/src/messages";
import { firstLine } from "./python";
import { ServerController, showErrorWithLogs } from "./server";
import { BadShareAnswer, parseShareAnswer, runIdOf } from "./shareAnswer";

export const SHARE_TRACE_COMMAND = "stepscope.shareTrace";
export const OPEN_IN_PERFETTO_COMMAND = "stepscope.openInPerfetto";
const SHARE_REQUEST = "stepscope/shareTrace";
const TRACE_FILES_REQUEST = "stepscope/traceFiles";
const PERFETTO_UI = "https://ui.perfetto.dev";
const RUNS_REQUEST = "stepscope/runs";

interface RunSummary {
  id: string;
  kind: string;
  status: string;
  script: string | null;
  stepLine: number | null;
  started: string | null;
  summary: string | null;
}

export class ShareTraceCommand {
  constructor(
    private readonly server: ServerController,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  register(): vscode.Disposable {
    return vscode.commands.registerCommand(SHARE_TRACE_COMMAND, (arg?: unknown) => this.run(arg));
  }

  async run(arg?: unknown): Promise<void> {
    const target = await runToActOn(this.server, this.log, arg, {
      command: "Share Trace", cannot: "write a redacted copy",
      placeHolder: "The run whose trace to copy with secrets replaced",
    });
    if (!target) return;
    const { client, runId } = target;
    let raw: unknown;
    try {
      raw = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `Stepscope: writing a redacted copy of run ${runId}` },
        () => client.sendRequest(SHARE_REQUEST, { runId }),
      );
    } catch (error) {
      const reason = firstLine(error);
      this.log.error(`Share Trace: ${reason}`);
      void vscode.window.showErrorMessage(`Stepscope: ${reason}`);
      return;
    }
    let answer;
    try {
      answer = parseShareAnswer(raw);
    } catch (error) {
      const reason = error instanceof BadShareAnswer ? error.message : firstLine(error);
      void showErrorWithLogs(`Stepscope: ${reason}.`, this.log);
      return;
    }
    for (const c of answer.copies) this.log.info(`Share Trace: ${c.copy} (from ${c.trace}).`);
    await reveal(vscode.Uri.file(answer.copies[0].copy), this.log);
    const choice = await vscode.window.showInformationMessage(`Stepscope: ${answer.summary}.`, "Copy Path");
    if (choice === "Copy Path") await vscode.env.clipboard.writeText(answer.copies.map((c) => c.copy).join("\n"));
  }
}

/** In the explorer when the file is inside a workspace folder, else in the system's file manager. */
async function reveal(file: vscode.Uri, log: vscode.LogOutputChannel): Promise<void> {
  try {
    if (vscode.workspace.getWorkspaceFolder(file)) {
      await vscode.commands.executeCommand("revealInExplorer", file);
    } else {
      await vscode.commands.executeCommand("revealFileInOS", file);
    }
  } catch (error) {
    log.warn(`Could not reveal ${file.fsPath}: ${firstLine(error)}`);
  }
}

export class OpenInPerfettoCommand {
  constructor(
    private readonly server: ServerController,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  register(): vscode.Disposable {
    return vscode.commands.registerCommand(OPEN_IN_PERFETTO_COMMAND, (arg?: unknown) => this.run(arg));
  }

  async run(arg?: unknown): Promise<void> {
    const target = await runToActOn(this.server, this.log, arg, {
      command: "Open Trace in Perfetto", cannot: "find the run's trace",
      placeHolder: "The run whose trace to open in Perfetto",
    });
    if (!target) return;
    const { client, runId } = target;
    let traces: { path: string; bytes: number }[];
    try {
      traces = parseTraceFiles(await client.sendRequest(TRACE_FILES_REQUEST, { runId }));
    } catch (error) {
      const reason = firstLine(error);
      this.log.error(`Open Trace in Perfetto: ${reason}`);
      void vscode.window.showErrorMessage(`Stepscope: ${reason}`);
      return;
    }
    for (const t of traces) this.log.info(`Open Trace in Perfetto: run ${runId}'s trace is ${t.path} (${t.bytes} bytes).`);
    const first = vscode.Uri.file(traces[0].path);
    await reveal(first, this.log);
    const names = traces.length === 1 ? traces[0].path : `${traces.length} traces, one per rank, in ${path.dirname(traces[0].path)}`;
    const choice = await vscode.window.showInformationMessage(
      `Stepscope: run ${runId}'s trace: ${names} (${megabytes(traces)}). Perfetto (${PERFETTO_UI}, Open trace file) ` +
        "and chrome://tracing (Load) open it as it is, reading it in your browser; Stepscope sends it nowhere.",
      "Copy Path", "Open Perfetto", "Redacted Copy…",
    );
    if (choice === "Copy Path") await vscode.env.clipboard.writeText(traces.map((t) => t.path).join("\n"));
    else if (choice === "Open Perfetto") await vscode.env.openExternal(vscode.Uri.parse(PERFETTO_UI));
    else if (choice === "Redacted Copy…") await vscode.commands.executeCommand(SHARE_TRACE_COMMAND, runId);
  }
}

/** The server's answer to stepscope/traceFiles: at least one trace, each with its path and size. */
function parseTraceFiles(raw: unknown): { path: string; bytes: number }[] {
  const traces = (raw as { traces?: unknown } | null)?.traces;
  if (!Array.isArray(traces) || !traces.length ||
      !traces.every((t) => typeof t?.path === "string" && typeof t?.bytes === "number")) {
    throw new Error("the server's answer names no trace");
  }
  return traces as { path: string; bytes: number }[];
}

function megabytes(traces: { bytes: number }[]): string {
  const total = traces.reduce((sum, t) => sum + t.bytes, 0);
  return total >= 1e6 ? `${(total / 1e6).toFixed(1)} MB` : `${Math.max(1, Math.round(total / 1e3))} kB`;
}

/** The run a command acts on: the one its argument names, else the one the user picks; undefined
 * (having said why, where it is not a choice) when there is none or the server is not running. */
async function runToActOn(
  server: ServerController,
  log: vscode.LogOutputChannel,
  arg: unknown,
  words: { command: string; cannot: string; placeHolder: string },
): Promise<{ client: LanguageClient; runId: string } | undefined> {
  const given = runIdOf(arg, RUN_ID, words.command);
  if (typeof given === "object") {
    void vscode.window.showErrorMessage(`Stepscope: ${given.refused}.`);
    return undefined;
  }
  const client = server.languageClient;
  if (!client) {
    void showErrorWithLogs(`Stepscope's server is not running, so it cannot ${words.cannot}.`, log);
    return undefined;
  }
  const runId = given ?? (await pickRun(server, `Stepscope: ${words.command}…`, words.placeHolder));
  return runId ? { client, runId } : undefined;
}

/** The palette's way: the profile runs of the workspace that have ended, newest first. */
async function pickRun(server: ServerController, title: string, placeHolder: string): Promise<string | undefined> {
  let runs: RunSummary[] = [];
  try {
    const answer = await server.languageClient?.sendRequest<{ runs?: RunSummary[] }>(RUNS_REQUEST, {});
    // a measure or try run timed the step without the profiler: it holds no trace
    runs = (answer?.runs ?? []).filter((r) => typeof r.id === "string" && r.status !== "incomplete" && r.kind === "profile");
  } catch (error) {
    void vscode.window.showErrorMessage(`Stepscope: the runs could not be listed: ${firstLine(error)}`);
    return undefined;
  }
  if (!runs.length) {
    void vscode.window.showInformationMessage("Stepscope: no profile run with a trace yet. Profile a step first (Stepscope: Profile This Step).");
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    runs.map((r) => ({
      label: r.script ? `${r.script}${r.stepLine ? `:${r.stepLine}` : ""}` : r.id,
      description: r.summary ?? r.status,
      detail: r.id,
      runId: r.id,
    })),
    { title, placeHolder },
  );
  return picked?.runId;
}
