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
  /** Lines below this share of the step get no inline label (0..1). */
  minShare: number;
  /** Runs kept in .stepscope/runs after a profile (0: all). */
  runsKeep: number;
  traceServer: "off" | "messages" | "verbose";
  profile: ProfileSettings;
  /** `stepscope.measure.*`: Measure This Step's passes, warm-up, processes, seed and tolerance, by
   * setting name, checked by the server as `stepscope.profile.*` is. */
  measure: ProfileSettings;
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
    minShare: clamp(config.get<number>("inline.minShare", 0.01), 0, 1, 0.01),
    runsKeep: Math.floor(clamp(config.get<number>("runs.keep", 0), 0, Number.MAX_SAFE_INTEGER, 0)),
    traceServer: config.get<Settings["traceServer"]>("trace.server", "off"),
    profile: readProfileSettings(resource),
    measure: settingsOfSection(vscode.workspace.getConfiguration(`${SECTION}.measure`, resource)),
  };
}

/** A number setting within [lo, hi]; anything else (text, NaN) reads as its default. */
function clamp(value: unknown, lo: number, hi: number, fallback: number): number {
  return typeof value === "number" && Number.isFinite(value) ? Math.min(hi, Math.max(lo, value)) : fallback;
}

function readProfileSettings(resource?: vscode.Uri): ProfileSettings {
  return settingsOfSection(vscode.workspace.getConfiguration(`${SECTION}.profile`, resource));
}

/** True when a configuration change touches something the server is started with. */
export function affectsServer(event: vscode.ConfigurationChangeEvent): boolean {
  // `trace.server` is applied by the language client itself without a restart; `profile.*` and
  // `measure.*` are sent with every profile and measure request.
  return event.affectsConfiguration(`${SECTION}.interpreter`);
}
