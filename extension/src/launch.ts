// Reuses the user's launch configuration for the profiled program: when .vscode/launch.json has a
// Python configuration that runs this file, its interpreter, args, env, envFile and cwd apply to the
// run. The rules are in launchConfig.ts; this module reads what they need from the editor.
import * as fs from "fs";
import * as os from "os";
import * as vscode from "vscode";
import { LaunchResolution, resolveLaunch } from "./launchConfig";

export type { LaunchOptions } from "./launchConfig";

/** The launch configuration that runs `file`, resolved; undefined when none does. */
export function launchFor(file: vscode.Uri): LaunchResolution {
  const folder = vscode.workspace.getWorkspaceFolder(file);
  if (!folder) {
    return undefined;
  }
  const configurations = vscode.workspace.getConfiguration("launch", folder.uri).get<unknown>("configurations", []);
  return resolveLaunch(configurations, {
    file: file.fsPath,
    folder: { name: folder.name, path: folder.uri.fsPath },
    folders: (vscode.workspace.workspaceFolders ?? []).map((f) => ({ name: f.name, path: f.uri.fsPath })),
    env: process.env,
    home: os.homedir(),
    readFile: (path) => {
      try {
        return fs.readFileSync(path, "utf8");
      } catch {
        return undefined;
      }
    },
    isFile: (path) => {
      try {
        return fs.statSync(path).isFile();
      } catch {
        return false;
      }
    },
  });
}
