// The heat scale of the inline labels, its colours and their contrast, and the one spelling of a
// document URI (heat.ts).
import assert from "node:assert/strict";
import * as fs from "node:fs";
import { describe, it } from "node:test";
import {
  COLOR_DEFAULTS,
  composite,
  contrast,
  EDITOR_BACKGROUNDS,
  HEAT,
  heatBucket,
  normaliseUri,
  ThemeKind,
  worthALabel,
} from "../src/heat";

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

describe("worthALabel", () => {
  it("labels a line whose share reaches the threshold, not a tiny one", () => {
    assert.equal(worthALabel(0.0002, 0.01), false);  // `0.02 ms/step · 0%`
    assert.equal(worthALabel(0.01, 0.01), true);
    assert.equal(worthALabel(0.0002, 0), true);  // threshold 0: every line
  });
});

describe("the heat colours", () => {
  const kinds: ThemeKind[] = ["dark", "light", "highContrast", "highContrastLight"];

  it("reach 4.5:1 against every default editor background, with the line's tint laid over it", () => {
    for (const kind of kinds) {
      for (const editor of EDITOR_BACKGROUNDS[kind]) {
        for (const step of HEAT) {
          const background = step.background ? composite(COLOR_DEFAULTS[step.background][kind], editor) : editor;
          const ratio = contrast(COLOR_DEFAULTS[step.text][kind], background);
          assert.ok(ratio >= 4.5, `${step.text} on ${kind} ${editor} (${background}): ${ratio.toFixed(2)}:1`);
        }
      }
    }
  });

  it("are the defaults package.json declares, one theme colour per id", () => {
    const manifest = JSON.parse(fs.readFileSync("package.json", "utf8"));
    const declared = Object.fromEntries(
      manifest.contributes.colors.map((c: { id: string; defaults: Record<string, string> }) => [c.id, c.defaults]),
    );
    assert.deepEqual(declared, COLOR_DEFAULTS);
    for (const step of HEAT) {
      assert.ok(step.text in declared && (!step.background || step.background in declared));
    }
  });

  it("computes contrast as WCAG does", () => {
    assert.equal(contrast("#000000", "#FFFFFF").toFixed(1), "21.0");
    assert.equal(contrast("#777777", "#FFFFFF").toFixed(2), "4.48");
    assert.equal(composite("#FF000080", "#FFFFFF"), "#ff7f7f");
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
