"""Per-line GPU time of the same model, eager against compiled (or replayed from a CUDA graph).

Usage: python compare_lines.py EAGER_RUN COMPILED_RUN [--file NAME]
(run folders of `stepscope profile`, or their report.json). For every line of the case's file that
either run puts GPU work on, it prints the forward and backward GPU ms per step of each run and the
line's share of its run's GPU time per step (`window.gpu_ms`, the union over streams), so the same
lines can be compared: under torch.compile a line's kernels are Inductor's fused kernels, found
through its provenance records (precision `compiled`); a fused kernel is shown on each of its lines
(marked `*`), so shares of fused lines are not added up. Then what the compiled run says of its
compiled code, of dynamo's graphs and breaks, and its ms/step.

It reads reports only (no torch): run it anywhere the run folders are.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def load(path: str) -> dict:
    p = Path(path)
    if p.is_dir():
        p = p / "report.json"
    return json.loads(p.read_text())


def source_lines(report: dict, name: str) -> list[str]:
    for f in report.get("files") or []:
        if Path(f["path"]).name == name:
            root = report.get("source_root") or ""
            path = Path(root) / f["path"] if f.get("in_root") else Path(f["path"])
            try:
                return path.read_text().splitlines()
            except OSError:
                return []
    return []


def per_line(report: dict, name: str) -> dict[int, dict]:
    return {x["line"]: x for x in report["lines"] if Path(x["file"]).name == name}


def fmt(value: float | None) -> str:
    return "   n/o" if value is None else f"{value:6.3f}"


def share(value: float | None, total: float | None) -> str:
    if value is None or not total:
        return "    "
    return f"{min(100.0, 100.0 * value / total):3.0f}%"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("eager")
    p.add_argument("compiled")
    p.add_argument("--file", help="the case's file name (default: the step's file of the eager run)")
    args = p.parse_args()
    eager, compiled = load(args.eager), load(args.compiled)
    name = args.file or Path(eager["scenario"]["step"]["file"]).name
    code = source_lines(eager, name) or source_lines(compiled, name)
    e_lines, c_lines = per_line(eager, name), per_line(compiled, name)
    # GPU time where both runs observed it; on a CPU-only machine (a dry run) the lines' wall time
    gpu = eager["window"].get("gpu_ms") is not None and compiled["window"].get("gpu_ms") is not None
    fwd, bwd = ("gpu_ms", "backward_gpu_ms") if gpu else ("wall_ms", "backward_ms")
    e_total = eager["window"].get("gpu_ms") if gpu else eager["ms_per_step"]
    c_total = compiled["window"].get("gpu_ms") if gpu else compiled["ms_per_step"]
    busy = "GPU busy" if gpu else "GPU not observed; step"
    print(f"{name}: eager {eager['ms_per_step']:.3f} ms/step ({busy} {fmt(e_total)} ms) | "
          f"other {compiled['ms_per_step']:.3f} ms/step ({busy} {fmt(c_total)} ms); machine: "
          f"{compiled['machine'].get('device')}, torch {compiled['scenario'].get('machine', {}).get('torch')}")
    print("GPU ms per step (forward, its share of the GPU's busy time, backward)" if gpu else
          "no GPU time in one of the runs: CPU wall ms per step instead (share of the step)")
    print(f"{'line':>5} {'code':<46} | {'eager fwd':>9} {'share':>5} {'bwd':>6} | {'other fwd':>9} {'share':>5} "
          f"{'bwd':>6} prec")
    for line in sorted(set(e_lines) | set(c_lines)):
        e, c = e_lines.get(line, {}), c_lines.get(line, {})
        if not any(x.get(fwd) or x.get(bwd) for x in (e, c)):
            continue
        text = code[line - 1].strip() if 0 < line <= len(code) else ""
        fused = "*" if (c.get("compiled") or {}).get("fused_with") else " "
        print(f"{line:>5} {text[:46]:<46} | {fmt(e.get(fwd)):>9} {share(e.get(fwd), e_total):>5} "
              f"{fmt(e.get(bwd))} | {fmt(c.get(fwd)):>8}{fused} {share(c.get(fwd), c_total):>5} "
              f"{fmt(c.get(bwd))} {c.get('precision', '-')}")
    summary = compiled.get("compiled_code") or {}
    print(f"compiled code: {json.dumps({k: v for k, v in summary.items() if k not in ('compilations', 'graph_breaks')})}")
    breaks = summary.get("graph_breaks") or []
    if breaks:
        print(f"graph breaks: {[(Path(str(b.get('file'))).name, b.get('line'), b.get('reason')) for b in breaks[:5]]}")
    dynamo = (compiled["scenario"].get("torch_compile") or {}).get("dynamo")
    print(f"dynamo: {json.dumps(dynamo)}")
    print(f"step contents: {compiled.get('step_contents', {}).get('summary')} "
          f"({compiled.get('step_contents', {}).get('kind')}); kernels: "
          f"{json.dumps({k: v for k, v in ((compiled.get('evidence') or {}).get('kernels') or {}).items() if 'graph' in k or k in ('count', 'launches')})}")
    for f in compiled.get("findings") or []:
        print(f"finding: [{f['kind']}] {Path(str(f.get('file'))).name}:{f.get('line')} {f['observation'][:160]}")
    for n in compiled.get("notes") or []:
        print(f"note: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
