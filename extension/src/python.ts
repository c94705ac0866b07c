// Finds the Python interpreter that runs the Stepscope server and the user's program.
// Order: the `stepscope.interpreter` setting, then the interpreter selected in the Python
// extension, then `python3` / `python` on PATH. Python 3.10 or newer is required.
import * as cp from "child_process";
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import { Settings } from "./settings";

export const MIN_VERSION: readonly [number, number] = [3, 10];
const PYTHON_EXTENSION_ID = "ms-python.python";

export interface Interpreter {
  /** Absolute path of the executable (a venv's python stays the venv's python). */
  path: string;
  version: [number, number, number];
  implementation: string;
  /** Why this interpreter was chosen, for the log. */
  reason: string;
}

/** A problem the user has to act on; `message` is one line meant for a notification. */
export class InterpreterProblem extends Error {}

/** The part of the Python extension's API that Stepscope uses. */
interface PythonEnvironmentsApi {
  getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string };
  resolveEnvironment(
    env: { id: string; path: string } | string,
  ): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
  onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
}

async function pythonExtensionApi(): Promise<PythonEnvironmentsApi | undefined> {
  const extension = vscode.extensions.getExtension(PYTHON_EXTENSION_ID);
  if (!extension) {
    return undefined;
  }
  try {
    if (!extension.isActive) {
      await extension.activate();
    }
    const environments = (extension.exports as { environments?: PythonEnvironmentsApi })
      ?.environments;
    return environments ?? undefined;
  } catch {
    return undefined;
  }
}

export function isPythonExtensionInstalled(): boolean {
  return vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined;
}

/** Fires when the interpreter selected in the Python extension changes. */
export async function onDidChangePythonInterpreter(
  listener: () => void,
): Promise<vscode.Disposable | undefined> {
  const api = await pythonExtensionApi();
  return api?.onDidChangeActiveEnvironmentPath(() => listener());
}

export async function resolveInterpreter(
  resource: vscode.Uri | undefined,
  settings: Settings,
  log: vscode.LogOutputChannel,
): Promise<Interpreter> {
  if (settings.interpreter) {
    // The user named an interpreter: use it or say why not, never fall back silently.
    return probeOrExplain(
      settings.interpreter,
      `stepscope.interpreter in the ${settings.interpreterScope} settings`,
    );
  }

  const api = await pythonExtensionApi();
  if (api) {
    const selected = await interpreterFromPythonExtension(api, resource);
    if (selected && allowedInThisWorkspace(selected, log)) {
      return probeOrExplain(selected, "selected in the Python extension");
    }
    if (!selected) {
      log.info("The Python extension has no interpreter selected; looking on PATH.");
    }
  }

  for (const name of ["python3", "python"]) {
    const found = findOnPath(name);
    if (found && allowedInThisWorkspace(found, log)) {
      return probeOrExplain(found, `${name} found on PATH`);
    }
  }
  throw new InterpreterProblem(
    `Stepscope needs Python ${MIN_VERSION.join(".")} or newer and found none: select an interpreter or set stepscope.interpreter.`,
  );
}

async function interpreterFromPythonExtension(
  api: PythonEnvironmentsApi,
  resource: vscode.Uri | undefined,
): Promise<string | undefined> {
  try {
    const active = api.getActiveEnvironmentPath(resource);
    const resolved = await api.resolveEnvironment(active);
    return resolved?.executable.uri?.fsPath ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * In restricted mode, an interpreter inside the workspace (a committed venv, say) is code the
 * untrusted folder supplied; Stepscope does not start it.
 */
function allowedInThisWorkspace(executable: string, log: vscode.LogOutputChannel): boolean {
  if (vscode.workspace.isTrusted) {
    return true;
  }
  const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(executable));
  if (folder) {
    log.warn(`Restricted mode: not starting ${executable}, it lies inside the untrusted folder ${folder.uri.fsPath}.`);
    return false;
  }
  return true;
}

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) {
      continue;
    }
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) {
        return candidate;
      }
    } catch {
      // not here; keep looking
    }
  }
  return undefined;
}

const PROBE = [
  "import json, sys",
  "print(json.dumps({'executable': sys.executable, 'version': list(sys.version_info[:3]),",
  "                  'implementation': sys.implementation.name}))",
].join("\n");

async function probeOrExplain(executable: string, reason: string): Promise<Interpreter> {
  if (!path.isAbsolute(executable)) {
    const found = findOnPath(executable);
    if (!found) {
      throw new InterpreterProblem(`Stepscope cannot find the interpreter "${executable}" (${reason}).`);
    }
    executable = found;
  }
  if (!fs.existsSync(executable)) {
    throw new InterpreterProblem(`Stepscope cannot find the interpreter ${executable} (${reason}).`);
  }
  let probed: { executable: string; version: number[]; implementation: string };
  try {
    const stdout = await execFile(executable, ["-I", "-c", PROBE]);
    probed = JSON.parse(stdout.trim().split("\n").pop() ?? "");
  } catch (error) {
    throw new InterpreterProblem(
      `Stepscope could not run the interpreter ${executable} (${reason}): ${firstLine(error)}`,
    );
  }
  const [major, minor, micro] = probed.version;
  if (major < MIN_VERSION[0] || (major === MIN_VERSION[0] && minor < MIN_VERSION[1])) {
    throw new InterpreterProblem(
      `Stepscope needs Python ${MIN_VERSION.join(".")} or newer; ${executable} (${reason}) is Python ${major}.${minor}.${micro}.`,
    );
  }
  // Keep the path as given (a venv's python), not the resolved symlink: the venv is what matters.
  return {
    path: executable,
    version: [major, minor, micro],
    implementation: probed.implementation,
    reason,
  };
}

function execFile(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    cp.execFile(file, args, { timeout: 20_000, encoding: "utf8" }, (error, stdout, stderr) => {
      if (error) {
        reject(new Error(stderr.trim() || error.message));
      } else {
        resolve(stdout);
      }
    });
  });
}

export function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split("\n").find((line) => line.trim())?.trim() ?? "unknown error";
}
