// Which launch configuration runs a file, and what it asks for: pure logic, no `vscode` import (launch.ts
// gathers the inputs from the editor; the unit tests give their own).
//
// A configuration is used only when it runs the profiled file: its `program` is the file, or its
// `module` resolves to the file (`pkg.train` → `pkg/train.py` or `pkg/train/__main__.py` under its
// `cwd` or the workspace folder). A configuration that runs a launcher module (torchrun:
// `torch.distributed.run`) runs the file when the file is among the launcher's arguments (a script
// path, or a module after torchrun's `-m`): the launcher's own arguments before it become the
// `launcher`, the ones after it the program's, and the server starts the ranks through torchrun.
// Its `python`, `envFile`, `env`, `args` and `cwd` apply, with the variables of VS Code's launch
// configurations expanded; a variable that cannot be expanded here (`${input:…}`, `${command:…}`,
// an unset `${env:…}` is fine: empty) is a problem said in one line.
import * as path from "path";

/** Modules that start the program's processes themselves (torchrun and its predecessor). */
export const LAUNCHER_MODULES = ["torch.distributed.run", "torch.distributed.launch"];

/** A launcher the program runs under: `python -m <module> <args…> <program> <program args…>`. */
export interface Launcher {
  module: string;
  args: string[];
}

/** What the server accepts as `launch` in the stepscope.profile arguments, plus the interpreter. */
export interface LaunchOptions {
  name: string;
  program?: string;
  module?: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  /** The configuration's `python`: the interpreter that runs the program. */
  python?: string;
  /** The launcher that starts the program's processes, when the configuration runs one. */
  launcher?: Launcher;
}

export interface WorkspaceFolderInfo {
  name: string;
  /** Absolute file-system path. */
  path: string;
}

/** Everything the resolution reads from outside, so that it stays a pure function of it. */
export interface LaunchContext {
  /** Absolute path of the file being profiled. */
  file: string;
  /** The workspace folder that holds the file. */
  folder: WorkspaceFolderInfo;
  /** Every workspace folder, for `${workspaceFolder:name}`. */
  folders: WorkspaceFolderInfo[];
  env: Record<string, string | undefined>;
  home: string;
  readFile(file: string): string | undefined;
  isFile(file: string): boolean;
}

export type LaunchResolution = { options: LaunchOptions } | { problem: string } | undefined;

interface PythonLaunchConfiguration {
  type?: unknown;
  request?: unknown;
  name?: unknown;
  program?: unknown;
  module?: unknown;
  args?: unknown;
  env?: unknown;
  envFile?: unknown;
  cwd?: unknown;
  python?: unknown;
}

class UnknownVariable extends Error {}

/** `value` with VS Code's launch variables replaced; throws UnknownVariable for one it cannot know. */
export function expandVariables(value: string, context: LaunchContext): string {
  return value.replace(/\$\{([^}]*)\}/g, (whole, name: string) => {
    const [kind, argument] = name.includes(":") ? [name.slice(0, name.indexOf(":")), name.slice(name.indexOf(":") + 1)] : [name, undefined];
    switch (kind) {
      case "userHome":
        return context.home;
      case "workspaceFolder":
        if (argument === undefined) {
          return context.folder.path;
        }
        {
          const named = context.folders.find((f) => f.name === argument);
          if (!named) {
            throw new UnknownVariable(`${whole} names no workspace folder`);
          }
          return named.path;
        }
      case "workspaceFolderBasename":
        return path.basename(context.folder.path);
      case "env":
        return context.env[argument ?? ""] ?? "";
      case "file":
        return context.file;
      case "fileDirname":
        return path.dirname(context.file);
      case "fileBasename":
        return path.basename(context.file);
      case "fileBasenameNoExtension":
        return path.basename(context.file, path.extname(context.file));
      case "fileExtname":
        return path.extname(context.file);
      case "relativeFile":
        return path.relative(context.folder.path, context.file);
      case "pathSeparator":
      case "/":
        return path.sep;
      default:
        throw new UnknownVariable(`${whole} cannot be expanded outside a debug session`);
    }
  });
}

/** The file a `python -m module` would run, looked for under each root in turn. */
export function moduleFile(module: string, roots: string[], isFile: (file: string) => boolean): string | undefined {
  if (!/^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$/.test(module)) {
    return undefined;
  }
  const parts = module.split(".");
  for (const root of roots) {
    for (const candidate of [path.join(root, ...parts) + ".py", path.join(root, ...parts, "__main__.py")]) {
      if (isFile(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}

/**
 * A `.env` file as the Python extension reads it: `KEY=value` lines, an optional `export`, `#`
 * comments, single- or double-quoted values (`\n` in double quotes is a newline), and `${NAME}`
 * taken from the lines above or the environment.
 */
export function parseEnvFile(text: string, env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][\w.-]*)\s*=\s*(.*)$/.exec(raw);
    if (!match) {
      continue;
    }
    const [, key, rest] = match;
    let value: string;
    const quoted = /^(['"])(.*)\1\s*(#.*)?$/.exec(rest);
    if (quoted) {
      value = quoted[1] === '"' ? quoted[2].replace(/\\n/g, "\n") : quoted[2];
    } else {
      value = rest.replace(/\s+#.*$/, "").trim();
    }
    if (!quoted || quoted[1] === '"') {
      value = value.replace(/\$\{([A-Za-z_]\w*)\}/g, (_, name: string) => out[name] ?? env[name] ?? "");
    }
    out[key] = value;
  }
  return out;
}

/** Where a launcher's arguments name `file`: the launcher's own arguments before it, the program (a
 * script path, or a module after `-m` / `--module`) and the program's arguments after it. */
export function launchedProgram(args: string[], roots: string[], file: string, isFile: (file: string) => boolean):
    { launcherArgs: string[]; program?: string; module?: string; programArgs: string[] } | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg.startsWith("-")) {
      continue;
    }
    const before = args.slice(0, i);
    if (before.includes("--no-python") || before.includes("--no_python")) {
      return undefined;  // the program is not a Python file: not a step Stepscope can instrument
    }
    const asModule = before.includes("-m") || before.includes("--module");
    const runs = asModule ? moduleFile(arg, roots, isFile) === file : roots.some((root) => path.resolve(root, arg) === file);
    if (runs) {
      return {
        launcherArgs: before.filter((a) => !(asModule && (a === "-m" || a === "--module"))),
        ...(asModule ? { module: arg } : { program: file }),
        programArgs: args.slice(i + 1),
      };
    }
  }
  return undefined;
}

function strings(value: unknown): string[] | undefined {
  return Array.isArray(value) ? value.filter((a): a is string => typeof a === "string") : undefined;
}

/** The launch configuration that runs `context.file`, if any, resolved; or why it cannot be used. */
export function resolveLaunch(configurations: unknown, context: LaunchContext): LaunchResolution {
  if (!Array.isArray(configurations)) {
    return undefined;
  }
  const inFolder = (value: string) => path.resolve(context.folder.path, value);
  for (const entry of configurations as PythonLaunchConfiguration[]) {
    if (!entry || typeof entry !== "object" || !["python", "debugpy"].includes(String(entry.type))
        || entry.request !== "launch") {
      continue;
    }
    const name = typeof entry.name === "string" ? entry.name : "launch configuration";
    try {
      const expand = (value: string) => expandVariables(value, context);
      const cwd = typeof entry.cwd === "string" ? inFolder(expand(entry.cwd)) : undefined;
      let program: string | undefined;
      let module: string | undefined;
      let args = strings(entry.args)?.map(expand);
      let launcher: Launcher | undefined;
      const roots = [...new Set([cwd ?? context.folder.path, context.folder.path])];
      if (typeof entry.program === "string") {
        program = inFolder(expand(entry.program));
        if (program !== context.file) {
          continue;
        }
      } else if (typeof entry.module === "string" && LAUNCHER_MODULES.includes(expand(entry.module))) {
        const launched = launchedProgram(args ?? [], roots, context.file, context.isFile);
        if (!launched) {
          continue;  // the launcher runs another file
        }
        ({ program, module } = launched);
        launcher = { module: expand(entry.module), args: launched.launcherArgs };
        args = launched.programArgs;
      } else if (typeof entry.module === "string") {
        module = expand(entry.module);
        if (moduleFile(module, roots, context.isFile) !== context.file) {
          continue;  // another file: not this file's run
        }
      } else {
        continue;
      }
      const env: Record<string, string> = {};
      // debugpy reads `${workspaceFolder}/.env` unless the configuration names another file
      const envFile = inFolder(typeof entry.envFile === "string" ? expand(entry.envFile) : ".env");
      const envText = context.readFile(envFile);
      if (envText === undefined && typeof entry.envFile === "string") {
        return { problem: `the launch configuration "${name}" names an envFile that cannot be read: ${envFile}` };
      }
      if (envText !== undefined) {
        Object.assign(env, parseEnvFile(envText, context.env));
      }
      if (entry.env && typeof entry.env === "object") {
        for (const [key, value] of Object.entries(entry.env as Record<string, unknown>)) {
          if (typeof value === "string") {
            env[key] = expand(value);
          }
        }
      }
      // a bare command (`python3`) is looked up on PATH when run; a path is taken from the folder
      const command = typeof entry.python === "string" && entry.python.trim() ? expand(entry.python.trim()) : undefined;
      const python = command && /[\\/]/.test(command) ? inFolder(command) : command;
      return {
        options: { name, program, module, args, env, cwd, python, ...(launcher ? { launcher } : {}) },
      };
    } catch (error) {
      if (error instanceof UnknownVariable) {
        return { problem: `the launch configuration "${name}" runs this file, but ${error.message}` };
      }
      throw error;
    }
  }
  return undefined;
}
