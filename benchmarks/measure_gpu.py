"""Does `stepscope measure` time a GPU step as a careful person would, and do its verdicts hold?

Self-contained: it writes its own small programs into a temporary git repository and runs
Stepscope on them as a user would (`python -m stepscope ...`), side by side with a hand-written
loop that times N steps with one synchronise at the end.

1. Three steps — launch-bound (hundreds of tiny kernels), GPU-bound (large bf16 matmuls), and one
   fed by a DataLoader with workers — each timed by `stepscope measure` (median of the passes)
   and by hand (N steps, one synchronise), in alternating processes (`--processes`): target, the
   medians over processes within 2%, read beside each side's process-to-process spread. Each
   measure process also runs the hand loop over the same steps (one synchronise at each end), so
   measure's median of those steps is compared with the hand figure of the same process too: free
   of the process-to-process spread, which on a launch-bound or loader step is far above 2%.
2. A `stepscope profile` of each: its `distortion` (profiled / unprofiled, both from the same
   process) beside profiled / hand-timed, and beside the same step indices timed by hand in a
   process without the profiler (the window's steps and the unprofiled passes' steps: a step's
   pace can move over its first steps, so hand figures of steps 10-40 are no measure of steps 3-7).
3. `measure --against HEAD` on the GPU-bound step: a change that adds ~10% of GPU work (one layer
   more out of ten) should read "slower", a change to a comment "no detectable difference", in
   every try.

Prints a compact table and writes `measure_gpu.json` (every figure, every command's exit code) to
the folder given on the command line. Budget: about 8 minutes on one H200 (a process start costs
a few seconds; the tries of step 3 are the bulk). `--cpu` runs the same logic on the CPU with small
sizes (to check the script; its figures mean nothing for a GPU).

For the loader step, a window that ran faster than the loop (`profiled-faster`) is profiled again
with the warm-up the finding advises, and both windows are printed.

Usage: python benchmarks/measure_gpu.py OUT_DIR [--cpu] [--tries 5] [--pairs 3] [--processes 4] [--profiles 1]
       [--kinds launch,gpu,loader] [--changes layer,comment] [--pin CPUS]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUDGET_S = 8 * 60

PROGRAM = textwrap.dedent('''
    """Three kinds of training step, one loop. --hand N: time N steps after --hand-warmup by hand."""
    import argparse
    import json
    import time

    import torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset

    LAYERS = 10

    p = argparse.ArgumentParser()
    p.add_argument("--kind", choices=["launch", "gpu", "loader"], required=True)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--hand", type=int, default=0)
    p.add_argument("--hand-warmup", type=int, default=5)
    p.add_argument("--spans", default="", help="FIRST:COUNT,...: time these steps by hand (FIRST >= 1)")
    p.add_argument("--cpu", action="store_true")
    args = p.parse_args()
    device = torch.device("cpu" if args.cpu or not torch.cuda.is_available() else "cuda")
    small = device.type == "cpu"
    torch.manual_seed(0)


    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()


    class Images(Dataset):
        def __init__(self, n, size):
            self.n, self.size = n, size

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            g = torch.Generator().manual_seed(i)
            image = torch.rand(3, self.size, self.size, generator=g)
            image = torch.nn.functional.avg_pool2d(image, 3, 1, 1)  # some decoding work
            return image, i % 10


    if args.kind == "launch":  # an update over many small tensors: hundreds of tiny kernels
        params = [torch.randn(256, device=device) for _ in range(40 if small else 400)]
        grads = [torch.randn(256, device=device) for _ in params]

        def step(batch):
            for weight, grad in zip(params, grads):
                weight.mul_(0.999).add_(grad, alpha=1e-3)
            return params[0].sum()

        batches = range(args.steps)
    elif args.kind == "gpu":  # large matmuls: the device is the bottleneck
        width, rows = (64, 32) if small else (4096, 4096)
        dtype = torch.float32 if small else torch.bfloat16
        model = nn.Sequential(*[nn.Linear(width, width, bias=False) for _ in range(LAYERS)]).to(device, dtype)
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
        x = torch.randn(rows, width, device=device, dtype=dtype)

        def step(batch):
            out = model(x)
            loss = out.float().pow(2).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            return loss

        batches = range(args.steps)
    else:  # a DataLoader with workers feeds a small convnet
        size, batch_size = (8, 4) if small else (64, 128)
        model = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
        loss_fn = nn.CrossEntropyLoss()
        batches = DataLoader(Images(args.steps * batch_size, size), batch_size=batch_size, num_workers=2,
                             pin_memory=device.type == "cuda", persistent_workers=True)

        def step(batch):
            images, labels = batch
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            return loss

    # --hand N times steps hand_warmup .. hand_warmup + N - 1, each with its batch read: from the end
    # of the step before them to the end of the last, one synchronise at each end.
    # --spans FIRST:COUNT,... times each span of steps the same way (the steps a profile's window and
    # its unprofiled passes ran, in a process without the profiler).
    start = None
    spans = [tuple(int(x) for x in span.split(":")) for span in args.spans.split(",") if span]
    span_start, span_ms = {}, {}
    for i, batch in enumerate(batches):  # the step loop
        if args.hand and i == args.hand_warmup + args.hand:
            break
        if spans and len(span_ms) == len(spans):
            print(json.dumps({"spans_ms": [span_ms[first] for first, _ in spans]}), flush=True)
            break
        loss = step(batch)
        if args.hand and i == args.hand_warmup - 1:
            sync()
            start = time.perf_counter()
        if args.hand and i == args.hand_warmup + args.hand - 1:
            sync()
            print(json.dumps({"hand_ms": (time.perf_counter() - start) * 1000 / args.hand}), flush=True)
        for first, count in spans:
            if i == first - 1:
                sync()
                span_start[first] = time.perf_counter()
            if i == first + count - 1:
                sync()
                span_ms[first] = (time.perf_counter() - span_start[first]) * 1000 / count
''')


def loop_line(program: Path) -> int:
    return next(i for i, text in enumerate(program.read_text().splitlines(), 1) if "# the step loop" in text)


class Bench:
    def __init__(self, out: Path, cpu: bool, pin: str | None = None):
        self.out, self.cpu, self.pin = out, cpu, pin
        self.started = time.monotonic()
        self.commands: list[dict] = []
        self.ws = Path(tempfile.mkdtemp(prefix="measure-gpu-"))
        self.env = {**os.environ, "PYTHONPATH": f"{REPO / 'server'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}

    def left_s(self) -> float:
        return BUDGET_S - (time.monotonic() - self.started)

    def run(self, *cmd: str, timeout: float = 300) -> tuple[int, str, str]:
        began = time.monotonic()
        said = " ".join(cmd[1:])  # the command without its interpreter
        if self.pin:  # every process (and the program measure starts, and its workers) on these CPUs
            cmd = ("taskset", "-c", self.pin, *cmd)
        try:
            r = subprocess.run(list(cmd), cwd=self.ws, env=self.env, capture_output=True, text=True,
                               timeout=min(timeout, max(10.0, self.left_s())))
            code, out, err = r.returncode, r.stdout, r.stderr
        except subprocess.TimeoutExpired as e:
            code, out, err = 124, e.stdout or "", f"timed out after {e.timeout:.0f} s"
            out = out.decode() if isinstance(out, bytes) else out
        self.commands.append({"cmd": said, "exit": code, "s": round(time.monotonic() - began, 1),
                              "stderr_tail": err.strip().splitlines()[-3:] if code else []})
        return code, out, err

    def stepscope(self, *args: str, timeout: float = 300) -> tuple[int, dict | None]:
        code, out, _ = self.run(sys.executable, "-m", "stepscope", *args, timeout=timeout)
        try:
            return code, json.loads(out) if out.strip() else None
        except ValueError:
            return code, None


def setup(bench: Bench) -> Path:
    program = bench.ws / "steps.py"
    program.write_text(PROGRAM)
    for args in (["init", "-q"], ["config", "user.email", "bench@example.com"], ["config", "user.name", "bench"],
                 ["add", "steps.py"], ["commit", "-q", "-m", "steps"]):
        subprocess.run(["git", "-C", str(bench.ws), *args], check=True, capture_output=True)
    return program


def machine(bench: Bench) -> dict:
    code, out, _ = bench.run(sys.executable, "-c", "import torch, json; print(json.dumps({'torch': torch.__version__, "
                             "'cuda': torch.version.cuda, 'device': torch.cuda.get_device_name(0) "
                             "if torch.cuda.is_available() else 'CPU only'}))")
    info = json.loads(out) if code == 0 else {}
    info["host"] = platform.node()
    return info


def program_hand_ms(run_dir: Path) -> float | None:
    """The program's own figure for the steps it timed, from the log of a measure run."""
    log = run_dir / "program.log"
    lines = [t for t in log.read_text().splitlines() if t.startswith('{"hand_ms"')] if log.exists() else []
    return json.loads(lines[-1])["hand_ms"] if lines else None


def timing_cases(bench: Bench, program: Path, warmup: int, passes: int, processes: int,
                 profiles: int = 1) -> list[dict]:
    line = str(loop_line(program))
    extra = ["--cpu"] if bench.cpu else []
    steps = warmup + passes + 10
    rows = []
    for kind in bench.kinds:
        row: dict = {"kind": kind, "hand_runs_ms": [], "measure_runs": []}
        # Hand and measure in alternating processes (A B A B ...): a step's speed moves from one process
        # to the next (launch-bound steps by 30% and more on a shared host), so one process of each says
        # nothing about a 2% agreement; the medians over processes do, beside each side's own spread.
        for _ in range(processes):
            code, out, _ = bench.run(sys.executable, str(program), "--kind", kind, "--steps", str(steps),
                                     "--hand", str(passes - 1), "--hand-warmup", str(warmup + 1), *extra)
            if code == 0 and out.strip():
                row["hand_runs_ms"].append(json.loads(out.strip().splitlines()[-1])["hand_ms"])
            # The program also times the measured steps after the first itself, one synchronise at
            # each end: the same steps in the same process, free of the process-to-process spread.
            # (The first is left out: the agent looks at the program's models and batch as it begins,
            # outside measure's own clock but inside the program's.)
            code, doc = bench.stepscope("measure", str(program), "--line", line, "--warmup", str(warmup),
                                        "--passes", str(passes), "--json", "--", "--kind", kind, "--steps",
                                        str(steps), "--hand", str(passes - 1), "--hand-warmup", str(warmup + 1), *extra)
            row["measure_exit"] = code
            if doc:
                same = doc["raw_ms"][1:]
                row["measure_runs"].append({"median_ms": doc["median_ms"], "mean_ms": statistics.fmean(doc["raw_ms"]),
                                            "iqr_ms": doc["iqr_ms"], "noisy": doc.get("noisy"),
                                            "same_process_hand_ms": program_hand_ms(Path(doc["run_dir"])),
                                            "same_steps_median_ms": statistics.median(same),
                                            "same_steps_mean_ms": statistics.fmean(same)})
                row.update(clock=doc.get("clock"), measure_notes=doc.get("notes"))
        hands, runs = row["hand_runs_ms"], row["measure_runs"]
        row["hand_ms"] = statistics.median(hands) if hands else None
        if runs:
            row.update(measure_median_ms=statistics.median(r["median_ms"] for r in runs),
                       measure_mean_ms=statistics.median(r["mean_ms"] for r in runs),
                       measure_iqr_ms=statistics.median(r["iqr_ms"] for r in runs),
                       noisy=any(r["noisy"] for r in runs))
        same = [r for r in runs if r["same_process_hand_ms"]]
        row["same_process_median_ratios"] = [r["same_steps_median_ms"] / r["same_process_hand_ms"] for r in same]
        row["same_process_mean_ratios"] = [r["same_steps_mean_ms"] / r["same_process_hand_ms"] for r in same]
        row["hand_spread"] = max(hands) / min(hands) if len(hands) > 1 else None
        row["measure_spread"] = (max(r["median_ms"] for r in runs) / min(r["median_ms"] for r in runs)
                                 if len(runs) > 1 else None)
        # The profile's own schedule, plus as many steps again for its unprofiled passes.
        code, report = bench.stepscope("profile", str(program), "--line", line, "--json", "--", "--kind", kind,
                                       "--steps", "40", *extra)
        row["profile_exit"] = code
        if report:
            unprofiled = report.get("unprofiled") or {}
            row.update(profiled_ms=report.get("ms_per_step"), unprofiled_ms=unprofiled.get("ms_per_step"),
                       distortion=report.get("distortion"), profiled_steps_ms=[s["ms"] for s in report["steps"]],
                       unprofiled_mean_ms=unprofiled.get("mean_ms"),
                       unprofiled_warmup_passes=unprofiled.get("warmup_passes"),
                       findings=[f["kind"] for f in report.get("findings") or []])
            faster = next((f for f in report.get("findings") or [] if f["kind"] == "profiled-faster"), None)
            if faster is not None:
                row["profiled_faster"] = {k: faster["figures"].get(k) for k in
                                          ("cause", "window_batch_read_ms", "unprofiled_batch_read_ms")}
                # the warm-up the finding advises, and what the window reads with it
                advised = re.search(r"--warmup (\d+)", faster["next_check"])
                if advised:
                    code, again = bench.stepscope("profile", str(program), "--line", line, "--warmup", advised[1],
                                                  "--json", "--", "--kind", kind, "--steps", "60", *extra)
                    if again:
                        row["advised"] = {"warmup": int(advised[1]), "exit": code, "profiled_ms": again["ms_per_step"],
                                          "distortion": again.get("distortion"),
                                          "steps_ms": [s["ms"] for s in again["steps"]],
                                          "findings": [f["kind"] for f in again.get("findings") or []]}
            if row.get("unprofiled_ms") and report.get("scenario", {}).get("schedule"):
                # the same step indices as the window and as its unprofiled passes, by hand in a
                # process without the profiler: a step's pace can move over its first steps
                sched = report["scenario"]["schedule"]
                window = sched["wait"] + sched["warmup"]
                tail = window + len(report["steps"]) + (unprofiled.get("warmup_passes") or 0)
                spans = f"{window}:{len(report['steps'])},{tail}:{unprofiled.get('passes')}"
                code, out, _ = bench.run(sys.executable, str(program), "--kind", kind, "--steps", "40", "--spans",
                                         spans, *extra)
                if code == 0 and out.strip():
                    at_window, at_tail = json.loads(out.strip().splitlines()[-1])["spans_ms"]
                    row.update(hand_at_window_ms=at_window, hand_at_tail_ms=at_tail,
                               profiled_vs_hand_at_window=row["profiled_ms"] / at_window,
                               unprofiled_vs_hand_at_tail=row["unprofiled_ms"] / at_tail)
        # More profile processes: the profiled figure moves from process to process (the profiler's cost
        # is host work), the distortion should move with it, each against its own steps after the window.
        row["profiles"] = [{"profiled_ms": row.get("profiled_ms"), "unprofiled_ms": row.get("unprofiled_ms"),
                            "distortion": row.get("distortion")}] if report else []
        for _ in range(profiles - 1):
            code, again = bench.stepscope("profile", str(program), "--line", line, "--json", "--", "--kind", kind,
                                          "--steps", "40", *extra)
            if again:
                row["profiles"].append({"profiled_ms": again.get("ms_per_step"), "distortion": again.get("distortion"),
                                        "unprofiled_ms": (again.get("unprofiled") or {}).get("ms_per_step")})
        if row.get("measure_mean_ms") and row.get("hand_ms"):
            row["measure_mean_vs_hand"] = row["measure_mean_ms"] / row["hand_ms"]
        hand, median = row.get("hand_ms"), row.get("measure_median_ms")
        row["median_vs_hand"] = median / hand if hand and median else None
        if hand and row.get("profiled_ms"):
            row["profiled_vs_hand"] = row["profiled_ms"] / hand
        if row.get("distortion") and row.get("profiled_vs_hand"):
            row["distortion_vs_profiled_over_hand"] = row["distortion"] / row["profiled_vs_hand"]
        rows.append(row)
        print(f"  {kind:<7} hand {fmt(hand)}  measure {fmt(median)} ({fmt(row.get('median_vs_hand'), 3)}x)  "
              f"profiled {fmt(row.get('profiled_ms'))}  unprofiled {fmt(row.get('unprofiled_ms'))}  "
              f"distortion {fmt(row.get('distortion'), 2)} vs profiled/hand {fmt(row.get('profiled_vs_hand'), 2)}",
              flush=True)
        print(f"          {len(hands)} hand / {len(runs)} measure processes, alternating: hand {[round(h, 3) for h in hands]} "
              f"(spread {fmt(row['hand_spread'], 3)}x), measure medians {[round(r['median_ms'], 3) for r in runs]} "
              f"(spread {fmt(row['measure_spread'], 3)}x)", flush=True)
        if row.get("hand_at_window_ms"):
            print(f"          the same step indices by hand: window {fmt(row['hand_at_window_ms'])} (profiled / hand "
                  f"{fmt(row['profiled_vs_hand_at_window'], 2)}), after it {fmt(row['hand_at_tail_ms'])} (unprofiled / "
                  f"hand {fmt(row['unprofiled_vs_hand_at_tail'], 2)})", flush=True)
        if len(row["profiles"]) > 1 and hand:
            done = [x for x in row["profiles"] if x["distortion"] and x["profiled_ms"] and x["unprofiled_ms"]]
            print(f"          {len(done)} profile processes: distortion {[round(x['distortion'], 2) for x in done]}, "
                  f"profiled / hand {[round(x['profiled_ms'] / hand, 2) for x in done]}, unprofiled / hand "
                  f"{[round(x['unprofiled_ms'] / hand, 3) for x in done]}", flush=True)
        if same:
            print(f"          same process, same steps: measure median / the program's own loop "
                  f"{[round(x, 4) for x in row['same_process_median_ratios']]}, mean / loop "
                  f"{[round(x, 4) for x in row['same_process_mean_ratios']]}", flush=True)
        if row.get("profiled_faster") or row.get("advised") or kind == "loader":
            advised = row.get("advised") or {}
            print(f"          measure mean {fmt(row.get('measure_mean_ms'))} ({fmt(row.get('measure_mean_vs_hand'), 3)}x "
                  f"hand); window steps {row.get('profiled_steps_ms')}; findings {row.get('findings')}; "
                  f"profiled-faster {row.get('profiled_faster')}; with --warmup {advised.get('warmup')}: profiled "
                  f"{fmt(advised.get('profiled_ms'))}, distortion {fmt(advised.get('distortion'), 2)}, "
                  f"findings {advised.get('findings')}", flush=True)
    return rows


def against_tries(bench: Bench, program: Path, tries: int, pairs: int, warmup: int, passes: int,
                  which: list[str]) -> list[dict]:
    original = program.read_text()
    changes = {
        "one layer more (~10% more GPU work)": ("layer", "slower", original.replace("LAYERS = 10", "LAYERS = 11")),
        "a comment": ("comment", "no detectable difference",
                      original.replace("LAYERS = 10\n", "LAYERS = 10\n# the width of every layer is the same\n")),
    }
    changes = {name: (expected, text) for name, (key, expected, text) in changes.items() if key in which}
    extra = ["--cpu"] if bench.cpu else []
    steps = str(warmup + passes + 10)
    out = []
    for name, (expected, text) in changes.items():
        program.write_text(text)
        for t in range(tries):
            if bench.left_s() < 45:
                out.append({"change": name, "try": t, "skipped": "time budget spent"})
                continue
            code, doc = bench.stepscope("measure", str(program), "--line", str(loop_line(program)), "--against",
                                        "HEAD", "--runs", str(pairs), "--warmup", str(warmup), "--passes",
                                        str(passes), "--json", "--", "--kind", "gpu", "--steps", steps, *extra,
                                        timeout=240)
            row = {"change": name, "try": t, "expected": expected, "exit": code}
            if doc:
                row.update(verdict=doc.get("verdict"), ratio=doc.get("ratio"), ci95=doc.get("ci95"),
                           values_match=doc.get("values_match"),
                           run_to_run_pct=(doc.get("variation") or {}).get("run_to_run_pct"))
            out.append(row)
            print(f"  {name:<36} try {t + 1}: {row.get('verdict')} (ratio {fmt(row.get('ratio'), 4)}, 95% "
                  f"{fmt((row.get('ci95') or [None])[0], 4)}-{fmt((row.get('ci95') or [None, None])[1], 4)})",
                  flush=True)
    program.write_text(original)
    return out


def fmt(value, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--cpu", action="store_true", help="run on the CPU with small sizes (checks the script only)")
    p.add_argument("--tries", type=int, default=5)
    p.add_argument("--pairs", type=int, default=3, help="--runs of each --against (processes per side)")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--passes", type=int, default=30)
    p.add_argument("--kinds", default="launch,gpu,loader", help="which steps of 1-2 (comma-separated)")
    p.add_argument("--processes", type=int, default=4, help="alternating hand / measure processes of each step")
    p.add_argument("--profiles", type=int, default=1, help="profile processes of each step (2: distortion per process)")
    p.add_argument("--changes", default="layer,comment", help="which changes step 3 tries (comma-separated)")
    p.add_argument("--pin", help="run every process on these CPUs (taskset -c, e.g. 0-3): is a step's pace per "
                                 "process a matter of where the process lands?")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    bench = Bench(args.out, args.cpu, args.pin)
    bench.kinds = [k for k in args.kinds.split(",") if k in ("launch", "gpu", "loader")]
    program = setup(bench)
    result: dict = {"machine": machine(bench), "cpu": args.cpu, "warmup": args.warmup, "passes": args.passes,
                    "pin": args.pin}
    print(f"machine: {result['machine']}", flush=True)
    print("1-2. measure vs a hand-written loop (one synchronise), and the profile's distortion:", flush=True)
    result["timing"] = timing_cases(bench, program, args.warmup, args.passes, args.processes, args.profiles)
    print(f"3. --against HEAD, {args.tries} tries each, {args.pairs} processes per side:", flush=True)
    result["against"] = against_tries(bench, program, args.tries, args.pairs, args.warmup, args.passes,
                                      args.changes.split(","))
    result["targets"] = {
        "median_within_2pct_of_hand": [abs(r["median_vs_hand"] - 1) <= 0.02 if r.get("median_vs_hand") else None
                                       for r in result["timing"]],
        "mean_within_2pct_of_hand": [abs(r["measure_mean_vs_hand"] - 1) <= 0.02 if r.get("measure_mean_vs_hand")
                                     else None for r in result["timing"]],
        "same_process_median_within_2pct": [all(abs(x - 1) <= 0.02 for x in r["same_process_median_ratios"])
                                            if r["same_process_median_ratios"] else None for r in result["timing"]],
        "against_as_expected": [r.get("verdict") == r.get("expected") for r in result["against"]
                                if "skipped" not in r],
    }
    result["commands"] = bench.commands
    result["seconds"] = round(time.monotonic() - bench.started, 1)
    (args.out / "measure_gpu.json").write_text(json.dumps(result, indent=2))
    print(f"targets: {json.dumps(result['targets'])}")
    print(f"done in {result['seconds']} s; results in {args.out / 'measure_gpu.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
