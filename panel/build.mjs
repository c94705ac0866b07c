// Builds the trace panel's webview: panel/dist/panel.js (one browser bundle, no remote resources) and
// panel/dist/panel.css; with --tests, the unit tests into .cache/panel-tests/ for `node --test`.
//   node panel/build.mjs [--production] [--tests]
import * as esbuild from "esbuild";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const production = process.argv.includes("--production");

await esbuild.build({
  entryPoints: { panel: join(here, "src/main.ts"), "panel-style": join(here, "src/panel.css") },
  outdir: join(here, "dist"),
  entryNames: "[name]",
  bundle: true,
  platform: "browser",
  format: "iife",
  target: ["chrome120"],
  minify: production,
  sourcemap: false,
  legalComments: "none",
  logLevel: "warning",
  loader: { ".css": "css" },
}).then(async () => {
  // one CSS file named as the host links it
  const { renameSync } = await import("node:fs");
  renameSync(join(here, "dist/panel-style.css"), join(here, "dist/panel.css"));
});

if (process.argv.includes("--tests")) {
  // the unit tests, and for the browser tests' driver and the benchmark the page template and the
  // timeline split as the host posts it
  const tests = readdirSync(join(here, "test")).filter((f) => f.endsWith(".test.ts"));
  await esbuild.build({
    entryPoints: Object.fromEntries([
      ...tests.map((f) => [f.replace(/\.ts$/, ""), join(here, "test", f)]),
      ["html", join(here, "src", "html.ts")],
      ["timeline-doc", join(here, "src", "timeline-doc.ts")],
    ]),
    outdir: join(here, "..", ".cache", "panel-tests"),
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
  });
}
