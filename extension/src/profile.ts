// "Stepscope: Profile This Step" and "Stepscope: Measure This Step": asks the user once per workspace
// whether the step may run for real, asks the server which loop the cursor is in (the progress is
// titled with it), runs the server's command (`stepscope.profile`, `stepscope.measure`) with its
// progress in a cancellable notification, then shows the result. Both choose the step and start the
// program the same way (cursor or lens line, launch configuration, interpreter; trusted workspaces
// only), and one runs at a time (a measure beside a profile would time the other's load). A failed or
// cancelled run leaves the last good run's figures and status item in place and says why in one line.
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
import { MeasureStepResult, parseMeasureResult, parseProfileResult, ProfileResult } from "./result";
import { MEASURE_COMMAND, PROFILE_COMMAND, ServerController, showErrorWithLogs, showInterpreterProblem } from "./server";
import { ProfileSettings, readSettings, Settings } from "./settings";
import { StepStatus } from "./statusBar";

export { MEASURE_COMMAND, PROFILE_COMMAND };
const OPEN_PANEL_COMMAND = "stepscope.openPanel";

/** What differs between Profile This Step and Measure This Step. */
export interface StepMode {
  kind: "profile" | "measure";
  /** the editor's command (the palette, the lens) */
  command: string;
  /** the server's command it runs */
  serverCommand: string;
  name: string;
  /** "profile", "measure": the verb */
  verb: string;
  /** "profiling", "measuring" */
  doing: string;
}

export const PROFILE_MODE: StepMode = {
  kind: "profile", command: PROFILE_COMMAND, serverCommand: "stepscope.profile", name: "Profile This Step",
  verb: "profile", doing: "profiling",
};
export const MEASURE_MODE: StepMode = {
  kind: "measure", command: MEASURE_COMMAND, serverCommand: "stepscope.measure", name: "Measure This Step",
  verb: "measure", doing: "measuring",
};
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

type StepResult = ProfileResult | MeasureStepResult;

export class ProfileCommand {
  /** the run in progress, of either command: one at a time */
  private static running: StepMode | undefined;

  constructor(
    private readonly server: ServerController,
    private readonly figures: FigureSync,
    private readonly status: StepStatus,
    private readonly log: vscode.LogOutputChannel,
    private readonly state: vscode.Memento,
    private readonly onRunsChanged: () => void,
    /** the run now shown (the trace panel follows it; `measure`: a measure run) */
    private readonly shown: (runId: string, measure: boolean) => void = () => undefined,
    private readonly mode: StepMode = PROFILE_MODE,
  ) {}

  register(): vscode.Disposable {
    return vscode.commands.registerCommand(this.mode.command, (arg?: unknown) => this.run(arg));
  }

  async run(arg?: unknown): Promise<void> {
    const target = targetFrom(arg, this.mode);
    if (typeof target === "string") {
      void vscode.window.showErrorMessage(target);
      return;
    }
    if (!vscode.workspace.isTrusted) {
      // Profiling and measuring run the user's program; restricted mode keeps to static checks.
      const choice = await vscode.window.showWarningMessage(
        `Stepscope runs your program to ${this.mode.verb} it, so it works only in a trusted workspace. Static checks keep working in restricted mode.`,
        "Manage Workspace Trust",
      );
      if (choice === "Manage Workspace Trust") {
        await vscode.commands.executeCommand("workbench.trust.manage");
      }
      return;
    }
    if (ProfileCommand.running) {
      void vscode.window.showInformationMessage(`Stepscope is already ${ProfileCommand.running.doing}; cancel that run first.`);
      return;
    }
    const client = this.server.languageClient;
    if (!client) {
      void showErrorWithLogs(`Stepscope's server is not running, so it cannot ${this.mode.verb}.`, this.log);
      return;
    }

    const uri = vscode.Uri.parse(target.uri);
    const document = await vscode.workspace.openTextDocument(uri);
    // The program runs from disk: profile what the user sees.
    if (document.isDirty && !(await document.save())) {
      void vscode.window.showErrorMessage(`Stepscope: save ${path.basename(uri.fsPath)} before ${this.mode.doing} it.`);
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

    ProfileCommand.running = this.mode;
    this.status.running(title, this.mode.doing);
    const doing = capitalized(this.mode.doing);
    this.log.info(`${doing} ${title} with ${python}` + (launch ? ` (launch configuration "${launch.name}").` : "."));
    const profile = this.mode.kind === "profile";
    try {
      const result = await this.request(client, title, {
        uri: document.uri.toString(),
        position: target.position,
        python,
        launch,
        ...this.modeSettings(settings),
        confirmed: true,
      });
      if (result) {
        this.showResult(result);
      } else {
        this.status.ended("was cancelled", this.mode.verb);
        void vscode.window.showInformationMessage(profile
          ? "Stepscope: the profile was cancelled; the figures shown are from the last good run."
          : "Stepscope: the measure was cancelled; the last good result is kept.");
      }
    } catch (error) {
      const reason = firstLine(error);
      this.status.ended("failed", this.mode.verb);
      this.log.error(`${profile ? "Profile" : "Measure"} failed: ${reason}`);
      const folder = runDirOf(error);
      if (folder) {
        this.log.info(`The failed run's folder: ${folder} (its program.log has the program's output).`);
      }
      void showErrorWithLogs(profile
        ? `Stepscope: ${reason}. The figures shown, if any, are from the last good run.`
        : `Stepscope: Measure This Step failed: ${reason}. The last good result is kept.`, this.log);
    } finally {
      ProfileCommand.running = undefined;
      this.onRunsChanged();
    }
  }

  /** The settings sent with the command, read for the file's folder: a change applies to the next run.
   * A measure sends its own (`stepscope.measure.*`) and the profile's, whose time limit it shares. */
  private modeSettings(settings: Settings): Record<string, unknown> {
    if (this.mode.kind === "measure") {
      return { measure: settings.measure, profile: settings.profile };
    }
    return { profile: settings.profile, keep: settings.runsKeep };
  }

  /** The step runs for real (optimizer steps, writes): ask once per workspace, before the first run. */
  private async confirmRealRun(title: string): Promise<boolean> {
    if (this.state.get<boolean>(REAL_RUN_CONFIRMED)) {
      return true;
    }
    const verb = capitalized(this.mode.verb);
    const choice = await vscode.window.showWarningMessage(
      `${verb} ${title}? Stepscope runs your program for real to time its step.`,
      {
        modal: true,
        detail: `The step performs real updates (optimizer steps, file writes): ${this.mode.verb} an experimental state, ` +
          "never weights you must keep. Your program sees STEPSCOPE_RUN=1 and can skip saving. " +
          "Stepscope will not ask again in this workspace.",
      },
      verb,
    );
    if (choice !== verb) {
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
      profile?: ProfileSettings;
      measure?: ProfileSettings;
      confirmed: boolean;
      keep?: number;
    },
  ): Thenable<StepResult | undefined> {
    return vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: `Stepscope: ${this.mode.doing} ${title}`,
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
            this.log.info(`${capitalized(this.mode.verb)} cancelled; asking the server to stop the program.`);
            // $/cancelRequest does not reach a running command's handler; the progress's own cancel
            // does (the server watches its token and stops the program).
            void client.sendNotification(WorkDoneProgressCancelNotification.type, { token: workDoneToken });
            setTimeout(() => resolve("cancelled"), CANCEL_GRACE_MS);
          });
        });
        try {
          const response = client.sendRequest(
            ExecuteCommandRequest.type,
            { command: this.mode.serverCommand, arguments: [argument], workDoneToken },
            cancellation,
          );
          const outcome = await Promise.race([response, cancelled]);
          if (outcome === "cancelled") {
            return undefined;
          }
          return this.mode.kind === "measure" ? parseMeasureResult(outcome) : parseProfileResult(outcome);
        } catch (error) {
          if (cancellation.isCancellationRequested || isCancellation(error)) {
            this.log.info(`${capitalized(this.mode.verb)} cancelled.`);
            return undefined;
          }
          throw error;
        } finally {
          progressListener.dispose();
        }
      },
    );
  }

  private showResult(result: StepResult): void {
    if (!("lines" in result)) {
      // a measure run: its median, spread and noise flag, the machine; its distribution in the panel
      this.status.result(result.status.text, result.status.tooltip, result.runId);
      this.log.info(`Measure done: ${result.summary}.`);
      this.log.info(`Run ${result.runId}, in ${result.runDir}`);
      this.shown(result.runId, true);
      void vscode.window.showInformationMessage(`Stepscope: ${result.summary}.`, "Open in Panel").then((choice) => {
        if (choice === "Open in Panel") {
          void vscode.commands.executeCommand(OPEN_PANEL_COMMAND, { runId: result.runId, kind: "measure" });
        }
      });
      return;
    }
    // The server has told the figures of each document that changed (stepscope/figuresChanged); ask
    // for the visible ones too, so a label never waits on a notification.
    void this.figures.refreshVisible();
    this.status.result(result.status.text, result.status.tooltip, result.runId);
    this.log.info(`Profile done: ${result.summary}.`);
    this.log.info(`Run ${result.runId}, in ${result.runDir}`);
    this.shown(result.runId, false);
  }
}

function capitalized(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

function runDirOf(error: unknown): string | undefined {
  const data = error instanceof ResponseError ? (error.data as { runDir?: unknown } | undefined) : undefined;
  return typeof data?.runDir === "string" ? data.runDir : undefined;
}

function targetFrom(arg: unknown, mode: StepMode): ProfileTarget | string {
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
    return `Stepscope: ${mode.name} needs {uri, position: {line, character}}.`;
  }
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== "python") {
    return `Stepscope: open a Python file and put the cursor in the step loop to ${mode.verb} it.`;
  }
  if (editor.document.uri.scheme !== "file") {
    return `Stepscope: save the file to disk first; Stepscope ${mode.kind === "profile" ? "profiles" : "measures"} files in the workspace.`;
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
