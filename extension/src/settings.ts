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
  profile: ProfileSettings;
}

/**
 * `stepscope.profile.*`: what Profile This Step captures, as the flags of `stepscope profile`.
 * The types are those package.json declares, but VS Code hands over whatever settings.json holds;
 * the server checks the values (with the CLI's own checks) and refuses a bad one in one line
 * naming the setting.
 */
export interface ProfileSettings {
  wait: number;
  warmup: number;
  active: number;
  repeat: number;
  depth: number;
  /** Seconds; 0: no limit. */
  timeout: number;
  /** Processes, one per rank (DDP scripts). */
  nproc: number;
  shapes: boolean;
  stack: boolean;
  memory: boolean;
  allLines: boolean;
}

/** The defaults, the CLI's; package.json declares the same. */
const PROFILE_DEFAULTS: ProfileSettings = {
  wait: 1,
  warmup: 2,
  active: 5,
  repeat: 1,
  depth: 2,
  timeout: 0,
  nproc: 1,
  shapes: false,
  stack: false,
  memory: false,
  allLines: false,
};

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
    profile: readProfileSettings(config),
  };
}

function readProfileSettings(config: vscode.WorkspaceConfiguration): ProfileSettings {
  const get = <K extends keyof ProfileSettings>(key: K): ProfileSettings[K] =>
    config.get<ProfileSettings[K]>(`profile.${key}`, PROFILE_DEFAULTS[key]);
  return {
    wait: get("wait"),
    warmup: get("warmup"),
    active: get("active"),
    repeat: get("repeat"),
    depth: get("depth"),
    timeout: get("timeout"),
    nproc: get("nproc"),
    shapes: get("shapes"),
    stack: get("stack"),
    memory: get("memory"),
    allLines: get("allLines"),
  };
}

/** True when a configuration change touches something the server is started with. */
export function affectsServer(event: vscode.ConfigurationChangeEvent): boolean {
  // `trace.server` is applied by the language client itself without a restart; `profile.*` is
  // sent with every profile request.
  return event.affectsConfiguration(`${SECTION}.interpreter`);
}

function expandHome(p: string): string {
  if (p === "~" || p.startsWith("~/")) {
    return (process.env.HOME ?? "") + p.slice(1);
  }
  return p;
}
