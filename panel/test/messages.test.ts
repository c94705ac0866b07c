import assert from "node:assert/strict";
import { test } from "node:test";
import { parseHostMessage, parseWebviewMessage } from "../src/messages";

test("webview messages that match their type are accepted", () => {
  assert.deepEqual(parseWebviewMessage({ type: "ready" }), { ok: true, message: { type: "ready" } });
  assert.deepEqual(parseWebviewMessage({ type: "openSource", fileId: "f0", line: 12 }), {
    ok: true,
    message: { type: "openSource", fileId: "f0", line: 12 },
  });
  const range = parseWebviewMessage({ type: "requestRange", runId: "20261201T101500Z-train-1a2b", startUs: 0, endUs: 10.5, maxSpans: 200000 });
  assert.equal(range.ok, true);
  assert.deepEqual(parseWebviewMessage({ type: "shareTrace", runId: "20261201T101500Z-train-1a2b" }), {
    ok: true,
    message: { type: "shareTrace", runId: "20261201T101500Z-train-1a2b" },
  });
  assert.deepEqual(parseWebviewMessage({ type: "openInPerfetto", runId: "20261201T101500Z-train-1a2b" }), {
    ok: true,
    message: { type: "openInPerfetto", runId: "20261201T101500Z-train-1a2b" },
  });
});

test("anything else from the webview is refused with a reason", () => {
  const bad: [unknown, RegExp][] = [
    [null, /not a message/],
    ["ready", /not a message/],
    [{ type: "openSource", fileId: "../../etc/passwd", line: 1 }, /fileId/],
    [{ type: "openSource", fileId: "/abs/path.py", line: 1 }, /fileId/],
    [{ type: "openSource", fileId: "f0", line: 0 }, /line/],
    [{ type: "openSource", fileId: "f0", line: 1.5 }, /line/],
    [{ type: "openSource", fileId: "f0", line: "12" }, /line/],
    [{ type: "openSource", fileId: "f0", line: 1e12 }, /line/],
    [{ type: "openSource", fileId: "f0", line: 3, path: "/etc/passwd" }, /unexpected field "path"/],
    [{ type: "openSource", fileId: "f0" }, /missing field "line"/],
    [JSON.parse('{"type":"openSource","fileId":"f0","line":3,"__proto__":{"x":1}}'), /unexpected field "__proto__"/],
    [{ type: "requestRange", runId: "../x", startUs: 0, endUs: 1, maxSpans: 5000 }, /runId/],
    [{ type: "requestRange", runId: "r1", startUs: 5, endUs: 1, maxSpans: 5000 }, /range/],
    [{ type: "requestRange", runId: "r1", startUs: 0, endUs: Infinity, maxSpans: 5000 }, /range/],
    [{ type: "requestRange", runId: "r1", startUs: 0, endUs: 1, maxSpans: 10 }, /maxSpans/],
    [{ type: "shareTrace", runId: "../../etc" }, /runId/],
    [{ type: "shareTrace", runId: 7 }, /runId/],
    [{ type: "shareTrace" }, /missing field "runId"/],
    [{ type: "shareTrace", runId: "r1", output: "/etc/passwd" }, /unexpected field "output"/],
    [{ type: "openInPerfetto", runId: "../../etc" }, /runId/],
    [{ type: "openInPerfetto", runId: "r1", path: "/etc/passwd" }, /unexpected field "path"/],
    [{ type: "log", level: "debug", message: "x" }, /level/],
    [{ type: "runCommand", command: "rm -rf /" }, /unknown message type/],
  ];
  for (const [value, reason] of bad) {
    const parsed = parseWebviewMessage(value);
    assert.equal(parsed.ok, false, JSON.stringify(value));
    if (!parsed.ok) assert.match(parsed.reason, reason);
  }
});

test("a log message is cut to a bounded length", () => {
  const parsed = parseWebviewMessage({ type: "log", level: "error", message: "x".repeat(100000) });
  assert.ok(parsed.ok && parsed.message.type === "log" && parsed.message.message.length === 2000);
});

test("host messages are checked before the panel uses them", () => {
  const state = { runId: "r1", title: "t", report: null, timeline: null, measure: null, stale: false };
  assert.equal(parseHostMessage({ type: "state", state }).ok, true);
  assert.equal(parseHostMessage({ type: "state", state: { ...state, timeline: "text" } }).ok, false);
  assert.equal(parseHostMessage({ type: "state" }).ok, false);
  assert.equal(parseHostMessage({ type: "eval", code: "alert(1)" }).ok, false);
});

test("a spans message names its run and which timeline it completes, or is refused", () => {
  const spans = { start_us: new Float64Array(2) };
  assert.deepEqual(parseHostMessage({ type: "spans", runId: "r1", of: "state", spans }), { ok: true, message: { type: "spans", runId: "r1", of: "state", spans } });
  assert.equal(parseHostMessage({ type: "spans", runId: "r1", of: "range", spans }).ok, true);
  for (const bad of [
    { type: "spans", runId: "r1", of: "other", spans },
    { type: "spans", of: "state", spans },
    { type: "spans", runId: "r1", of: "state", spans: [1, 2] },
    { type: "spans", runId: "r1", of: "state" },
  ]) {
    assert.equal(parseHostMessage(bad).ok, false, JSON.stringify(bad));
  }
});

test("reveal names a run, a file id and a line, or is refused", () => {
  const runId = "20261201T101500Z-train-1a2b";
  assert.deepEqual(parseHostMessage({ type: "reveal", runId, fileId: "f0", line: 7 }), {
    ok: true,
    message: { type: "reveal", runId, fileId: "f0", line: 7 },
  });
  for (const bad of [
    { type: "reveal", runId, fileId: "../x", line: 7 },
    { type: "reveal", runId, fileId: "f0", line: 0 },
    { type: "reveal", runId, fileId: "f0", line: 1.5 },
    { type: "reveal", fileId: "f0", line: 7 },
  ]) {
    assert.equal(parseHostMessage(bad).ok, false, JSON.stringify(bad));
  }
});
