// Which launch configuration runs a file, and what it asks for (launchConfig.ts).
import assert from "node:assert/strict";
import * as path from "node:path";
import { describe, it } from "node:test";
import { expandVariables, LaunchContext, launchedProgram, moduleFile, parseEnvFile, resolveLaunch } from "../src/launchConfig";

const WS = "/home/ana/my project";
const FILE = `${WS}/pkg/train.py`;

function context(files: Record<string, string> = {}, extra: Partial<LaunchContext> = {}): LaunchContext {
  return {
    file: FILE,
    folder: { name: "proj", path: WS },
    folders: [{ name: "proj", path: WS }, { name: "data", path: "/srv/data" }],
    env: { DATA_ROOT: "/mnt/d", HOME: "/home/ana" },
    home: "/home/ana",
    readFile: (file) => files[file],
    isFile: (file) => file in files || file === FILE,
    ...extra,
  };
}

function options(resolution: ReturnType<typeof resolveLaunch>) {
  assert.ok(resolution && "options" in resolution, `expected a configuration, got ${JSON.stringify(resolution)}`);
  return resolution.options;
}

describe("expandVariables", () => {
  it("expands every variable a Python launch configuration uses", () => {
    const c = context();
    assert.equal(expandVariables("${workspaceFolder}/x", c), `${WS}/x`);
    assert.equal(expandVariables("${workspaceFolder:data}/shards", c), "/srv/data/shards");
    assert.equal(expandVariables("${userHome}/.cache", c), "/home/ana/.cache");
    assert.equal(expandVariables("${env:DATA_ROOT}/a ${env:UNSET}|", c), "/mnt/d/a |");
    assert.equal(expandVariables("${file} ${fileDirname} ${fileBasename} ${fileBasenameNoExtension}", c),
      `${FILE} ${WS}/pkg train.py train`);
    assert.equal(expandVariables("${relativeFile}", c), path.join("pkg", "train.py"));
  });

  it("refuses what only a debug session could know", () => {
    assert.throws(() => expandVariables("${input:steps}", context()), /cannot be expanded outside a debug session/);
    assert.throws(() => expandVariables("${workspaceFolder:nope}", context()), /names no workspace folder/);
  });
});

describe("moduleFile", () => {
  const files = new Set([`${WS}/pkg/train.py`, `${WS}/tool/__main__.py`]);
  const isFile = (f: string) => files.has(f);
  it("finds a module or a package's __main__ under the roots, in order", () => {
    assert.equal(moduleFile("pkg.train", [WS], isFile), `${WS}/pkg/train.py`);
    assert.equal(moduleFile("tool", ["/elsewhere", WS], isFile), `${WS}/tool/__main__.py`);
    assert.equal(moduleFile("torch.distributed.run", [WS], isFile), undefined);
    assert.equal(moduleFile("../etc", [WS], isFile), undefined);
  });
});

describe("parseEnvFile", () => {
  it("reads KEY=value lines as the Python extension does", () => {
    const text = [
      "# comment", "", "export A=1", "B = two words # trailing comment", "C='single ${A}'", 'D="line\\nbreak ${A}"',
      "E=${A}-${DATA_ROOT}-${MISSING}", "not a line", "F=",
    ].join("\r\n");
    assert.deepEqual(parseEnvFile(text, { DATA_ROOT: "/mnt/d" }), {
      A: "1", B: "two words", C: "single ${A}", D: "line\nbreak 1", E: "1-/mnt/d-", F: "",
    });
  });
});

describe("resolveLaunch", () => {
  it("takes the configuration whose program is this file, with its args, env, cwd and python", () => {
    const configurations = [
      { type: "debugpy", request: "launch", name: "other", program: "${workspaceFolder}/eval.py" },
      {
        type: "debugpy", request: "launch", name: "train", program: "${workspaceFolder}/pkg/train.py",
        args: ["--data", "${workspaceFolder:data}", 3], env: { MODE: "fast", ROOT: "${env:DATA_ROOT}" },
        cwd: "${fileDirname}", python: "${workspaceFolder}/.venv/bin/python",
      },
    ];
    assert.deepEqual(options(resolveLaunch(configurations, context())), {
      name: "train", program: FILE, module: undefined, args: ["--data", "/srv/data"],
      env: { MODE: "fast", ROOT: "/mnt/d" }, cwd: `${WS}/pkg`, python: `${WS}/.venv/bin/python`,
    });
  });

  it("takes a module configuration only when the module is this file", () => {
    const torchrunOther = { type: "debugpy", request: "launch", name: "ddp eval", module: "torch.distributed.run",
      args: ["--nproc_per_node", "2", "pkg/eval.py"] };
    const other = { type: "python", request: "launch", name: "eval", module: "pkg.eval" };
    const mine = { type: "python", request: "launch", name: "as module", module: "pkg.train" };
    assert.equal(resolveLaunch([torchrunOther, other], context()), undefined);
    const chosen = options(resolveLaunch([torchrunOther, other, mine], context()));
    assert.equal(chosen.name, "as module");
    assert.equal(chosen.module, "pkg.train");
  });

  it("runs this file through torchrun when a torchrun configuration names it", () => {
    const ddp = { type: "debugpy", request: "launch", name: "ddp", module: "torch.distributed.run",
      args: ["--nproc_per_node", "2", "--rdzv-endpoint", "${env:HEAD}:29500", "pkg/train.py", "--epochs", "3"],
      env: { NCCL_DEBUG: "WARN" } };
    assert.deepEqual(options(resolveLaunch([ddp], context({}, { env: { HEAD: "10.0.0.1" } }))), {
      name: "ddp", program: FILE, module: undefined, args: ["--epochs", "3"], env: { NCCL_DEBUG: "WARN" },
      cwd: undefined, python: undefined,
      launcher: { module: "torch.distributed.run", args: ["--nproc_per_node", "2", "--rdzv-endpoint", "10.0.0.1:29500"] },
    });
    // torchrun's module form: `-m` is the launcher's flag; the program is the module, as Stepscope starts it
    const asModule = { type: "debugpy", request: "launch", name: "ddp -m", module: "torch.distributed.launch",
      args: ["-m", "--nproc_per_node=2", "pkg.train"] };
    assert.deepEqual(options(resolveLaunch([asModule], context())).launcher,
      { module: "torch.distributed.launch", args: ["--nproc_per_node=2"] });
    assert.equal(options(resolveLaunch([asModule], context())).module, "pkg.train");
  });

  it("finds the program among a launcher's arguments, or nothing", () => {
    const isFile = (f: string) => f === FILE;
    assert.deepEqual(launchedProgram(["--standalone", FILE, "-v"], [WS], FILE, isFile),
      { launcherArgs: ["--standalone"], program: FILE, programArgs: ["-v"] });
    assert.equal(launchedProgram(["--nproc-per-node", "2", "eval.py"], [WS], FILE, isFile), undefined);
    assert.equal(launchedProgram(["--no-python", "pkg/train.py"], [WS], FILE, isFile), undefined);
    assert.equal(launchedProgram([], [WS], FILE, isFile), undefined);
  });

  it("reads the envFile, under the configuration's own env", () => {
    const files = { [`${WS}/conf/train.env`]: "MODE=slow\nSEED=1\n" };
    const config = { type: "debugpy", request: "launch", name: "t", program: "${file}",
      envFile: "${workspaceFolder}/conf/train.env", env: { MODE: "fast" } };
    assert.deepEqual(options(resolveLaunch([config], context(files))).env, { MODE: "fast", SEED: "1" });
  });

  it("reads the workspace's .env when no envFile is named, as the debugger does", () => {
    const files = { [`${WS}/.env`]: "TOKEN_FILE=~/t\n" };
    const config = { type: "debugpy", request: "launch", name: "t", program: "${file}" };
    assert.deepEqual(options(resolveLaunch([config], context(files))).env, { TOKEN_FILE: "~/t" });
    assert.deepEqual(options(resolveLaunch([config], context())).env, {});
  });

  it("says in one line why a configuration for this file cannot be used", () => {
    const missing = { type: "debugpy", request: "launch", name: "t", program: "${file}", envFile: "nope.env" };
    assert.deepEqual(resolveLaunch([missing], context()),
      { problem: `the launch configuration "t" names an envFile that cannot be read: ${WS}/nope.env` });
    const asks = { type: "debugpy", request: "launch", name: "t", program: "${file}", args: ["${input:steps}"] };
    assert.deepEqual(resolveLaunch([asks], context()),
      { problem: 'the launch configuration "t" runs this file, but ${input:steps} cannot be expanded outside a debug session' });
  });

  it("leaves alone what is not a Python launch of this file", () => {
    const c = context();
    assert.equal(resolveLaunch(undefined, c), undefined);
    assert.equal(resolveLaunch("nonsense", c), undefined);
    assert.equal(resolveLaunch([null, 3, { type: "node", request: "launch", program: FILE },
      { type: "debugpy", request: "attach", program: FILE }, { type: "debugpy", request: "launch" }], c), undefined);
  });

  it("keeps a bare interpreter command for PATH to find", () => {
    const config = { type: "debugpy", request: "launch", program: "${file}", python: "python3.12" };
    assert.equal(options(resolveLaunch([config], context())).python, "python3.12");
  });
});
