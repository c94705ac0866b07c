// Reuses the user's launch configuration for the profiled program: when .vscode/launch.json has a
// Python configuration that runs this file (or a module), its args, env and cwd apply to the run.
import * as path from "path";
import * as vscode from "vscode";

/** What the server accepts as `launch` in the stepscope.profile arguments. */
export interface LaunchOptions {
  name: string;
  program?: string;
  module?: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
}

interface PythonLaunchConfiguration {
  type?: string;
  request?: string;
  name?: string;
  program?: string;
  module?: string;
  args?: unknown;
  env?: unknown;
  cwd?: string;
}

/** The launch configuration that runs `file`, if there is one (else undefined). */
export function launchFor(file: vscode.Uri): LaunchOptions | undefined {
  const folder = vscode.workspace.getWorkspaceFolder(file);
  if (!folder) {
    return undefined;
  }
  const configurations = vscode.workspace
    .getConfiguration("launch", folder.uri)
    .get<PythonLaunchConfiguration[]>("configurations", []);
  const expand = (value: string): string =>
    value
      .replace(/\$\{workspaceFolder\}/g, folder.uri.fsPath)
      .replace(/\$\{file\}/g, file.fsPath)
      .replace(/\$\{fileDirname\}/g, path.dirname(file.fsPath));
  for (const config of configurations) {
    if (!config || !["python", "debugpy"].includes(config.type ?? "") || config.request !== "launch") {
      continue;
    }
    const program = config.program ? path.resolve(folder.uri.fsPath, expand(config.program)) : undefined;
    if (program !== file.fsPath && !config.module) {
      continue;
    }
    const args = Array.isArray(config.args) ? config.args.filter((a): a is string => typeof a === "string").map(expand) : undefined;
    const env: Record<string, string> = {};
    if (config.env && typeof config.env === "object") {
      for (const [key, value] of Object.entries(config.env as Record<string, unknown>)) {
        if (typeof value === "string") {
          env[key] = expand(value);
        }
      }
    }
    return {
      name: config.name ?? "launch configuration",
      program,
      module: config.module,
      args,
      env,
      cwd: config.cwd ? path.resolve(folder.uri.fsPath, expand(config.cwd)) : undefined,
    };
  }
  return undefined;
}
