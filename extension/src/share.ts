// "Stepscope: Share Trace…": asks the server to write the redacted copies of a run's traces beside
// them (stepscope/shareTrace; the server's redaction never shows a secret), then reveals the copy
// and says in one line what was replaced. From the palette it asks which run; the trace panel's
// button and other views pass the run id. Works in restricted mode: nothing of the user's runs.
import * as vscode from "vscode";
import { RUN_ID } from "../../panel/src/messages";
import { firstLine } from "./python";
import { ServerController, showErrorWithLogs } from "./server";
import { BadShareAnswer, parseShareAnswer, runIdOf } from "./shareAnswer";

export const SHARE_TRACE_COMMAND = "stepscope.shareTrace";
const SHARE_REQUEST = "stepscope/shareTrace";
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
    const given = runIdOf(arg, RUN_ID);
    if (typeof given === "object") {
      void vscode.window.showErrorMessage(`Stepscope: ${given.refused}.`);
      return;
    }
    const client = this.server.languageClient;
    if (!client) {
      void showErrorWithLogs("Stepscope's server is not running, so it cannot write a redacted copy.", this.log);
      return;
    }
    const runId = given ?? (await this.pickRun());
    if (!runId) return;
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
    await this.reveal(vscode.Uri.file(answer.copies[0].copy));
    const choice = await vscode.window.showInformationMessage(`Stepscope: ${answer.summary}.`, "Copy Path");
    if (choice === "Copy Path") await vscode.env.clipboard.writeText(answer.copies.map((c) => c.copy).join("\n"));
  }

  /** In the explorer when the copy is inside a workspace folder, else in the system's file manager. */
  private async reveal(copy: vscode.Uri): Promise<void> {
    try {
      if (vscode.workspace.getWorkspaceFolder(copy)) {
        await vscode.commands.executeCommand("revealInExplorer", copy);
      } else {
        await vscode.commands.executeCommand("revealFileInOS", copy);
      }
    } catch (error) {
      this.log.warn(`Share Trace: could not reveal ${copy.fsPath}: ${firstLine(error)}`);
    }
  }

  /** The palette's way: the profile runs of the workspace that have ended, newest first. */
  private async pickRun(): Promise<string | undefined> {
    const client = this.server.languageClient;
    let runs: RunSummary[] = [];
    try {
      const answer = await client?.sendRequest<{ runs?: RunSummary[] }>(RUNS_REQUEST, {});
      // a measure or try run timed the step without the profiler: it holds no trace to share
      runs = (answer?.runs ?? []).filter((r) => typeof r.id === "string" && r.status !== "incomplete" && r.kind === "profile");
    } catch (error) {
      void vscode.window.showErrorMessage(`Stepscope: the runs could not be listed: ${firstLine(error)}`);
      return undefined;
    }
    if (!runs.length) {
      void vscode.window.showInformationMessage("Stepscope: no run to share yet. Profile a step first (Stepscope: Profile This Step).");
      return undefined;
    }
    const picked = await vscode.window.showQuickPick(
      runs.map((r) => ({
        label: r.script ? `${r.script}${r.stepLine ? `:${r.stepLine}` : ""}` : r.id,
        description: r.summary ?? r.status,
        detail: r.id,
        runId: r.id,
      })),
      { title: "Stepscope: Share Trace…", placeHolder: "The run whose trace to copy with secrets replaced" },
    );
    return picked?.runId;
  }
}
