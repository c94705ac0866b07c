// The language client's life cycle: resolve the interpreter, start the bundled server with it,
// restart (debounced) when the interpreter or settings change, and skip restarts that would start
// exactly the same server again.
import * as fs from "fs";
import * as path from "path";
import * as readline from "readline";
import * as vscode from "vscode";
import {
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  State,
  TransportKind,
} from "vscode-languageclient/node";
import {
  firstLine,
  Interpreter,
  InterpreterProblem,
  isPythonExtensionInstalled,
  resolveInterpreter,
} from "./python";
import { OPEN_PANEL_COMMAND } from "./panel/host";
import { serverLogLine } from "./serverLog";
import { readSettings } from "./settings";

/** Profile This Step and Measure This Step, the editor's commands; the server's step lenses name them (initializationOptions). */
export const PROFILE_COMMAND = "stepscope.profileStep";
export const MEASURE_COMMAND = "stepscope.measureStep";
export const TRY_COMMAND = "stepscope.tryFix";

/** UTF-8 everywhere: a non-UTF-8 locale must not break the stdio stream or the paths in it. */
export const UTF8_ENV = { PYTHONUTF8: "1", PYTHONIOENCODING: "utf-8" } as const;

const CLIENT_ID = "stepscope";
const CLIENT_NAME = "Stepscope";
const RESTART_DELAY_MS = 300;

export interface Launch {
  command: string;
  /** The language server's arguments. */
  args: string[];
  /** What runs a Stepscope command instead (`[...entry, "mcp", ...]`): the bundled bootstrap, or `-m stepscope`. */
  entry: string[];
  interpreter: Interpreter;
}

export class ServerController implements vscode.Disposable {
  private client: LanguageClient | undefined;
  /** Listeners that belong to the current client; disposed whenever it stops. */
  private clientDisposables: vscode.Disposable[] = [];
  private runningKey: string | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private queue: Promise<void> = Promise.resolve();
  private lastProblemShown: string | undefined;
  private readonly started = new vscode.EventEmitter<LanguageClient>();
  /** Fires each time a client has started (after a restart too): wire per-client listeners here. */
  readonly onDidStart = this.started.event;

  constructor(
    private readonly extensionRoot: string,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** The running client, if any. */
  get languageClient(): LanguageClient | undefined {
    return this.client?.isRunning() ? this.client : undefined;
  }

  /**
   * Asks for a (re)start. Several configuration events usually arrive together, so requests are
   * debounced; `force` restarts even when nothing changed (the "Restart Server" command).
   */
  requestRestart(reason: string, force = false): void {
    this.log.info(`Server restart requested: ${reason}.`);
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
    }
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.queue = this.queue.then(() => this.ensureRunning(force)).catch((error) => {
        this.log.error(`Server restart failed: ${firstLine(error)}`);
      });
    }, RESTART_DELAY_MS);
  }

  /** Starts the server now (first activation); later changes go through requestRestart. */
  async start(): Promise<void> {
    this.queue = this.queue.then(() => this.ensureRunning(false));
    await this.queue;
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.runningKey = undefined;
    for (const disposable of this.clientDisposables.splice(0)) {
      disposable.dispose();
    }
    if (client) {
      try {
        await client.stop(5_000);
      } catch (error) {
        this.log.warn(`Stopping the server: ${firstLine(error)}`);
      }
    }
  }

  async dispose(): Promise<void> {
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
    }
    await this.stop();
    this.started.dispose();
  }

  /**
   * How the server starts for this workspace: the interpreter (the setting, the Python extension's,
   * PATH) and the bundled server. The MCP server definition (mcp.ts) starts from the same.
   * Throws an InterpreterProblem the user has to act on.
   */
  async resolveLaunch(resource: vscode.Uri | undefined): Promise<Launch> {
    const interpreter = await resolveInterpreter(resource, readSettings(resource), this.log);
    return this.launchFor(interpreter);
  }

  private async ensureRunning(force: boolean): Promise<void> {
    const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
    let launch: Launch;
    try {
      launch = await this.resolveLaunch(resource);
    } catch (error) {
      await this.stop();
      this.reportProblem(error, force);
      return;
    }

    const key = JSON.stringify([launch.command, launch.args]);
    if (!force && key === this.runningKey && this.client?.isRunning()) {
      this.log.info("Server unchanged; not restarting.");
      return;
    }
    await this.stop();
    this.lastProblemShown = undefined;

    const { interpreter } = launch;
    this.log.info(
      `Using Python ${interpreter.version.join(".")} at ${interpreter.path} (${interpreter.reason}).`,
    );
    this.log.info(`Starting server: ${launch.command} ${launch.args.join(" ")}`);
    const client = this.createClient(launch, resource);
    this.client = client;
    this.runningKey = key;
    this.clientDisposables.push(
      client.onDidChangeState((event) => {
        this.log.info(`Server ${State[event.oldState]} -> ${State[event.newState]}.`);
      }),
    );
    try {
      await client.start();
      this.log.info("Server started.");
      this.started.fire(client);
    } catch (error) {
      this.log.error(`The server did not start: ${firstLine(error)}`);
      this.runningKey = undefined;
      void showErrorWithLogs(`Stepscope's server did not start: ${firstLine(error)}`, this.log);
    }
  }

  /** How to start the server with this interpreter: the bundled bootstrap, or the source tree. */
  private launchFor(interpreter: Interpreter): Launch {
    if (process.env.STEPSCOPE_DEV_SERVER === "1") {
      return { command: interpreter.path, args: ["-m", "stepscope", "serve"], entry: ["-m", "stepscope"], interpreter };
    }
    const bundled = path.join(this.extensionRoot, "bundled");
    const bootstrap = path.join(bundled, "tool", "server.py");
    if (!fs.existsSync(bootstrap)) {
      throw new Error(`this build of Stepscope has no bundled server (${bootstrap} is missing)`);
    }
    const [major, minor] = interpreter.version;
    const native = path.join(bundled, "native", `cp${major}${minor}`);
    if (interpreter.implementation !== "cpython" || !fs.existsSync(native)) {
      throw new InterpreterProblem(
        `Stepscope's bundled server runs on CPython ${supportedVersions(bundled)}; ` +
          `${interpreter.path} is ${interpreter.implementation} ${major}.${minor}.`,
      );
    }
    return { command: interpreter.path, args: [bootstrap], entry: [bootstrap], interpreter };
  }

  private createClient(launch: Launch, resource: vscode.Uri | undefined): LanguageClient {
    const serverOptions: ServerOptions = {
      command: launch.command,
      args: launch.args,
      transport: TransportKind.stdio,
      options: {
        cwd: resource?.scheme === "file" ? resource.fsPath : undefined,
        env: { ...process.env, ...UTF8_ENV },
      },
    };
    const settings = readSettings(resource);
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: "file", language: "python" },
        { scheme: "untitled", language: "python" },
        { scheme: "vscode-notebook-cell", language: "python" },
      ],
      outputChannel: this.log,
      traceOutputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      // The server logs `LEVEL name: message` on stderr: each line at its own level (an INFO line is
      // no error); the profiler's own USDT lines never reach it (the capture keeps them in the log file).
      stdioOptions: {
        stdout: (input, channel) => {
          readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on("line", (l) => channel.info(l));
        },
        stderr: (input, channel) => {
          readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on("line", (line) => {
            const { level, message } = serverLogLine(line);
            channel[level](message);
          });
        },
      },
      middleware: {
        // Profile this step runs the user's program: not offered where it cannot run.
        provideCodeLenses: (document, token, next) => (vscode.workspace.isTrusted ? next(document, token) : []),
        // The hover's one command link opens the trace panel on the line; nothing else in it runs.
        provideHover: async (document, position, token, next) => {
          const hover = await next(document, position, token);
          for (const part of hover?.contents ?? []) {
            if (part instanceof vscode.MarkdownString) {
              part.isTrusted = { enabledCommands: [OPEN_PANEL_COMMAND] };
              part.supportHtml = false;
            }
          }
          return hover;
        },
      },
      // VS Code shows timings as decorations, so the server's inlay hints would only repeat them.
      // `profile` is the server's default; each profile request also carries the current values
      // for its file's folder, so changing them needs no restart.
      initializationOptions: {
        interpreter: launch.interpreter.path,  // the program's interpreter when a request names none
        inlayHints: false,
        // hovers link to the trace panel on their line, and findings offer to open it there
        panelCommand: OPEN_PANEL_COMMAND,
        minShare: settings.minShare,
        profile: settings.profile,
        measure: settings.measure,
        // the step lenses run the editor's commands (trust, confirmation, progress), not the server's
        profileCommand: PROFILE_COMMAND,
        measureCommand: MEASURE_COMMAND,
        // Try this fix asks as Measure This Step does (trust, the first real run) and shows the diff
        tryCommand: TRY_COMMAND,
      },
    };
    return new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
  }

  private reportProblem(error: unknown, force: boolean): void {
    const message = firstLine(error);
    this.log.error(message);
    // The same problem is shown once, not on every configuration event.
    if (!force && message === this.lastProblemShown) {
      return;
    }
    this.lastProblemShown = message;
    if (error instanceof InterpreterProblem) {
      void showInterpreterProblem(message, this.log);
    } else {
      void showErrorWithLogs(`Stepscope: ${message}`, this.log);
    }
  }
}

function supportedVersions(bundled: string): string {
  try {
    const versions = fs
      .readdirSync(path.join(bundled, "native"))
      .map((name) => /^cp3(\d+)$/.exec(name))
      .filter((match): match is RegExpExecArray => match !== null)
      .map((match) => Number(match[1]))
      .sort((a, b) => a - b);
    if (versions.length > 0) {
      return `3.${versions[0]} to 3.${versions[versions.length - 1]}`;
    }
  } catch {
    // fall through
  }
  return "(none bundled)";
}

export async function showInterpreterProblem(
  message: string,
  log: vscode.LogOutputChannel,
): Promise<void> {
  const choice = await vscode.window.showErrorMessage(message, "Select Interpreter", "Open Logs");
  if (choice === "Select Interpreter") {
    if (isPythonExtensionInstalled()) {
      await vscode.commands.executeCommand("python.setInterpreter");
    } else {
      await vscode.commands.executeCommand("workbench.action.openSettings", "stepscope.interpreter");
    }
  } else if (choice === "Open Logs") {
    log.show();
  }
}

export async function showErrorWithLogs(message: string, log: vscode.LogOutputChannel): Promise<void> {
  const choice = await vscode.window.showErrorMessage(message, "Open Logs");
  if (choice === "Open Logs") {
    log.show();
  }
}
