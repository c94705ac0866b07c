// The server's stderr lines shown at their own level in the log (serverLog.ts).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { serverLogLine } from "../src/serverLog";

describe("serverLogLine", () => {
  it("shows the server's INFO lines as info, not as errors", () => {
    assert.deepEqual(serverLogLine("INFO stepscope.lsp: profiling /ws/train.py:69 with /usr/bin/python3"),
      { level: "info", message: "stepscope.lsp: profiling /ws/train.py:69 with /usr/bin/python3" });
    assert.equal(serverLogLine("WARNING stepscope.lsp: ignoring [tool.stepscope] settings").level, "warn");
    assert.equal(serverLogLine("DEBUG pygls: x").level, "debug");
    assert.equal(serverLogLine("CRITICAL x").level, "error");
  });

  it("keeps anything else on the stream an error (a traceback, a crash)", () => {
    assert.deepEqual(serverLogLine("Traceback (most recent call last):"),
      { level: "error", message: "Traceback (most recent call last):" });
    assert.equal(serverLogLine("INFOS not a level").level, "error");
  });
});
