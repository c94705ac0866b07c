// The heat scale of the inline labels and the one spelling of a document URI (heat.ts).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { HEAT, heatBucket, normaliseUri } from "../src/heat";

describe("heatBucket", () => {
  it("puts each share of the step in the bucket whose lower bound it reaches", () => {
    assert.deepEqual([0, 0.049, 0.05, 0.149, 0.15, 0.3, 0.49, 0.5, 1].map(heatBucket), [0, 0, 1, 1, 2, 3, 3, 4, 4]);
  });

  it("keeps anything out of range in the nearest bucket", () => {
    assert.equal(heatBucket(-1), 0);
    assert.equal(heatBucket(7), HEAT.length - 1);
    assert.equal(heatBucket(Number.NaN), 0);
  });
});

describe("normaliseUri", () => {
  it("spells the server's URI of a file as VS Code does", () => {
    // Python's Path.as_uri() escapes the space and the ü; VS Code escapes them its own way
    const fromServer = "file:///tmp/my%20project%20%C3%BC/train.py";
    const fromEditor = "file:///tmp/my project ü/train.py";
    assert.equal(normaliseUri(fromServer), normaliseUri(fromEditor));
    assert.equal(normaliseUri(fromServer), "file:///tmp/my%20project%20%C3%BC/train.py");
  });

  it("gives one spelling for a drive letter's colon, escaped or not", () => {
    assert.equal(normaliseUri("file:///c%3A/work/train.py"), normaliseUri("file:///C:/work/train.py"));
  });

  it("keeps different files apart", () => {
    assert.notEqual(normaliseUri("file:///tmp/a.py"), normaliseUri("file:///tmp/A.py"));
  });
});
