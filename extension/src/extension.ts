// Entry point: creates the output channel, the server controller, decorations and commands, and
// restarts the server when the interpreter or Stepscope's settings change.
import * as vscode from "vscode";
import { TimingDecorations } from "./decorations";
import { TracePanel } from "./panel/host";
import { ProfileCommand } from "./profile";
import { onDidChangePythonInterpreter } from "./python";
import { ServerController } from "./server";
import { ShareTraceCommand } from "./share";
import { affectsServer, readSettings, SECTION } from "./settings";
import { StepStatus } from "./statusBar";

let controller: ServerController | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  // One channel for everything: the client's output and its message trace.
  const log = vscode.window.createOutputChannel("Stepscope", { log: true });
  context.subscriptions.push(log);
  log.info(`Stepscope ${context.extension.packageJSON.version} activating (workspace trusted: ${vscode.workspace.isTrusted}).`);

  controller = new ServerController(context.extensionPath, log);
  const decorations = new TimingDecorations(readSettings().showInlineTimings);
  const status = new StepStatus();
  const panel = new TracePanel(vscode.Uri.joinPath(context.extensionUri, "panel", "dist"), () => controller?.languageClient, log);
  const profile = new ProfileCommand(controller, decorations, status, log, (runId) => panel.follow(runId));
  context.subscriptions.push(decorations, status);

  context.subscriptions.push(
    profile.register(),
    panel.register(),
    new ShareTraceCommand(controller, log).register(),
    vscode.commands.registerCommand("stepscope.clearTimings", () => decorations.clear()),
    vscode.commands.registerCommand("stepscope.restart", () =>
      controller?.requestRestart("the Restart Server command", true),
    ),
    vscode.commands.registerCommand("stepscope.showLogs", () => log.show()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (affectsServer(event)) {
        controller?.requestRestart("settings changed");
      }
      if (event.affectsConfiguration(`${SECTION}.showInlineTimings`)) {
        decorations.setEnabled(readSettings().showInlineTimings);
      }
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => controller?.requestRestart("workspace folders changed")),
    // Trusting the folder may allow an interpreter from the workspace settings.
    vscode.workspace.onDidGrantWorkspaceTrust(() => controller?.requestRestart("workspace trusted")),
  );

  const pythonListener = await onDidChangePythonInterpreter(() =>
    controller?.requestRestart("the Python extension's interpreter changed"),
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
