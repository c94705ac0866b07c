"""Does `stepscope try` call a change as a careful person timing both versions by hand would?

Self-contained: it writes two small CUDA training programs into a temporary git repository and, for
each, runs Stepscope as a user would (`python -m stepscope ...`) beside a hand timing of the two
versions written out by hand:

1. `item_step.py`: a per-step `total += loss.item()` (the host waits for the device every step);
   by hand, after: `total += loss.detach()` and one `.item()` after the loop.
2. `const_step.py`: a constant `torch.tensor([...]).cuda()` built and copied every step; by hand,
   after: built once before the loop.

For each: `stepscope profile` (the finding: sync-in-step, repeated-copy), then `stepscope try RUN
--finding KIND` (the finding's variant, the rule's quick fix; `--fix CODE@LINE` where the finding
did not fire, said in the output), and the hand timing: the before and after files run as plain
Python, N steps after W warm-up steps between two synchronises, in alternating processes
(`--processes` pairs). The try's verdict agrees when the hand ratio (after / before, medians over
processes) is beyond the try's own margin on the same side (`faster` below 1 / (1 + margin),
`slower` above 1 + margin), or within it for `no detectable difference`.

Prints a table and writes try_gpu.json (every figure, every command's exit code) to OUT_DIR.
Budget: a few minutes on one H100/H200. `--cpu` runs the same logic on the CPU (to check the script;
its figures mean nothing for a GPU, and the findings do not fire there: the quick fixes are tried).

Stepscope runs from this checkout (its `server/` folder first on PYTHONPATH), installed or not: the
interpreter needs torch and Stepscope's dependencies (orjson, msgspec, zlib-ng) only.

Usage: python benchmarks/try_gpu.py OUT_DIR [--cpu] [--processes 5] [--runs 3] [--passes 30] [--warmup 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

HEAD = textwrap.dedent('''\
    import argparse
    import json
    import time

    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--hand", type=int, default=0, help="time this many steps by hand, after --hand-warmup")
    p.add_argument("--hand-warmup", type=int, default=30)
    p.add_argument("--cpu", action="store_true", help="on the CPU, small (to check the benchmark itself)")
    args = p.parse_args()
    dev = "cpu" if args.cpu or not torch.cuda.is_available() else "cuda"
    width = 512
    depth = 4 if dev == "cpu" else 16
    torch.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, width, device=dev)
    y = torch.randn(256, width, device=dev)


    def sync():
        if dev == "cuda":
            torch.cuda.synchronize()


    steps = args.hand_warmup + args.hand if args.hand else args.steps
    start = None
    ''')
TAIL = textwrap.dedent('''\
    if args.hand:
        sync()
        print(json.dumps({"ms_per_step": (time.perf_counter() - start) * 1000 / args.hand}))
    ''')

ITEM_BEFORE = HEAD + textwrap.dedent('''\
    total = 0.0
    for step in range(steps):
        if args.hand and step == args.hand_warmup:
            sync()
            start = time.perf_counter()
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.item()
    ''') + TAIL
ITEM_AFTER = ITEM_BEFORE.replace("        total += loss.item()\n",
                                 "        total += loss.detach()\n").replace(TAIL, "total = float(total)\n" + TAIL)

CONST_BEFORE = HEAD + textwrap.dedent('''\
    for step in range(steps):
        if args.hand and step == args.hand_warmup:
            sync()
            start = time.perf_counter()
        scale = torch.tensor([0.5, 2.0] * 256).to(dev)
        loss = torch.nn.functional.mse_loss(model(x) * scale, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    ''') + TAIL
CONST_AFTER = CONST_BEFORE.replace("    scale = torch.tensor([0.5, 2.0] * 256).to(dev)\n", "").replace(
    "for step in range(steps):", "scale = torch.tensor([0.5, 2.0] * 256).to(dev)\nfor step in range(steps):")
if "torch.tensor" in CONST_AFTER.split("for step")[1]:
    raise SystemExit("the hand-written hoist did not apply")

CASES = (
    # name, finding, the quick fix's rule and the line text it is at, before, after
    ("item_step", "sync-in-step", "SS101", "total += loss.item()", ITEM_BEFORE, ITEM_AFTER),
    ("const_step", "repeated-copy", "SS501", "scale = torch.tensor", CONST_BEFORE, CONST_AFTER),
)


REPO = Path(__file__).resolve().parents[1]
# Stepscope from this checkout, installed or not (its dependencies must be importable).
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO / "server"), os.environ.get("PYTHONPATH"))
                                                    if p)}


def run(cmd: list[str], cwd: Path, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=ENV)


def git(ws: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(ws), "-c", "user.email=b@example.com", "-c", "user.name=bench", *args],
                   check=True, capture_output=True)


def hand_ratio(ws: Path, before: Path, after: Path, pairs: int, cpu: bool) -> dict:
    """after / before from `pairs` alternating processes of each, N steps timed between two synchronises."""
    extra = ["--hand", "50" if cpu else "200", "--hand-warmup", "10" if cpu else "30"] + (["--cpu"] if cpu else [])
    figures: dict[str, list[float]] = {"before": [], "after": []}
    for i in range(pairs):
        for name in (("before", "after") if i % 2 == 0 else ("after", "before")):
            done = run([sys.executable, str(before if name == "before" else after), *extra], ws)
            if done.returncode != 0:
                raise SystemExit(f"the hand-timed {name} version failed: {done.stderr[-1500:]}")
            figures[name].append(json.loads(done.stdout.strip().splitlines()[-1])["ms_per_step"])
    medians = {k: statistics.median(v) for k, v in figures.items()}
    return {"ms": figures, "median_ms": medians, "ratio": medians["after"] / medians["before"]}


def agrees(detail: str, hand: float, margin: float) -> bool | None:
    """Whether the hand ratio says what the try's verdict (its `verdict_detail`) says; None where the
    try decided nothing (inconclusive: more processes a side would)."""
    if detail == "faster":
        return hand < 1 / (1 + margin)
    if detail == "slower":
        return hand > 1 + margin
    if detail == "within margin":
        return 1 / (1 + margin) <= hand <= 1 + margin
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--cpu", action="store_true", help="run on the CPU (checks the script only)")
    ap.add_argument("--processes", type=int, default=5, help="hand-timed process pairs")
    ap.add_argument("--runs", type=int, default=3, help="the try's processes a side")
    ap.add_argument("--passes", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    stepscope = [sys.executable, "-m", "stepscope"]
    program_args = ["--", "--cpu"] if args.cpu else []
    options = ["--runs", str(args.runs), "--passes", str(args.passes), "--warmup", str(args.warmup), "--json"]
    results = []
    with tempfile.TemporaryDirectory(prefix="try-gpu-") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        hand = Path(tmp) / "hand"
        hand.mkdir()
        for name, _, _, _, before, after in CASES:
            (ws / f"{name}.py").write_text(before)
            (hand / f"{name}_before.py").write_text(before)
            (hand / f"{name}_after.py").write_text(after)
        git(ws, "init", "-q")
        git(ws, "add", "-A")
        git(ws, "commit", "-q", "-m", "the steps")
        for name, kind, code, needle, before, after in CASES:
            entry: dict = {"program": f"{name}.py", "finding": kind}
            made = run([*stepscope, "profile", f"{name}.py", "--json", *program_args], ws)
            entry["profile_exit"] = made.returncode
            report = json.loads(made.stdout) if made.returncode == 0 else {}
            found = next((f for f in report.get("findings") or [] if f["kind"] == kind and f.get("variants")), None)
            if found is not None:
                run_id = Path(report["traces"][0]).parent.name
                cmd = [*stepscope, "try", run_id, "--finding", f"{kind}@{name}.py:{found['line']}", *options]
                entry["tried"] = f"the {kind} finding's variants: {[v['name'] for v in found['variants']]}"
            else:
                line = next(i for i, text in enumerate(before.splitlines(), 1) if needle in text)
                cmd = [*stepscope, "try", f"{name}.py", "--fix", f"{code}@{line}", *options, *program_args]
                entry["tried"] = f"{code}'s quick fix at line {line} (the profile had no {kind} finding with variants)"
            tried = run(cmd, ws)
            entry["try_exit"] = tried.returncode
            if tried.returncode != 0:
                entry["try_error"] = tried.stderr.strip().splitlines()[-1:]
                results.append(entry)
                continue
            doc = json.loads(tried.stdout)
            best = doc["tries"][0]
            entry.update(verdict=best["verdict"], verdict_detail=best.get("verdict_detail"), ratio=best["ratio"],
                         ci95=best["ci95"], margin=best["margin"], values_match=best["values_match"],
                         baseline_ms=doc["baseline"]["median_ms"], tried_ms=best["median_ms"],
                         diff=best["change"]["diff"])
            entry["hand"] = hand_ratio(ws, hand / f"{name}_before.py", hand / f"{name}_after.py", args.processes,
                                       args.cpu)
            entry["agrees"] = agrees(best.get("verdict_detail") or best["verdict"], entry["hand"]["ratio"], best["margin"])
            results.append(entry)
    doc = {"machine": {"host": platform.node(), "python": platform.python_version(), "cpu": args.cpu},
           "options": vars(args) | {"out": str(args.out)}, "cases": results}
    (args.out / "try_gpu.json").write_text(json.dumps(doc, indent=2))
    print(f"{'program':<16} {'try: verdict (ratio, 95% interval)':<52} {'hand: after/before':<22} agrees")
    for e in results:
        if "verdict" not in e:
            print(f"{e['program']:<16} try failed ({e.get('try_error')})")
            continue
        verdict = f"{e['verdict_detail']} ({e['ratio']:.3f}, {e['ci95'][0]:.3f}–{e['ci95'][1]:.3f})"
        handed = f"{e['hand']['ratio']:.3f} ({e['hand']['median_ms']['before']:.2f} → {e['hand']['median_ms']['after']:.2f} ms)"
        said = {True: "yes", False: "NO", None: "undecided (the try was inconclusive: --runs more)"}[e["agrees"]]
        print(f"{e['program']:<16} {verdict:<52} {handed:<22} {said}")
        print(f"{'':<16} tried: {e['tried']}; values unchanged: {e['values_match']}")
    return 0 if all(e.get("agrees") is True for e in results) else 1


if __name__ == "__main__":
    sys.exit(main())
