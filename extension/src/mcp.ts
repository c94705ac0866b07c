// Registers `stepscope mcp` with the editor's MCP support (the server definition provider API), so
// agent mode lists Stepscope's tools without any configuration. The server starts with the language
// server's interpreter and bundled Stepscope (ServerController.resolveLaunch); its tools that run the
// user's program are allowed only in a trusted workspace. An editor without the API gets one line in
// the log, nothing else.
import * as cp from "child_process";
import * as vscode from "vscode";
import { MCP_PROVIDER_ID, MCP_SERVER_LABEL, mcpServerArgs } from "./mcpLaunch";
import { firstLine } from "./python";
import { ServerController, showErrorWithLogs, UTF8_ENV } from "./server";

// The part of the MCP API (VS Code 1.101+) used here; the extension still runs on older editors.
interface McpStdioServerDefinition {
  readonly label: string;
  command: string;
  args: string[];
  env: Record<string, string | number | null>;
  cwd?: vscode.Uri;
}

interface McpServerDefinitionProvider {
  readonly onDidChangeMcpServerDefinitions?: vscode.Event<void>;
  provideMcpServerDefinitions(token: vscode.CancellationToken): vscode.ProviderResult<McpStdioServerDefinition[]>;
  resolveMcpServerDefinition?(
    server: McpStdioServerDefinition,
    token: vscode.CancellationToken,
  ): vscode.ProviderResult<McpStdioServerDefinition>;
}

interface McpApi {
  lm?: {
    registerMcpServerDefinitionProvider?(id: string, provider: McpServerDefinitionProvider): vscode.Disposable;
  };
  McpStdioServerDefinition?: new (
    label: string,
    command: string,
    args?: string[],
    env?: Record<string, string | number | null>,
    version?: string,
  ) => McpStdioServerDefinition;
}

/** The SDK the server needs; it comes from the interpreter's environment (it is not bundled). */
const SDK_PROBE = "import mcp.server.mcpserver, mcp_types";
const SDK_REQUIREMENT = "mcp>=2.3,<3";
const PROBE_TIMEOUT_MS = 30_000;

export class McpServerProvider implements McpServerDefinitionProvider {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeMcpServerDefinitions = this.changed.event;

  constructor(
    private readonly controller: ServerController,
    private readonly log: vscode.LogOutputChannel,
    private readonly version: string,
  ) {}

  /** Registers the provider where the editor has the API; says so in the log where it has not. */
  register(): vscode.Disposable {
    const api = vscode as unknown as McpApi;
    if (typeof api.lm?.registerMcpServerDefinitionProvider !== "function" || !api.McpStdioServerDefinition) {
      this.log.info(
        `This editor has no MCP server API (VS Code ${vscode.version}; it came in 1.101): Stepscope's MCP server is ` +
          "not registered for its agents. Any MCP client can start it as `stepscope mcp` (docs/mcp.md).",
      );
      return this.changed;
    }
    const registration = api.lm.registerMcpServerDefinitionProvider(MCP_PROVIDER_ID, this);
    this.log.info(`MCP server "${MCP_SERVER_LABEL}" registered with the editor's agents (${MCP_PROVIDER_ID}).`);
    return vscode.Disposable.from(
      registration,
      this.changed,
      // trusting the folder lets the tools run the program: the definition gains --allow-run
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.refresh("workspace trusted")),
    );
  }

  /** The definition depends on the interpreter, the workspace folder and trust: tell the editor when one changes. */
  refresh(reason: string): void {
    this.log.info(`MCP server definition changed: ${reason}.`);
    this.changed.fire();
  }

  async provideMcpServerDefinitions(): Promise<McpStdioServerDefinition[]> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    const Definition = (vscode as unknown as McpApi).McpStdioServerDefinition;
    if (!folder || folder.uri.scheme !== "file" || !Definition) {
      return [];  // the server works on a folder on this machine: nothing to offer without one
    }
    let launch;
    try {
      launch = await this.controller.resolveLaunch(folder.uri);
    } catch (error) {
      // the language server reports the same problem with its actions; the agent's list just lacks Stepscope
      this.log.warn(`MCP server not offered: ${firstLine(error)}`);
      return [];
    }
    const trusted = vscode.workspace.isTrusted;
    const definition = new Definition(
      MCP_SERVER_LABEL,
      launch.command,
      mcpServerArgs(launch.entry, folder.uri.fsPath, trusted),
      { ...UTF8_ENV },
      this.version,
    );
    definition.cwd = folder.uri;
    this.log.info(
      `MCP server "${MCP_SERVER_LABEL}" for agents: ${definition.command} ${definition.args.join(" ")} ` +
        (trusted
          ? "(profile, measure and try_fix may run your program: the workspace is trusted)"
          : "(restricted mode: profile, measure and try_fix are refused; trust the workspace to allow them)"),
    );
    return [definition];
  }

  /** Called when the editor starts the server: the `mcp` SDK must be in the interpreter's environment. */
  async resolveMcpServerDefinition(server: McpStdioServerDefinition): Promise<McpStdioServerDefinition | undefined> {
    const missing = await sdkMissing(server.command);
    if (missing === undefined) {
      this.log.info(`Starting the MCP server "${server.label}" for an agent.`);
      return server;
    }
    const message =
      `Stepscope's MCP server needs the \`mcp\` package in ${server.command}: ` +
      `${server.command} -m pip install "${SDK_REQUIREMENT}"`;
    this.log.error(`${message} (${missing})`);
    void showErrorWithLogs(message, this.log);
    return undefined;
  }
}

/** Why the interpreter cannot import the SDK, or undefined when it can. */
function sdkMissing(python: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    cp.execFile(python, ["-c", SDK_PROBE], { timeout: PROBE_TIMEOUT_MS, env: { ...process.env, ...UTF8_ENV } },
      (error, _stdout, stderr) => {
        if (!error) {
          resolve(undefined);
        } else {
          const lines = String(stderr).trim().split("\n");
          resolve(lines[lines.length - 1] || firstLine(error));
        }
      });
  });
}
