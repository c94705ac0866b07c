// Bundles the extension client into one file: extension/dist/extension.js (Node, CommonJS).
// `vscode` is provided by the editor at run time, so it stays external.
// With --tests: bundles each extension/test/*.test.ts into extension/out/test/*.test.cjs for
// `node --test` (the client's unit tests; they cover the modules that do not import `vscode`).
import * as fs from "fs";
import * as esbuild from "esbuild";

const production = process.argv.includes("--production");

if (process.argv.includes("--tests")) {
  const tests = fs.readdirSync("extension/test").filter((name) => name.endsWith(".test.ts"));
  await esbuild.build({
    entryPoints: tests.map((name) => `extension/test/${name}`),
    outdir: "extension/out/test",
    outExtension: { ".js": ".cjs" },
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    external: ["vscode"],  // a test that needs it fails to load: pure modules only
    sourcemap: "inline",
    logLevel: "warning",
  });
} else {
  await esbuild.build({
    entryPoints: ["extension/src/extension.ts"],
    outfile: "extension/dist/extension.js",
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    external: ["vscode"],
    minify: production,
    sourcemap: production ? false : "linked",
    logLevel: "warning",
  });
}
