// "Stepscope: Profile This Step" and "Stepscope: Measure This Step": asks the user once per workspace
// whether the step may run for real, asks the server which step the cursor (or the lens) is on, a
// loop or a step function (the progress is titled with it), runs the server's command (`stepscope.profile`, `stepscope.measure`) with its
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
import { readSettings, Settings } from "./settings";
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

/** What the command receives from a CodeLens; without it, the active editor's cursor is used.
 * `function`: the lens of a step function, or of a call that runs one (`trainer.fit(model)`): each
 * call of it is a step, named as `--function` takes it. */
interface ProfileTarget {
  uri: string;
  position: { line: number; character: number };
  function?: string;
  /** this run only: warm-up steps instead of stepscope.profile.warmup (a finding's next check) */
  warmup?: number;
}

type StepResult = ProfileResult | MeasureStepResult;

/** The run in progress, of any command (profile, measure, try): one at a time, since a run beside
 * another would time the other's load. Its `doing` word ("profiling"), or undefined. */
export const inProgress: { doing: string | undefined } = { doing: undefined };

/** Restricted mode keeps to static checks: running the user's program needs a trusted workspace. */
export async function trustedToRun(verb: string): Promise<boolean> {
  if (vscode.workspace.isTrusted) {
    return true;
  }
  const choice = await vscode.window.showWarningMessage(
    `Stepscope runs your program to ${verb} it, so it works only in a trusted workspace. Static checks keep working in restricted mode.`,
    "Manage Workspace Trust",
  );
  if (choice === "Manage Workspace Trust") {
    await vscode.commands.executeCommand("workbench.trust.manage");
  }
  return false;
}

/** The interpreter and launch configuration that run the program of `uri` (the launch configuration's
 * interpreter first, as the debugger would); undefined after showing why there is none. */
export async function programFor(
  uri: vscode.Uri,
  settings: Settings,
  log: vscode.LogOutputChannel,
): Promise<{ python: string; launch?: LaunchOptions } | undefined> {
  const resolved = launchFor(uri);
  if (resolved && "problem" in resolved) {
    void vscode.window.showErrorMessage(`Stepscope: ${resolved.problem}.`);
    return undefined;
  }
  const launch: LaunchOptions | undefined = resolved?.options;
  if (launch?.python) {
    return { python: launch.python, launch };
  }
  try {
    return { python: (await resolveInterpreter(uri, settings, log)).path, launch };
  } catch (error) {
    if (error instanceof InterpreterProblem) {
      void showInterpreterProblem(error.message, log);
      return undefined;
    }
    throw error;
  }
}

/** The step runs for real (optimizer steps, writes): ask once per workspace, before the first run. */
export async function confirmRealRun(state: vscode.Memento, verb: string, title: string): Promise<boolean> {
  if (state.get<boolean>(REAL_RUN_CONFIRMED)) {
    return true;
  }
  const button = capitalized(verb);
  const choice = await vscode.window.showWarningMessage(
    `${button} ${title}? Stepscope runs your program for real to time its step.`,
    {
      modal: true,
      detail: `The step performs real updates (optimizer steps, file writes): ${verb} an experimental state, ` +
        "never weights you must keep. Your program sees STEPSCOPE_RUN=1 and can skip saving. " +
        "Stepscope will not ask again in this workspace.",
    },
    button,
  );
  if (choice !== button) {
    return false;
  }
  await state.update(REAL_RUN_CONFIRMED, true);
  return true;
}

/** Runs the server's `command` with its progress in a cancellable notification titled `title`;
 * resolves to its answer, or to undefined when the user cancelled it. */
export function requestWithProgress(
  client: LanguageClient,
  log: vscode.LogOutputChannel,
  title: string,
  command: string,
  argument: object,
  verb: string,
): Thenable<unknown> {
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title, cancellable: true },
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
          log.info(`${capitalized(verb)} cancelled; asking the server to stop the program.`);
          // $/cancelRequest does not reach a running command's handler; the progress's own cancel
          // does (the server watches its token and stops the program).
          void client.sendNotification(WorkDoneProgressCancelNotification.type, { token: workDoneToken });
          setTimeout(() => resolve("cancelled"), CANCEL_GRACE_MS);
        });
      });
      try {
        const response = client.sendRequest(
          ExecuteCommandRequest.type,
          { command, arguments: [argument], workDoneToken },
          cancellation,
        );
        const outcome = await Promise.race([response, cancelled]);
        return outcome === "cancelled" ? undefined : outcome;
      } catch (error) {
        if (cancellation.isCancellationRequested || isCancellation(error)) {
          log.info(`${capitalized(verb)} cancelled.`);
          return undefined;
        }
        throw error;
      } finally {
        progressListener.dispose();
      }
    },
  );
}

export class ProfileCommand {

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
    if (!(await trustedToRun(this.mode.verb))) {
      return;
    }
    if (inProgress.doing) {
      void vscode.window.showInformationMessage(`Stepscope is already ${inProgress.doing}; cancel that run first.`);
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
    const program = await programFor(uri, settings, this.log);
    if (!program) {
      return;
    }
    const { python, launch } = program;

    // The loop a profile here would time: the title names it, and a cursor outside any step loop is
    // said before anything runs.
    let title: string;
    try {
      const step = await client.sendRequest<{ title?: unknown }>(RESOLVE_STEP_REQUEST, {
        uri: document.uri.toString(), position: target.position, function: target.function,
      });
      title = typeof step?.title === "string" ? step.title : `${path.basename(uri.fsPath)}:${target.position.line + 1}`;
    } catch (error) {
      void vscode.window.showErrorMessage(`Stepscope: ${firstLine(error)}`);
      return;
    }
    if (!(await confirmRealRun(this.state, this.mode.verb, title))) {
      return;
    }

    inProgress.doing = this.mode.doing;
    this.status.running(title, this.mode.doing);
    const doing = capitalized(this.mode.doing);
    this.log.info(`${doing} ${title} with ${python}` + (launch ? ` (launch configuration "${launch.name}").` : "."));
    const profile = this.mode.kind === "profile";
    try {
      const result = await this.request(client, title, {
        uri: document.uri.toString(),
        position: target.position,
        function: target.function,
        python,
        launch,
        ...this.modeSettings(settings, target.warmup),
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
      inProgress.doing = undefined;
      this.onRunsChanged();
    }
  }

  /** The settings sent with the command, read for the file's folder: a change applies to the next run.
   * A measure sends its own (`stepscope.measure.*`) and the profile's, whose time limit it shares. */
  private modeSettings(settings: Settings, warmup?: number): Record<string, unknown> {
    if (this.mode.kind === "measure") {
      return { measure: settings.measure, profile: settings.profile };
    }
    const profile = warmup === undefined ? settings.profile : { ...settings.profile, warmup };
    return { profile, keep: settings.runsKeep };
  }

  /** Sends the request; resolves to undefined when the user cancelled it. */
  private async request(client: LanguageClient, title: string, argument: object): Promise<StepResult | undefined> {
    const outcome = await requestWithProgress(client, this.log, `Stepscope: ${this.mode.doing} ${title}`,
      this.mode.serverCommand, argument, this.mode.verb);
    if (outcome === undefined) {
      return undefined;
    }
    return this.mode.kind === "measure" ? parseMeasureResult(outcome) : parseProfileResult(outcome);
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
      Number.isInteger(position.character) &&
      (candidate.function === undefined || (typeof candidate.function === "string" && candidate.function !== "")) &&
      (candidate.warmup === undefined || (Number.isInteger(candidate.warmup) && candidate.warmup >= 0))
    ) {
      return {
        uri: candidate.uri,
        position: { line: position.line, character: position.character },
        ...(candidate.function ? { function: candidate.function } : {}),
        ...(candidate.warmup !== undefined && mode.kind === "profile" ? { warmup: candidate.warmup } : {}),
      };
    }
    return `Stepscope: ${mode.name} needs {uri, position: {line, character}, function?, warmup?}.`;
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
