"""How fast is `stepscope check`? Side by side, in one run, best of several runs.

1. A generated 20,000-line training module, checked by the `stepscope check` process, against a
   plain `python -c "ast.parse(...)"` process on the same file (target: at most 2.5x). The two
   processes alternate, run after run, so a machine that is busy meanwhile slows both alike; the
   ratio is of the best runs' wall times, and is also given for the processes' CPU time.
2. The same file checked by TorchFix (libcst-based), when a TorchFix install is found in
   .cache/torchfix-venv (target: Stepscope at least 10x faster). Create it with
   `python -m venv .cache/torchfix-venv && .cache/torchfix-venv/bin/pip install torchfix`.
3. The editor's case, in this process: a 5,000-line file after an edit, checked by the
   language server's `DocumentChecker` (re-checks the edited def/class) and, side by side, by a
   full `check_source`; p50/p95 over repeated edits (target: p95 <= 100 ms). The end-to-end
   figure, through a real LSP client, is benchmarks/check_server_latency.py.

Run: `.venv/bin/python benchmarks/check_speed.py [--runs 5] [--edit-file some_real_file.py]`.
Prints the figures and ratios.

`--instructions` counts the instructions each process executes instead (valgrind's cachegrind,
`--cache-sim=no`: one run each, slow, the same figure however busy the machine is): the ratio to
quote from a machine shared with other work, where the timed ratio moves with the load.

`--per-rule` says where the check's time goes instead, in this process: the parse, the context
the rules share (`ModuleContext.build`), each rule over that same context, and the ordering and
suppression of what they found, as medians over `--runs` fresh contexts (a result the rules share,
such as the profiler windows, is counted with the first rule that asks for it). `--profile FILE`
writes a cProfile of the whole `stepscope check` process (`python -m cProfile -o FILE -m stepscope
check ...`) and prints its top functions. `python -X importtime -m stepscope check FILE` gives the
start-up's share. The generated file is denser than typical hand-written code (no
comments or blank lines), so it is the harder case for the edit latency.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TORCHFIX = REPO / ".cache" / "torchfix-venv" / "bin" / "torchfix"

BLOCK = '''
def train_{n}(model, loader, optimizer, criterion, device, epochs=2):
    """Train for a few epochs and log every {n} steps."""
    import time
    from torch.profiler import profile, schedule, record_function
    running = torch.zeros((), device=device)
    mean = torch.tensor([0.5, 0.5, 0.5], device=device)
    batches = iter(loader)
    with profile(schedule=schedule(wait=1, warmup=1, active=3)) as prof:
        for epoch in range(epochs):
            start = time.perf_counter()
            for step, (x, y) in enumerate(loader):
                with record_function("step_{n}"):
                    x, y = x.to(device, non_blocking=True), y.to(device)
                    optimizer.zero_grad(set_to_none=True)
                    out = model((x - mean.view(1, 3, 1, 1)) * 2.0)
                    loss = criterion(out, y)
                    loss.backward()
                    optimizer.step()
                    running += loss.detach()
                if step % 50 == 0:
                    print(epoch, step, running.item())
                prof.step()
            torch.cuda.synchronize()
            elapsed = time.perf_counter() - start
            print(f"epoch {{epoch}} took {{elapsed:.2f}}s")
    return running


class Block{n}(torch.nn.Module):
    def __init__(self, width: int = {n}) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(width, width)
        self.scale = torch.nn.Parameter(torch.ones(width))

    def forward(self, x):
        h = self.fc(x) * self.scale
        for _ in range(2):
            h = torch.relu(h) + x
        return {{"out": h, "norm": h.norm(dim=-1)}}
'''


def generate(lines: int) -> str:
    parts = ['"""Generated training code for the check benchmark."""\nimport torch\n']
    n = 0
    while sum(p.count("\n") for p in parts) < lines:
        parts.append(BLOCK.format(n=n))
        n += 1
    text = "".join(parts)
    return "\n".join(text.split("\n")[:lines]).rsplit("\ndef ", 1)[0] + "\n"


def child_env(cwd: Path, server: Path | None = None) -> dict[str, str]:
    """The processes' environment: compiled bytecode cached (in `cwd`), as an installed package
    has it, even where PYTHONDONTWRITEBYTECODE is set (compiling Stepscope's modules on every
    run would be timed otherwise)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cwd / "pycache")
    # this checkout's `server` folder, or another one's (--against): never whichever Stepscope
    # the interpreter would find from the temporary folder the processes run in
    env["PYTHONPATH"] = str(server or REPO / "server")
    return env


def timed(cmd: list[str], cwd: Path, server: Path | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children) of one run of `cmd`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                          env=child_env(cwd, server))
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{cmd[0]} failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def alternating(cmds: dict[str, tuple[list[str], Path | None]], runs: int, cwd: Path
                ) -> dict[str, tuple[float, float]]:
    """Best wall time and best CPU time of each command, the commands run in turn."""
    walls: dict[str, list[float]] = {name: [] for name in cmds}
    cpus: dict[str, list[float]] = {name: [] for name in cmds}
    for name, (cmd, server) in cmds.items():  # untimed: the file in the page cache, bytecode written
        timed(cmd, cwd, server)
    for _ in range(runs):
        for name, (cmd, server) in cmds.items():
            wall, cpu = timed(cmd, cwd, server)
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {name: (min(walls[name]), min(cpus[name])) for name in cmds}


def edit_latency(lines: int, edits: int, source: Path | None = None
                 ) -> dict[str, tuple[float, float]]:
    sys.path.insert(0, str(REPO / "server"))
    from stepscope.rules import check_source
    from stepscope.rules.config import load_config
    from stepscope.rules.incremental import DocumentChecker

    base = source.read_text(encoding="utf-8") if source else generate(lines)
    path = str(REPO / "bench_edit.py")
    config = load_config(REPO)
    checker = DocumentChecker(path, config)
    checker.check(base)
    times: dict[str, list[float]] = {"DocumentChecker": [], "check_source (full)": []}
    text_lines = base.split("\n")
    for i in range(edits):
        # a keystroke: one line of the middle changes (a different one each time)
        mid = len(text_lines) // 2 + i
        text_lines[mid] = text_lines[mid] + f"  # edit {i}"
        text = "\n".join(text_lines)
        for name, check in (("DocumentChecker", checker.check),
                            ("check_source (full)", lambda t: check_source(t, path, config))):
            t0 = time.perf_counter()
            check(text)
            times[name].append((time.perf_counter() - t0) * 1000)
    out = {}
    for name, ms in times.items():
        ms.sort()
        out[name] = (statistics.median(ms), ms[max(0, int(round(0.95 * len(ms))) - 1)])
    return out


def instructions(cmd: list[str], cwd: Path, server: Path | None = None) -> int:
    """The instructions one run of `cmd` executes (user space, all of the process)."""
    import re

    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                           "--cachegrind-out-file=/dev/null", *cmd], cwd=cwd,
                          capture_output=True, text=True, env=child_env(cwd, server))
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode not in (0, 1) or not found:
        raise SystemExit(f"valgrind failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return int(found.group(1).replace(",", ""))


def per_rule(text: str, runs: int) -> None:
    """Where the check's time goes, in this process: median ms of each phase over `runs`."""
    import ast
    import gc

    sys.path.insert(0, str(REPO / "server"))
    from stepscope.rules import engine
    from stepscope.rules.config import Config
    from stepscope.rules.context import ModuleContext

    config = Config()
    path = str(REPO / "big_train.py")
    codes = engine.selected_codes(config, path)
    times: dict[str, list[float]] = {}

    clock = time.process_time  # this process's CPU time: a busy machine inflates it less

    def note(name: str, t0: float) -> None:
        times.setdefault(name, []).append((clock() - t0) * 1000)

    gc.disable()  # as the check does (engine.collector_paused)
    found_count = 0
    for _ in range(runs):
        t0 = clock()
        tree = ast.parse(text)
        note("ast.parse", t0)
        t0 = clock()
        ctx = ModuleContext.build(tree, text, config.model_names)
        note("context (shared)", t0)
        found = []
        for code in codes:
            t0 = clock()
            found.extend(engine.RULE_FUNCTIONS[code](ctx, path, config))
            note(code, t0)
        t0 = clock()
        found_count = len(engine.finalize(found, ctx.lines))
        note("finalize", t0)
        del tree, ctx, found
        gc.collect()
    gc.enable()
    parse_ms = statistics.median(times["ast.parse"])
    total = sum(statistics.median(v) for name, v in times.items() if name != "ast.parse")
    print(f"in process, CPU time, median of {runs} runs, {found_count} findings "
          f"(x parse: the phase's time over ast.parse's):")
    for name, ms in times.items():
        med = statistics.median(ms)
        print(f"  {name:<18} {med:8.1f} ms   {med / parse_ms:5.2f}x parse")
    print(f"  {'all but the parse':<18} {total:8.1f} ms   {total / parse_ms:5.2f}x parse")


def profile(target: Path, out: Path, cwd: Path) -> None:
    """cProfile of one `stepscope check` process; the top functions by their own time."""
    import pstats

    cmd = [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "stepscope", "check",
           str(target)]
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=child_env(cwd))
    if done.returncode not in (0, 1):
        raise SystemExit(f"profiling failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    stats = pstats.Stats(str(out))
    stats.sort_stats("tottime").print_stats(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--lines", type=int, default=20_000)
    ap.add_argument("--edit-lines", type=int, default=5_000)
    ap.add_argument("--edits", type=int, default=40)
    ap.add_argument("--edit-file", type=Path, help="measure edits on this real file instead")
    ap.add_argument("--per-rule", action="store_true",
                    help="time the parse, the shared context and each rule, in this process")
    ap.add_argument("--against", type=Path, metavar="SERVER_DIR",
                    help="also time the check of another checkout's server/ folder, alternating")
    ap.add_argument("--instructions", action="store_true",
                    help="count the processes' instructions under valgrind instead of timing them")
    ap.add_argument("--profile", type=Path, metavar="FILE",
                    help="write a cProfile of one `stepscope check` process to FILE")
    args = ap.parse_args()

    if args.per_rule:
        per_rule(generate(args.lines), args.runs)
        return
    with tempfile.TemporaryDirectory(prefix="stepscope-bench-") as tmp:
        folder = Path(tmp)
        target = folder / "big_train.py"
        target.write_text(generate(args.lines), encoding="utf-8")
        n_lines = target.read_text(encoding="utf-8").count("\n")
        if args.profile:
            timed([sys.executable, "-m", "stepscope", "check", str(target)], folder)  # bytecode
            profile(target, args.profile.resolve(), folder)
            return
        check = [sys.executable, "-m", "stepscope", "check", str(target)]
        cmds: dict[str, tuple[list[str], Path | None]] = {
            "python -c ast.parse": ([
                sys.executable, "-c",
                "import ast, sys; ast.parse(open(sys.argv[1], encoding='utf-8').read())",
                str(target)], None),
            "stepscope check": (check, None),
        }
        if args.against:
            cmds["check (--against)"] = (check, args.against.resolve())
        if TORCHFIX.exists():
            cmds["torchfix"] = ([str(TORCHFIX), str(target)], None)
        if args.instructions:
            cmds.pop("torchfix", None)
            for name, (cmd, server) in cmds.items():  # untimed: bytecode written
                timed(cmd, folder, server)
            counts = {name: instructions(cmd, folder, server) for name, (cmd, server) in cmds.items()}
            parse_n = counts.pop("python -c ast.parse")
            print(f"file: {n_lines} lines, instructions executed (valgrind, one run each)")
            print(f"  python -c ast.parse     {parse_n / 1e9:8.3f} G")
            for name, count in counts.items():
                print(f"  {name:<22}  {count / 1e9:8.3f} G   ratio {count / parse_n:.2f}x")
            return
        best = alternating(cmds, args.runs, folder)
        parse_s, parse_cpu = best["python -c ast.parse"]
        check_s, check_cpu = best["stepscope check"]
        print(f"file: {n_lines} lines, processes alternating, best of {args.runs} runs "
              f"(wall; CPU)")
        print(f"  python -c ast.parse     {parse_s * 1000:8.1f} ms   {parse_cpu * 1000:8.1f} ms")
        print(f"  stepscope check         {check_s * 1000:8.1f} ms   {check_cpu * 1000:8.1f} ms   "
              f"ratio {check_s / parse_s:.2f}x; CPU {check_cpu / parse_cpu:.2f}x (target <= 2.5x)")
        if args.against:
            other_s, other_cpu = best["check (--against)"]
            print(f"  check, {args.against}  {other_s * 1000:8.1f} ms   {other_cpu * 1000:8.1f} ms   "
                  f"ratio {other_s / parse_s:.2f}x; CPU {other_cpu / parse_cpu:.2f}x")
        if "torchfix" in best:
            fix_s = best["torchfix"][0]
            print(f"  torchfix                {fix_s * 1000:8.1f} ms   "
                  f"stepscope is {fix_s / check_s:.1f}x faster (target >= 10x)")
        else:
            print(f"  torchfix: not installed at {TORCHFIX} (see the module docstring)")

    if args.edits <= 0:
        return
    results = edit_latency(args.edit_lines, args.edits, args.edit_file)
    what = args.edit_file or f"generated {args.edit_lines}-line file"
    print(f"edit of {what}, in process, {args.edits} edits (target p95 <= 100 ms):")
    for name, (p50, p95) in results.items():
        print(f"  {name:<22} p50 {p50:6.1f} ms   p95 {p95:6.1f} ms")


if __name__ == "__main__":
    main()
