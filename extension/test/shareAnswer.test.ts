// Checking the server's answer to Share Trace before revealing anything (shareAnswer.ts).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RUN_ID } from "../../panel/src/messages";
import { BadShareAnswer, parseShareAnswer, runIdOf } from "../src/shareAnswer";

const RUN = "20261201T153517Z-train-1a2b";
const GOOD = {
  runId: RUN,
  folder: `/ws/.stepscope/runs/${RUN}`,
  copies: [{ trace: `/ws/.stepscope/runs/${RUN}/trace.json`, copy: `/ws/.stepscope/runs/${RUN}/trace.redacted.json`,
    counts: { email: 1, host: 2 }, occurrences: 9 }],
  summary: "redacted copy written: trace.redacted.json (replaced 1 email, 2 host)",
};

describe("parseShareAnswer", () => {
  it("keeps where the copy is and the counts", () => {
    const parsed = parseShareAnswer(GOOD);
    assert.equal(parsed.copies[0].copy, GOOD.copies[0].copy);
    assert.deepEqual(parsed.copies[0].counts, { email: 1, host: 2 });
    assert.equal(parsed.summary, GOOD.summary);
  });

  it("refuses an answer without copies, paths or summary", () => {
    for (const bad of [null, "text", { ...GOOD, copies: [] }, { ...GOOD, summary: undefined },
      { ...GOOD, copies: [{ trace: "/t.json", counts: {} }] }, { ...GOOD, copies: [{ ...GOOD.copies[0], counts: null }] }]) {
      assert.throws(() => parseShareAnswer(bad), BadShareAnswer, JSON.stringify(bad));
    }
  });

  it("drops counts that are not whole numbers and keeps the summary to one line", () => {
    const parsed = parseShareAnswer({ ...GOOD, summary: "one\ntwo", copies: [{ ...GOOD.copies[0], counts: { email: 1, host: "2", x: -1 } }] });
    assert.deepEqual(parsed.copies[0].counts, { email: 1 });
    assert.equal(parsed.summary, "one");
  });
});

describe("runIdOf", () => {
  it("takes a run id, or a view item's runId or id", () => {
    assert.equal(runIdOf(RUN, RUN_ID), RUN);
    assert.equal(runIdOf({ runId: RUN }, RUN_ID), RUN);
    assert.equal(runIdOf({ id: RUN, status: "complete" }, RUN_ID), RUN);
    assert.equal(runIdOf({ run: { id: RUN, status: "complete" }, label: "train.py:10" }, RUN_ID), RUN);
    assert.equal(runIdOf(undefined, RUN_ID), undefined);
  });

  it("refuses anything else in one line", () => {
    for (const bad of ["../../etc", 12, { runId: "a/b" }, {}, { run: { id: "../x" } }, { run: "r1" }]) {
      const got = runIdOf(bad, RUN_ID);
      assert.ok(typeof got === "object" && /^Share Trace needs a run id/.test(got.refused), JSON.stringify(bad));
    }
    const perfetto = runIdOf("../x", RUN_ID, "Open Trace in Perfetto");
    assert.ok(typeof perfetto === "object" && /^Open Trace in Perfetto needs a run id/.test(perfetto.refused));
  });
});
