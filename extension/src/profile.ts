// "Stepscope: Profile This Step": asks the user once per workspace whether the step may run for real,
// asks the server which loop a profile at the cursor times (the progress is titled with it), profiles
// it with its progress in a cancellable notification, then shows the result. A failed or cancelled
// profile leaves the last good run's figures and status item in place and says what happened.
import { randomUUID } from "crypto";
import * as path from "path";
import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  LanguageClient,
  ResponseError,
  WorkDoneProgress,
  WorkDoneProgressCancelNotification,
} from "vscode-languageclient/node";
import { FigureSync } from "./figures";
import { LaunchOptions, launchFor } from "./launch";
import { firstLine, InterpreterProblem, resolveInterpreter } from "./python";
import { parseProfileResult, ProfileResult } from "./result";
import { ServerController, showErrorWithLogs, showInterpreterProblem } from "./server";
import { ProfileSettings, readSettings } from "./settings";
import { StepStatus } from "./statusBar";

export const PROFILE_COMMAND = "stepscope.profileStep";
const SERVER_PROFILE_COMMAND = "stepscope.profile";
const RESOLVE_STEP_REQUEST = "stepscope/resolveStep";
/** After a cancel, how long to wait for the server to confirm before closing the notification. */
const CANCEL_GRACE_MS = 15_000;
/** Remembered per workspace once the user has said the step may run for real. */
const REAL_RUN_CONFIRMED = "stepscope.realRunConfirmed";

/** What the command receives from a CodeLens; without it, the active editor's cursor is used. */
interface ProfileTarget {
  uri: string;
  position: { line: number; character: number };
}

export class ProfileCommand {
  private running = false;

  constructor(
    private readonly server: ServerController,
    private readonly figures: FigureSync,
    private readonly status: StepStatus,
    private readonly log: vscode.LogOutputChannel,
    private readonly state: vscode.Memento,
    private readonly onRunsChanged: () => void,
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

    // The loop a profile here would time: the title names it, and a cursor outside any step loop is
    // said before anything runs.
    let title: string;
    try {
      const step = await client.sendRequest<{ title?: unknown }>(RESOLVE_STEP_REQUEST, {
        uri: document.uri.toString(), position: target.position,
      });
      title = typeof step?.title === "string" ? step.title : `${path.basename(uri.fsPath)}:${target.position.line + 1}`;
    } catch (error) {
      void vscode.window.showErrorMessage(`Stepscope: ${firstLine(error)}`);
      return;
    }
    if (!(await this.confirmRealRun(title))) {
      return;
    }

    this.running = true;
    this.status.running(title);
    this.log.info(`Profiling ${title} with ${python}` + (launch ? ` (launch configuration "${launch.name}").` : "."));
    try {
      const result = await this.request(client, title, {
        uri: document.uri.toString(),
        position: target.position,
        python,
        launch,
        profile: settings.profile,
        confirmed: true,
        keep: settings.runsKeep,
      });
      if (result) {
        this.showResult(result);
      } else {
        this.status.ended("was cancelled");
        void vscode.window.showInformationMessage(
          "Stepscope: the profile was cancelled; the figures shown are from the last good run.");
      }
    } catch (error) {
      const reason = firstLine(error);
      this.status.ended("failed");
      this.log.error(`Profile failed: ${reason}`);
      const folder = runDirOf(error);
      if (folder) {
        this.log.info(`The failed run's folder: ${folder} (its program.log has the program's output).`);
      }
      void showErrorWithLogs(`Stepscope: ${reason}. The figures shown, if any, are from the last good run.`, this.log);
    } finally {
      this.running = false;
      this.onRunsChanged();
    }
  }

  /** The step runs for real (optimizer steps, writes): ask once per workspace, before the first run. */
  private async confirmRealRun(title: string): Promise<boolean> {
    if (this.state.get<boolean>(REAL_RUN_CONFIRMED)) {
      return true;
    }
    const choice = await vscode.window.showWarningMessage(
      `Profile ${title}? Stepscope runs your program for real to time its step.`,
      {
        modal: true,
        detail: "The step performs real updates (optimizer steps, file writes): profile an experimental state, " +
          "never weights you must keep. Your program sees STEPSCOPE_RUN=1 and can skip saving. " +
          "Stepscope will not ask again in this workspace.",
      },
      "Profile",
    );
    if (choice !== "Profile") {
      return false;
    }
    await this.state.update(REAL_RUN_CONFIRMED, true);
    return true;
  }

  /** Sends the request; resolves to undefined when the user cancelled it. */
  private request(
    client: LanguageClient,
    title: string,
    argument: {
      uri: string;
      position: ProfileTarget["position"];
      python: string;
      launch?: LaunchOptions;
      profile: ProfileSettings;
      confirmed: boolean;
      keep: number;
    },
  ): Thenable<ProfileResult | undefined> {
    return vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: `Stepscope: profiling ${title}`,
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
            // $/cancelRequest does not reach a running command's handler; the progress's own cancel
            // does (the server watches its token and stops the program).
            void client.sendNotification(WorkDoneProgressCancelNotification.type, { token: workDoneToken });
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
    // The server has told the figures of each document that changed (stepscope/figuresChanged); ask
    // for the visible ones too, so a label never waits on a notification.
    void this.figures.refreshVisible();
    this.status.result(result.status.text, result.status.tooltip, result.runId);
    this.log.info(`Profile done: ${result.summary}.`);
    this.log.info(`Run ${result.runId}, in ${result.runDir}`);
    this.shown(result.runId);
  }
}

function runDirOf(error: unknown): string | undefined {
  const data = error instanceof ResponseError ? (error.data as { runDir?: unknown } | undefined) : undefined;
  return typeof data?.runDir === "string" ? data.runDir : undefined;
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

function isCancellation(error: unknown): boolean {
  if (error instanceof vscode.CancellationError) {
    return true;
  }
  // -32800: RequestCancelled in JSON-RPC / LSP.
  return error instanceof ResponseError && error.code === -32800;
}
