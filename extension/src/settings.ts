// Every Stepscope setting is read here, so the rest of the client never touches the raw configuration.
import * as vscode from "vscode";

export const SECTION = "stepscope";

export interface Settings {
  /** Interpreter path from the settings; empty when none is set. */
  interpreter: string;
  /** Where `interpreter` came from, for the log. */
  interpreterScope: "user" | "workspace" | "none";
  showInlineTimings: boolean;
  traceServer: "off" | "messages" | "verbose";
}

/**
 * Reads the settings for one resource. In restricted mode the interpreter is taken from the user
 * settings only: a workspace value could point at an executable the untrusted folder supplied.
 * VS Code already does this for `restrictedConfigurations`; checking again keeps it true everywhere.
 */
export function readSettings(resource?: vscode.Uri): Settings {
  const config = vscode.workspace.getConfiguration(SECTION, resource);
  const inspected = config.inspect<string>("interpreter");
  const workspaceValue =
    inspected?.workspaceFolderValue ?? inspected?.workspaceValue ?? undefined;
  const userValue = inspected?.globalValue ?? undefined;

  let interpreter = "";
  let interpreterScope: Settings["interpreterScope"] = "none";
  if (vscode.workspace.isTrusted && workspaceValue && workspaceValue.trim()) {
    interpreter = workspaceValue.trim();
    interpreterScope = "workspace";
  } else if (userValue && userValue.trim()) {
    interpreter = userValue.trim();
    interpreterScope = "user";
  }

  return {
    interpreter: expandHome(interpreter),
    interpreterScope,
    showInlineTimings: config.get<boolean>("showInlineTimings", true),
    traceServer: config.get<Settings["traceServer"]>("trace.server", "off"),
  };
}

/** True when a configuration change touches something the server is started with. */
export function affectsServer(event: vscode.ConfigurationChangeEvent): boolean {
  // `trace.server` is applied by the language client itself without a restart.
  return event.affectsConfiguration(`${SECTION}.interpreter`);
}

function expandHome(p: string): string {
  if (p === "~" || p.startsWith("~/")) {
    return (process.env.HOME ?? "") + p.slice(1);
  }
  return p;
}
