// Bundles the extension client into one file: extension/dist/extension.js (Node, CommonJS).
// `vscode` is provided by the editor at run time, so it stays external.
import * as esbuild from "esbuild";

const production = process.argv.includes("--production");

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
