// Entry point: creates the output channel, the server controller, the MCP server definition, the
// inline labels, the runs view and the commands, and restarts the server when the interpreter or
// Stepscope's settings change.
import * as vscode from "vscode";
import { TimingDecorations } from "./decorations";
import { FigureSync } from "./figures";
import { McpServerProvider } from "./mcp";
import { TracePanel } from "./panel/host";
import { MEASURE_MODE, ProfileCommand, PROFILE_MODE } from "./profile";
import { onDidChangePythonInterpreter } from "./python";
import { normaliseUri } from "./heat";
import { DocumentFigures, parseProfileResult } from "./result";
import { RunsView } from "./runsView";
import { ServerController } from "./server";
import { OpenInPerfettoCommand, ShareTraceCommand } from "./share";
import { affectsServer, readSettings, SECTION } from "./settings";
import { MEASURE_STATUS, PROFILE_STATUS, StepStatus } from "./statusBar";
import { TryCommand } from "./tryFix";

let controller: ServerController | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  // One channel for everything: the client's output and its message trace.
  const log = vscode.window.createOutputChannel("Stepscope", { log: true });
  context.subscriptions.push(log);
  log.info(`Stepscope ${context.extension.packageJSON.version} activating (workspace trusted: ${vscode.workspace.isTrusted}).`);

  controller = new ServerController(context.extensionPath, log);
  const settings = readSettings();
  const decorations = new TimingDecorations(settings.showInlineTimings, settings.minShare);
  const figures = new FigureSync(decorations, log);
  const status = new StepStatus(PROFILE_STATUS);
  const measureStatus = new StepStatus(MEASURE_STATUS);
  const panel = new TracePanel(vscode.Uri.joinPath(context.extensionUri, "panel", "dist"), () => controller?.languageClient, log);
  const runs = new RunsView(() => controller?.languageClient, log, (shown) => {
    try {
      const result = parseProfileResult(shown);
      status.result(result.status.text, result.status.tooltip, result.runId);
      void figures.refreshVisible();
      panel.follow(result.runId);
    } catch (error) {
      log.warn(`The server's answer for the run shown: ${error instanceof Error ? error.message : error}`);
    }
  }, (deleted) => {
    status.forget(deleted);
    measureStatus.forget(deleted);
  });
  const followed = (runId: string, measure: boolean) => panel.follow(runId, measure);
  const profile = new ProfileCommand(controller, figures, status, log, context.workspaceState, () => runs.refresh(),
    followed, PROFILE_MODE);
  const measure = new ProfileCommand(controller, figures, measureStatus, log, context.workspaceState, () => runs.refresh(),
    followed, MEASURE_MODE);
  // The status item names the run whose labels the active editor shows: after a window reload too,
  // and when the active editor shows another file's run; the panel opened from it shows the same run.
  const showActive = (shown: DocumentFigures) => {
    const active = vscode.window.activeTextEditor?.document.uri.toString();
    if (!shown.runId || !shown.status || active === undefined || normaliseUri(active) !== normaliseUri(shown.uri)) return;
    status.shows(shown.status.text, shown.status.tooltip, shown.runId);
    panel.follow(shown.runId);
  };
  // agents (the editor's agent mode) get the MCP server from the same interpreter and bundle
  const mcp = new McpServerProvider(controller, log, context.extension.packageJSON.version);
  /** The interpreter or the folder changed: the language server restarts, the MCP definition follows. */
  const serverInputsChanged = (reason: string, force = false) => {
    controller?.requestRestart(reason, force);
    mcp.refresh(reason);
  };
  context.subscriptions.push(decorations, figures, status, measureStatus, mcp.register(), figures.onDidChange(showActive),
    vscode.window.onDidChangeActiveTextEditor((editor) => {
      if (editor?.document.languageId === "python") void figures.refresh(editor.document.uri);
    }));

  let clientListeners: vscode.Disposable | undefined;
  context.subscriptions.push(
    controller.onDidStart((client) => {
      clientListeners?.dispose();
      clientListeners = figures.attach(client);
      runs.refresh();
    }),
    new vscode.Disposable(() => clientListeners?.dispose()),
    profile.register(),
    measure.register(),
    runs.register(),
    panel.register(),
    new ShareTraceCommand(controller, log).register(),
    new OpenInPerfettoCommand(controller, log).register(),
    new TryCommand(controller, log, context.workspaceState, () => runs.refresh()).register(),
    vscode.commands.registerCommand("stepscope.clearTimings", () => decorations.clear()),
    vscode.commands.registerCommand("stepscope.restart", () =>
      controller?.requestRestart("the Restart Server command", true),
    ),
    vscode.commands.registerCommand("stepscope.showLogs", () => log.show()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (affectsServer(event)) {
        serverInputsChanged("settings changed");
      }
      if (event.affectsConfiguration(`${SECTION}.showInlineTimings`)) {
        decorations.setEnabled(readSettings().showInlineTimings);
      }
      if (event.affectsConfiguration(`${SECTION}.inline.minShare`)) {
        decorations.setMinShare(readSettings().minShare);
      }
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => serverInputsChanged("workspace folders changed")),
    // Trusting the folder may allow an interpreter from the workspace settings, and the CodeLens.
    vscode.workspace.onDidGrantWorkspaceTrust(() => controller?.requestRestart("workspace trusted", true)),
  );

  const pythonListener = await onDidChangePythonInterpreter(() =>
    serverInputsChanged("the Python extension's interpreter changed"),
  );
  if (pythonListener) {
    context.subscriptions.push(pythonListener);
  }

  await controller.start();
}

export async function deactivate(): Promise<void> {
  await controller?.dispose();
  controller = undefined;
}
