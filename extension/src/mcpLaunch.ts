// The command line of Stepscope's MCP server as the editor starts it (mcp.ts registers it). Pure: no
// `vscode` import, so the client's unit tests cover it.

/** The id in package.json's `contributes.mcpServerDefinitionProviders`. */
export const MCP_PROVIDER_ID = "stepscope.mcp";
/** The name the editor lists the server under. */
export const MCP_SERVER_LABEL = "Stepscope";

/**
 * `stepscope mcp` for the workspace folder `root`: `entry` is what runs a Stepscope command with the
 * language server's interpreter (the bundled bootstrap, or `-m stepscope`). The tools that run the
 * user's program (`profile`, `measure`, `try_fix`) are allowed only in a trusted workspace
 * (`--allow-run`); elsewhere the server still reads traces, checks code and lists runs.
 */
export function mcpServerArgs(entry: readonly string[], root: string, trusted: boolean): string[] {
  // `--root=` keeps a folder whose name starts with "-" a value
  return [...entry, "mcp", `--root=${root}`, ...(trusted ? ["--allow-run"] : [])];
}
