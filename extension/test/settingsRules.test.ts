// The interpreter setting under workspace trust (settingsRules.ts).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { chooseInterpreter, expandHome, settingsOfSection } from "../src/settingsRules";

describe("chooseInterpreter", () => {
  it("prefers the folder's value, then the workspace's, then the user's, in a trusted workspace", () => {
    assert.deepEqual(chooseInterpreter({ globalValue: "/u/py", workspaceValue: "/w/py", workspaceFolderValue: "/f/py" }, true, "/h"),
      { interpreter: "/f/py", scope: "workspace" });
    assert.deepEqual(chooseInterpreter({ globalValue: "/u/py", workspaceValue: "/w/py" }, true, "/h"),
      { interpreter: "/w/py", scope: "workspace" });
    assert.deepEqual(chooseInterpreter({ globalValue: "~/py" }, true, "/h"), { interpreter: "/h/py", scope: "user" });
  });

  it("never takes a workspace value in restricted mode", () => {
    assert.deepEqual(chooseInterpreter({ workspaceValue: "./evil/python" }, false, "/h"), { interpreter: "", scope: "none" });
    assert.deepEqual(chooseInterpreter({ globalValue: "/u/py", workspaceFolderValue: "./evil" }, false, "/h"),
      { interpreter: "/u/py", scope: "user" });
  });

  it("treats blank values as unset", () => {
    assert.deepEqual(chooseInterpreter({ globalValue: "  ", workspaceValue: "" }, true, "/h"), { interpreter: "", scope: "none" });
    assert.deepEqual(chooseInterpreter({ globalValue: " /u/py " }, true, "/h"), { interpreter: "/u/py", scope: "user" });
    assert.deepEqual(chooseInterpreter(undefined, true, "/h"), { interpreter: "", scope: "none" });
  });

  it("expands only a leading ~", () => {
    assert.equal(expandHome("~", "/h"), "/h");
    assert.equal(expandHome("~/x/~", "/h"), "/h/x/~");
    assert.equal(expandHome("/a/~b", "/h"), "/a/~b");
    assert.equal(expandHome("~other/x", "/h"), "~other/x");
  });
});

describe("settingsOfSection", () => {
  it("keeps every setting of the section, declared or not, and none of its methods", () => {
    const section = {
      warmup: 3, allLines: false, typo: "x",
      get: () => undefined, has: () => true, inspect: () => undefined, update: async () => undefined,
    };
    assert.deepEqual(settingsOfSection(section), { warmup: 3, allLines: false, typo: "x" });
  });
});
