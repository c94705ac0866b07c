// "Stepscope: Profile This Step": asks the server to profile the loop at the cursor, shows its
// progress in a cancellable notification, then paints the per-line result.
import { randomUUID } from "crypto";
import * as path from "path";
import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  LanguageClient,
  ResponseError,
  WorkDoneProgress,
} from "vscode-languageclient/node";
import { TimingDecorations } from "./decorations";
import { LaunchOptions, launchFor } from "./launch";
import { firstLine, InterpreterProblem, resolveInterpreter } from "./python";
import { parseProfileResult, ProfileResult } from "./result";
import { ServerController, showErrorWithLogs, showInterpreterProblem } from "./server";
import { ProfileSettings, readSettings } from "./settings";
import { StepStatus } from "./statusBar";

export const PROFILE_COMMAND = "stepscope.profileStep";
const SERVER_PROFILE_COMMAND = "stepscope.profile";
/** After a cancel, how long to wait for the server to confirm before closing the notification. */
const CANCEL_GRACE_MS = 15_000;

/** What the command receives from a CodeLens; without it, the active editor's cursor is used. */
interface ProfileTarget {
  uri: string;
  position: { line: number; character: number };
}

export class ProfileCommand {
  private running = false;

  constructor(
    private readonly server: ServerController,
    private readonly decorations: TimingDecorations,
    private readonly status: StepStatus,
    private readonly log: vscode.LogOutputChannel,
    /** the run now shown (the trace panel follows it) */
    private readonly shown: (runId: string) => void = () => undefined,
  ) {}

  register(): vscode.Disposable {
    return vscode.commands.registerCommand(PROFILE_COMMAND, (arg?: unknown) => this.run(arg));
  }

  async run(arg?: unknown): Promise<void> {
    const target = targetFrom(arg);
    if (typeof target === "string") {
      void vscode.window.showErrorMessage(target);
      return;
    }
    if (!vscode.workspace.isTrusted) {
      // Profiling runs the user's program; restricted mode keeps to static checks.
      const choice = await vscode.window.showWarningMessage(
        "Stepscope runs your program to profile it, so it works only in a trusted workspace. Static checks keep working in restricted mode.",
        "Manage Workspace Trust",
      );
      if (choice === "Manage Workspace Trust") {
        await vscode.commands.executeCommand("workbench.trust.manage");
      }
      return;
    }
    if (this.running) {
      void vscode.window.showInformationMessage("Stepscope is already profiling; cancel that run first.");
      return;
    }
    const client = this.server.languageClient;
    if (!client) {
      void showErrorWithLogs("Stepscope's server is not running, so it cannot profile.", this.log);
      return;
    }

    const uri = vscode.Uri.parse(target.uri);
    const document = await vscode.workspace.openTextDocument(uri);
    // The program runs from disk: profile what the user sees.
    if (document.isDirty && !(await document.save())) {
      void vscode.window.showErrorMessage(`Stepscope: save ${path.basename(uri.fsPath)} before profiling it.`);
      return;
    }
    // Read now, for this file's folder: a settings change applies to the next run, no restart.
    const settings = readSettings(uri);
    const resolved = launchFor(uri);
    if (resolved && "problem" in resolved) {
      void vscode.window.showErrorMessage(`Stepscope: ${resolved.problem}.`);
      return;
    }
    const launch: LaunchOptions | undefined = resolved?.options;
    let python: string;
    if (launch?.python) {
      python = launch.python;  // the launch configuration's interpreter runs the program, as the debugger would
    } else {
      try {
        python = (await resolveInterpreter(uri, settings, this.log)).path;
      } catch (error) {
        if (error instanceof InterpreterProblem) {
          void showInterpreterProblem(error.message, this.log);
          return;
        }
        throw error;
      }
    }

    const where = `${path.basename(uri.fsPath)}:${target.position.line + 1}`;
    this.running = true;
    this.decorations.clear();
    this.status.running(where);
    this.log.info(`Profiling the step at ${where} with ${python}` + (launch ? ` (launch configuration "${launch.name}").` : "."));
    try {
      const result = await this.request(client, where, {
        uri: document.uri.toString(),
        position: target.position,
        python,
        launch,
        profile: settings.profile,
      });
      if (result) {
        this.showResult(result);
      } else {
        this.status.idle();
      }
    } catch (error) {
      this.status.idle();
      const reason = firstLine(error);
      this.log.error(`Profile failed: ${reason}`);
      void showErrorWithLogs(`Stepscope: ${reason}`, this.log);
    } finally {
      this.running = false;
    }
  }

  /** Sends the request; resolves to undefined when the user cancelled it. */
  private request(
    client: LanguageClient,
    where: string,
    argument: {
      uri: string;
      position: ProfileTarget["position"];
      python: string;
      launch?: LaunchOptions;
      profile: ProfileSettings;
    },
  ): Thenable<ProfileResult | undefined> {
    return vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: `Stepscope: profiling ${where}`,
        cancellable: true,
      },
      async (progress, cancellation) => {
        const workDoneToken = randomUUID();
        let lastPercentage = 0;
        const progressListener = client.onProgress(WorkDoneProgress.type, workDoneToken, (value) => {
          if (value.kind === "end") {
            return;
          }
          const percentage = value.percentage ?? lastPercentage;
          progress.report({ message: value.message, increment: Math.max(0, percentage - lastPercentage) });
          lastPercentage = percentage;
        });
        const cancelled = new Promise<"cancelled">((resolve) => {
          cancellation.onCancellationRequested(() => {
            this.log.info("Profile cancelled; asking the server to stop the program.");
            setTimeout(() => resolve("cancelled"), CANCEL_GRACE_MS);
          });
        });
        try {
          const response = client.sendRequest(
            ExecuteCommandRequest.type,
            { command: SERVER_PROFILE_COMMAND, arguments: [argument], workDoneToken },
            cancellation,
          );
          const outcome = await Promise.race([response, cancelled]);
          if (outcome === "cancelled") {
            return undefined;
          }
          return parseProfileResult(outcome);
        } catch (error) {
          if (cancellation.isCancellationRequested || isCancellation(error)) {
            this.log.info("Profile cancelled.");
            return undefined;
          }
          throw error;
        } finally {
          progressListener.dispose();
        }
      },
    );
  }

  private showResult(result: ProfileResult): void {
    const inWorkspace = result.lines.filter((line) => isWorkspaceFile(line.uri));
    const dropped = result.lines.length - inWorkspace.length;
    if (dropped > 0) {
      this.log.info(`Not decorating ${dropped} line(s) outside the workspace.`);
    }
    if (readSettings().showInlineTimings) {
      this.decorations.show(inWorkspace);
    }
    this.status.result(result.status.text, result.status.tooltip);
    this.log.info(`Profile done: ${result.summary}.`);
    this.log.info(`Run ${result.runId}, in ${result.runDir}`);
    this.shown(result.runId);
  }
}

function targetFrom(arg: unknown): ProfileTarget | string {
  if (arg !== undefined && arg !== null && !(arg instanceof vscode.Uri)) {
    const candidate = arg as Partial<ProfileTarget>;
    const position = candidate.position;
    if (
      typeof candidate.uri === "string" &&
      position &&
      Number.isInteger(position.line) &&
      Number.isInteger(position.character)
    ) {
      return { uri: candidate.uri, position: { line: position.line, character: position.character } };
    }
    return "Stepscope: Profile This Step needs {uri, position: {line, character}}.";
  }
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== "python") {
    return "Stepscope: open a Python file and put the cursor in the step loop to profile it.";
  }
  if (editor.document.uri.scheme !== "file") {
    return "Stepscope: save the file to disk first; Stepscope profiles files in the workspace.";
  }
  const cursor = editor.selection.active;
  return {
    uri: editor.document.uri.toString(),
    position: { line: cursor.line, character: cursor.character },
  };
}

function isWorkspaceFile(uri: string): boolean {
  try {
    const parsed = vscode.Uri.parse(uri, true);
    return parsed.scheme === "file" && vscode.workspace.getWorkspaceFolder(parsed) !== undefined;
  } catch {
    return false;
  }
}

function isCancellation(error: unknown): boolean {
  if (error instanceof vscode.CancellationError) {
    return true;
  }
  // -32800: RequestCancelled in JSON-RPC / LSP.
  return error instanceof ResponseError && error.code === -32800;
}
