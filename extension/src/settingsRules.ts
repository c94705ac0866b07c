// The rules behind the settings, as pure functions (settings.ts applies them to the editor's
// configuration; the unit tests apply them to plain values).

/** What VS Code's `inspect()` reports of the `stepscope.interpreter` setting. */
export interface InspectedInterpreter {
  globalValue?: string;
  workspaceValue?: string;
  workspaceFolderValue?: string;
}

export interface ChosenInterpreter {
  /** The path, `~` expanded; empty when none is set. */
  interpreter: string;
  /** Where it came from, for the log. */
  scope: "user" | "workspace" | "none";
}

/**
 * The interpreter setting to use. In restricted mode only the user settings count: a workspace
 * value could point at an executable the untrusted folder supplied. VS Code already does this for
 * `restrictedConfigurations`; checking again keeps it true everywhere. Blank values are unset.
 */
export function chooseInterpreter(inspected: InspectedInterpreter | undefined, trusted: boolean, home: string): ChosenInterpreter {
  const workspaceValue = inspected?.workspaceFolderValue ?? inspected?.workspaceValue;
  const userValue = inspected?.globalValue;
  if (trusted && typeof workspaceValue === "string" && workspaceValue.trim()) {
    return { interpreter: expandHome(workspaceValue.trim(), home), scope: "workspace" };
  }
  if (typeof userValue === "string" && userValue.trim()) {
    return { interpreter: expandHome(userValue.trim(), home), scope: "user" };
  }
  return { interpreter: "", scope: "none" };
}

export function expandHome(p: string, home: string): string {
  if (p === "~" || p.startsWith("~/")) {
    return home + p.slice(1);
  }
  return p;
}

/**
 * The settings of one section, by name, from what `getConfiguration(section)` returns: an object
 * holding every setting declared under the section (and any the user wrote there) beside its
 * methods (`get`, `has`, `inspect`, `update`).
 */
export function settingsOfSection(section: object): Record<string, unknown> {
  const settings: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(section)) {
    if (typeof value !== "function") {
      settings[name] = value;
    }
  }
  return settings;
}
