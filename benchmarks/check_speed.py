"""How fast is `stepscope check`? Side by side, in one run, best of several runs.

1. A generated 20,000-line training module, checked by the `stepscope check` process, against a
   plain `python -c "ast.parse(...)"` process on the same file (target: at most 3x).
2. The same file checked by TorchFix (libcst-based), when a TorchFix install is found in
   .cache/torchfix-venv (target: Stepscope at least 10x faster). Create it with
   `python -m venv .cache/torchfix-venv && .cache/torchfix-venv/bin/pip install torchfix`.
3. The editor's case, in this process: a 5,000-line file after an edit, checked by the
   language server's `DocumentChecker` (re-checks the edited def/class) and, side by side, by a
   full `check_source`; p50/p95 over repeated edits (target: p95 <= 100 ms). The end-to-end
   figure, through a real LSP client, is benchmarks/check_server_latency.py.

Run: `.venv/bin/python benchmarks/check_speed.py [--runs 5] [--edit-file some_real_file.py]`.
Prints the figures and ratios. The generated file is denser than typical hand-written code (no
comments or blank lines), so it is the harder case for the edit latency.
"""

from __future__ import annotations

import argparse
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


def best_of(cmd: list[str], runs: int, cwd: Path) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{cmd[0]} failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return min(times)


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--lines", type=int, default=20_000)
    ap.add_argument("--edit-lines", type=int, default=5_000)
    ap.add_argument("--edits", type=int, default=40)
    ap.add_argument("--edit-file", type=Path, help="measure edits on this real file instead")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="stepscope-bench-") as tmp:
        folder = Path(tmp)
        target = folder / "big_train.py"
        target.write_text(generate(args.lines), encoding="utf-8")
        n_lines = target.read_text(encoding="utf-8").count("\n")
        parse_cmd = [sys.executable, "-c",
                     "import ast, sys; ast.parse(open(sys.argv[1], encoding='utf-8').read())",
                     str(target)]
        check_cmd = [sys.executable, "-m", "stepscope", "check", str(target)]
        parse_s = best_of(parse_cmd, args.runs, folder)
        check_s = best_of(check_cmd, args.runs, folder)
        print(f"file: {n_lines} lines, best of {args.runs} runs")
        print(f"  python -c ast.parse     {parse_s * 1000:8.1f} ms")
        print(f"  stepscope check         {check_s * 1000:8.1f} ms   "
              f"ratio {check_s / parse_s:.2f}x (target <= 3x)")
        if TORCHFIX.exists():
            fix_s = best_of([str(TORCHFIX), str(target)], args.runs, folder)
            print(f"  torchfix                {fix_s * 1000:8.1f} ms   "
                  f"stepscope is {fix_s / check_s:.1f}x faster (target >= 10x)")
        else:
            print(f"  torchfix: not installed at {TORCHFIX} (see the module docstring)")

    results = edit_latency(args.edit_lines, args.edits, args.edit_file)
    what = args.edit_file or f"generated {args.edit_lines}-line file"
    print(f"edit of {what}, in process, {args.edits} edits (target p95 <= 100 ms):")
    for name, (p50, p95) in results.items():
        print(f"  {name:<22} p50 {p50:6.1f} ms   p95 {p95:6.1f} ms")


if __name__ == "__main__":
    main()
