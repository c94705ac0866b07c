// Every Stepscope setting is read here, so the rest of the client never touches the raw configuration.
import * as os from "os";
import * as vscode from "vscode";
import { chooseInterpreter, settingsOfSection } from "./settingsRules";

export const SECTION = "stepscope";

export interface Settings {
  /** Interpreter path from the settings; empty when none is set. */
  interpreter: string;
  /** Where `interpreter` came from, for the log. */
  interpreterScope: "user" | "workspace" | "none";
  showInlineTimings: boolean;
  traceServer: "off" | "messages" | "verbose";
  profile: ProfileSettings;
}

/**
 * `stepscope.profile.*`: what Profile This Step captures, as the flags of `stepscope profile`, by
 * setting name (`warmup`, `allLines`, ...). The names are not listed here: they are every setting
 * package.json declares under the section, and package.json is tested against the one declaration
 * of the options (server/stepscope/capture/options.py). VS Code hands over whatever settings.json
 * holds; the server checks names and values with the CLI's own checks and refuses a bad one in one
 * line naming the setting.
 */
export type ProfileSettings = Record<string, unknown>;

/**
 * Reads the settings for one resource. `config.get` returns package.json's default for a setting the
 * user did not set, so no default is repeated here. In restricted mode the interpreter is taken from
 * the user settings only (settingsRules.ts).
 */
export function readSettings(resource?: vscode.Uri): Settings {
  const config = vscode.workspace.getConfiguration(SECTION, resource);
  const chosen = chooseInterpreter(config.inspect<string>("interpreter"), vscode.workspace.isTrusted, os.homedir());
  return {
    interpreter: chosen.interpreter,
    interpreterScope: chosen.scope,
    showInlineTimings: config.get<boolean>("showInlineTimings", true),
    traceServer: config.get<Settings["traceServer"]>("trace.server", "off"),
    profile: readProfileSettings(resource),
  };
}

function readProfileSettings(resource?: vscode.Uri): ProfileSettings {
  return settingsOfSection(vscode.workspace.getConfiguration(`${SECTION}.profile`, resource));
}

/** True when a configuration change touches something the server is started with. */
export function affectsServer(event: vscode.ConfigurationChangeEvent): boolean {
  // `trace.server` is applied by the language client itself without a restart; `profile.*` is
  // sent with every profile request.
  return event.affectsConfiguration(`${SECTION}.interpreter`);
}
