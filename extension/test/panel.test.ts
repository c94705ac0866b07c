// The trace panel host's pure parts: what `stepscope.openPanel` accepts (panel/target.ts), where a
// panel's `openSource` may lead (panel/sources.ts), and the panel's title (panel/state.ts).
import assert from "node:assert/strict";
import * as path from "node:path";
import { describe, it } from "node:test";
import { isInside, resolveSource } from "../src/panel/sources";
import { measurePanelState, measureStepWords, measureTabTitle, panelTitle, stepWords, tabTitle } from "../src/panel/state";
import { parsePanelTarget } from "../src/panel/target";

const RUN = "20261201T101500Z-train-1a2b";

describe("parsePanelTarget", () => {
  it("takes nothing as the run the editor shows", () => {
    assert.equal(parsePanelTarget(undefined), null);
    assert.equal(parsePanelTarget([]), null);
  });

  it("takes a run, with or without a line, as an object or inside a command URI's array", () => {
    assert.deepEqual(parsePanelTarget({ runId: RUN }), { runId: RUN, line: null });
    assert.deepEqual(parsePanelTarget([{ runId: RUN, fileId: "f0", line: 12, path: "train.py" }]), {
      runId: RUN,
      line: { fileId: "f0", line: 12 },
    });
    // a file the run's table does not have comes without an id: the run opens, on no line
    assert.deepEqual(parsePanelTarget({ runId: RUN, fileId: null, line: 12 }), { runId: RUN, line: null });
  });

  it("takes a measure run, alone or against another run, for its distribution", () => {
    assert.deepEqual(parsePanelTarget({ runId: RUN, kind: "measure" }), { runId: RUN, line: null, measure: { against: null, force: false } });
    const other = "20261201T101000Z-train-9f9f";
    assert.deepEqual(parsePanelTarget({ runId: RUN, kind: "measure", against: other, force: true }),
      { runId: RUN, line: null, measure: { against: other, force: true } });
    for (const against of ["../x", RUN, 3]) {
      assert.equal(parsePanelTarget({ runId: RUN, kind: "measure", against }), "Open Trace Panel: against is not another run's id");
    }
  });

  it("takes two profile runs to compare statement by statement, the baseline as against", () => {
    const other = "20261201T101000Z-train-9f9f";
    assert.deepEqual(parsePanelTarget({ runId: RUN, kind: "compare", against: other }), { runId: RUN, line: null, compare: { against: other } });
    for (const against of ["../x", RUN, 3, undefined]) {
      assert.equal(parsePanelTarget({ runId: RUN, kind: "compare", against }), "Open Trace Panel: against is not another run's id");
    }
  });

  it("refuses anything else with a reason", () => {
    for (const bad of [
      "20261201T101500Z-train-1a2b",
      { runId: "../../etc" },
      { runId: RUN, fileId: "../f0", line: 3 },
      { runId: RUN, fileId: "f0", line: 0 },
      { runId: RUN, fileId: "f0", line: "3" },
      { runId: 7 },
    ]) {
      const parsed = parsePanelTarget(bad);
      assert.equal(typeof parsed, "string", JSON.stringify(bad));
      assert.match(parsed as string, /^Open Trace Panel/);
    }
  });
});

describe("resolveSource", () => {
  const root = "/srv/my project ü";
  const files = { f0: "train.py", f1: "model/net.py", x0: "../outside.py", x1: "/etc/passwd", x2: "C:/win.py", x3: "a/../../b.py" };

  it("joins a file id's path to the run's root when it lies in a workspace folder", () => {
    assert.deepEqual(resolveSource("f1", files, root, [root]), { path: "/srv/my project ü/model/net.py" });
    assert.deepEqual(resolveSource("f0", files, root, ["/srv"]), { path: "/srv/my project ü/train.py" });
  });

  it("refuses ids not in the table, paths that leave the root, and roots outside the workspace", () => {
    const refusals = [
      resolveSource("f9", files, root, [root]),
      resolveSource("x0", files, root, [root]),
      resolveSource("x1", files, root, [root]),
      resolveSource("x2", files, root, [root]),
      resolveSource("x3", files, root, [root]),
      resolveSource("f0", files, root, ["/elsewhere"]),
      resolveSource("f0", files, null, [root]),
      resolveSource("constructor", files, root, [root]),
    ];
    for (const r of refusals) assert.ok("refused" in r, JSON.stringify(r));
    assert.match((refusals[0] as { refused: string }).refused, /file id f9 is not in the run's file table/);
    assert.match((refusals[5] as { refused: string }).refused, /is not inside a folder of this workspace/);
  });

  it("tells a folder from a sibling that starts with its name", () => {
    assert.equal(isInside("/srv/project-old/train.py", "/srv/project"), false);
    assert.equal(isInside("/srv/project/train.py", "/srv/project"), true);
    assert.equal(isInside("/srv/project", "/srv/project"), true);
  });

  it("works with Windows paths", () => {
    const win = path.win32;
    assert.deepEqual(resolveSource("f1", files, "C:\\work\\proj", ["C:\\work"], win), { path: "C:\\work\\proj\\model\\net.py" });
    assert.ok("refused" in resolveSource("f1", files, "C:\\work\\proj", ["D:\\other"], win));
  });
});

describe("the panel's title", () => {
  const report = {
    source_root: "/srv/proj",
    scenario: { step: { file: "/srv/proj/src/train.py", line: 69, function: null, kind: "loop" } },
  };

  it("names the script relative to the workspace and the loop's line", () => {
    assert.equal(stepWords(report), "src/train.py, the loop at line 69");
    assert.equal(panelTitle(RUN, report), `src/train.py, the loop at line 69 · run ${RUN}`);
    assert.equal(tabTitle(report), "Trace: src/train.py");
  });

  it("names a function step by its function, and a run without a scenario by its id", () => {
    const fn = { ...report, scenario: { step: { file: "/srv/proj/train.py", line: 3, function: "train_step", kind: "function" } } };
    assert.equal(stepWords(fn), "train.py, each call of train_step");
    assert.equal(panelTitle(RUN, { lines: [] }), `Run ${RUN}`);
    assert.equal(tabTitle(null), "Stepscope Trace");
  });
});

describe("a measure run's panel state", () => {
  const measure = {
    raw_ms: [2, 2.1], warmup_ms: [5], median_ms: 2.05, iqr_ms: 0.05, p10_ms: 2, p90_ms: 2.1, min_ms: 2, max_ms: 2.1,
    samples_per_s: null, noisy: false, machine: { device: "CPU only" },
    scope: { script: "train.py", step: { line: 69, function: null } },
  };

  it("is titled by the step the run timed, and carries no report and no timeline", () => {
    assert.equal(measureStepWords(measure), "train.py, the loop at line 69");
    assert.equal(measureStepWords({ ...measure, scope: { script: "steps.py", step: { function: "Runner.step" } } }),
      "steps.py, each call of Runner.step");
    const state = measurePanelState({ runId: RUN, measure });
    assert.equal(state.title, `train.py, the loop at line 69 · measured, run ${RUN}`);
    assert.deepEqual([state.report, state.timeline, state.measure], [null, null, measure]);
    assert.equal(measureTabTitle(measure), "Measured: train.py");
    const compared = measurePanelState({ runId: RUN, measure: { ...measure, ratio: 0.9, ci95: [0.85, 0.95], compare_label: "run r0" } });
    assert.match(compared.title, /against run r0$/);
  });
});
