// The MCP server's command line as the editor starts it (mcpLaunch.ts).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { mcpServerArgs } from "../src/mcpLaunch";

describe("mcpServerArgs", () => {
  const bundled = ["/ext/bundled/tool/server.py"];

  it("lets the tools run the program only in a trusted workspace", () => {
    assert.deepEqual(mcpServerArgs(bundled, "/home/me/my project", true),
      ["/ext/bundled/tool/server.py", "mcp", "--root=/home/me/my project", "--allow-run"]);
    assert.deepEqual(mcpServerArgs(bundled, "/home/me/my project", false),
      ["/ext/bundled/tool/server.py", "mcp", "--root=/home/me/my project"]);
  });

  it("runs `stepscope mcp` from a source tree as the language server runs `stepscope serve`", () => {
    assert.deepEqual(mcpServerArgs(["-m", "stepscope"], "/ws", false), ["-m", "stepscope", "mcp", "--root=/ws"]);
  });

  it("keeps a folder named like a flag the root's value", () => {
    assert.deepEqual(mcpServerArgs(bundled, "-ws", false).slice(1), ["mcp", "--root=-ws"]);
  });
});
