"""Stepscope on public training programs it was not written for: does `profile` find the step and
put the time on the program's own lines, and do its figures agree with the program's own timer?

    python benchmarks/public_programs.py --checkouts DIR [--python EXE] [--device cpu|cuda] [--only NAME,...]
                                         [--json OUT]

DIR holds checkouts of the public repositories named in PROGRAMS, one folder each, named
`owner+name` (karpathy+nanoGPT, karpathy+minGPT, pytorch+examples). Nothing is downloaded: where a
program would fetch a data set, a local text stands in (said per program). Each program is copied
to a scratch folder, prepared, then:
- `stepscope profile --json` (the step as Stepscope chooses it unless a line is given): exit code,
  ms/step profiled and without the profiler (the same process, after the window), the top lines,
  the findings and their lines;
- `stepscope measure --json`: exit code and the median ms/step of its passes;
- the program's own timer, read from its output (its per-iteration times): the median over the
  iterations Stepscope timed without the profiler (profile) and over all printed ones (measure),
  and the ratio of Stepscope's figure to it (not with `--no-measure`).
Tiny configurations, on the CPU by default (the CPU build of torch is enough); `--device cuda` runs
the programs that can on the GPU. docs/frameworks/public-programs.md
has the figures and what each report showed.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


def _local_text(size: int = 1_100_000) -> str:
    """A large local English text (the interpreter's own documentation strings and licence), for
    programs that would download one."""
    import pydoc  # noqa: F401 (its module docs are long English text on every Python)

    parts: list[str] = []
    for path in sorted(Path(sys.prefix).glob("lib/python3*/*.py")) + sorted(Path(sys.base_prefix).glob("lib/python3*/*.py")):
        try:
            parts.append(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
        if sum(map(len, parts)) > size:
            break
    return "".join(parts)[:size]


def _nanogpt_prepare(work: Path, python: str) -> None:
    import os

    data = work / "data" / "shakespeare_char"
    (data / "input.txt").write_text(_local_text())
    # prepare.py imports requests for a download it skips when input.txt is there: where the
    # interpreter lacks it, a stand-in that refuses any download
    stand_in = work / ".no-downloads"
    stand_in.mkdir(exist_ok=True)
    (stand_in / "requests.py").write_text("def get(*args, **kwargs):\n    raise RuntimeError('no downloads here')\n")
    has_requests = subprocess.run([python, "-c", "import requests"], capture_output=True).returncode == 0
    env = os.environ if has_requests else {**os.environ, "PYTHONPATH": str(stand_in)}
    subprocess.run([python, "prepare.py"], cwd=data, check=True, capture_output=True, env=env)


def _word_lm_prepare(work: Path, python: str) -> None:
    data = work / "word_language_model" / "data" / "wikitext-2"
    if not (data / "train.txt").is_file():  # the snapshot lacks the large file: the valid split stands in
        shutil.copy(data / "valid.txt", data / "train.txt")


@dataclass
class Program:
    name: str
    repo: str
    cwd: str  # inside the checkout
    script: str  # the file holding the step (relative to cwd)
    args: list[str]
    step: list[str] = field(default_factory=list)  # --line / --function / --entry, or [] to let Stepscope choose
    # a regex with groups `iter` (the program's iteration counter) and `ms` (its own time for it), and
    # the counter's value at the first step
    own_timer: str | None = None
    first_iter: int = 0
    env: dict[str, str] = field(default_factory=dict)
    device_args: dict[str, list[str]] = field(default_factory=dict)  # per --device, in place of "cpu"
    prepare: Callable[[Path, str], None] | None = None
    stands_in: str | None = None


PROGRAMS = [
    Program("nanoGPT shakespeare_char", "karpathy+nanoGPT", ".", "train.py",
            ["config/train_shakespeare_char.py", "--compile=False", "--eval_iters=2",
             "--eval_interval=100000", "--log_interval=1", "--block_size=64", "--batch_size=12", "--n_layer=2",
             "--n_head=4", "--n_embd=128", "--max_iters=80", "--lr_decay_iters=80", "--dropout=0.0"],
            own_timer=r"iter (?P<iter>\d+): loss [\d.]+, time (?P<ms>[\d.]+)ms", prepare=_nanogpt_prepare,
            stands_in="input.txt is 1.1 MB of the interpreter's own library source, not Shakespeare",
            device_args={"cpu": ["--device=cpu"], "cuda": ["--device=cuda"]}),
    Program("minGPT adder", "karpathy+minGPT", ".", "mingpt/trainer.py",
            ["--trainer.max_iters=200", "--trainer.num_workers=0"],
            step=["--line", "81", "--entry", "projects/adder/adder.py"],
            # printed every 10 iterations, after the iteration counter moved on: iter N is step N-1
            own_timer=r"iter_dt (?P<ms>[\d.]+)ms; iter (?P<iter>\d+)", first_iter=1, env={"PYTHONPATH": "."},
            device_args={"cpu": ["--trainer.device=cpu"], "cuda": ["--trainer.device=cuda"]}),
    Program("pytorch/examples word_language_model", "pytorch+examples", "word_language_model", "main.py",
            ["--epochs", "1", "--emsize", "64", "--nhid", "64", "--log-interval", "10"],
            own_timer=None, prepare=_word_lm_prepare,  # its ms/batch is a mean over 10 batches
            stands_in="train.txt is the valid split (the snapshot lacks the large file)"),
    Program("pytorch/examples regression", "pytorch+examples", "regression", "main.py", []),
]


def _stepscope(python: str, *args: str, cwd: Path, env: dict[str, str], timeout: float = 900
               ) -> tuple[int, dict | None, str, float]:
    import os

    merged = {**os.environ, **env}
    if "PYTHONPATH" in env and os.environ.get("PYTHONPATH"):  # the program's folders first, Stepscope's kept
        merged["PYTHONPATH"] = os.pathsep.join((env["PYTHONPATH"], os.environ["PYTHONPATH"]))
    started = time.perf_counter()
    r = subprocess.run([python, "-m", "stepscope", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                       env=merged)
    seconds = time.perf_counter() - started
    try:
        doc = json.loads(r.stdout) if r.stdout.strip() else None
    except ValueError:
        doc = None
    return r.returncode, doc, r.stderr, seconds


def _own_times(run_dir: Path, program: Program, steps: range) -> list[float]:
    """The program's own ms of the steps `steps` (0 = the first), where it printed them."""
    log = run_dir / "program.log"
    text = log.read_text(errors="replace") if log.is_file() else ""
    found = {int(m["iter"]) - program.first_iter: float(m["ms"]) for m in re.finditer(program.own_timer, text)}
    return [found[i] for i in steps if i in found]


def run_program(program: Program, checkouts: Path, stepscope_python: str, python: str, scratch: Path,
                device: str = "cpu", *, measure: bool = True) -> dict:
    source = checkouts / program.repo
    work = scratch / program.repo
    if not work.exists():
        shutil.copytree(source, work, ignore=shutil.ignore_patterns(".git", ".stepscope"))
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    if program.prepare is not None:
        program.prepare(work, python)
    cwd = work / program.cwd
    args = [*program.args, *program.device_args.get(device, [])]
    row: dict = {"program": program.name, "device": device if device in program.device_args else "cpu",
                 "stands_in": program.stands_in}
    code, report, err, seconds = _stepscope(stepscope_python, "profile", program.script, *program.step, "--json",
                                            "--python", python, "--", *args, cwd=cwd, env=program.env)
    row["profile"] = {"exit": code, "seconds": round(seconds, 1), "error": err.strip().splitlines()[-1:] if code else []}
    if report is not None:
        lines = sorted(report["lines"], key=lambda e: -e["wall_ms"])
        unprofiled = (report.get("unprofiled") or {}).get("ms_per_step")
        row["profile"].update(
            ms_per_step=report["ms_per_step"], unprofiled_ms=unprofiled, distortion=report.get("distortion"),
            step=report["scenario"].get("step"),
            top_lines=[f"{Path(e['file']).name}:{e['line']} {e['wall_ms']:.2f} ms" for e in lines[:4]],
            findings=[f"{f['kind']} ({f.get('severity')}) at "
                      f"{Path(f['file']).name + ':' + str(f['line']) if f.get('file') else 'no line'}"
                      for f in report.get("findings") or []],
            lines_in_program=sum(1 for e in report["lines"] if str(e["file"]).startswith(str(work))))
        if program.own_timer and unprofiled:
            schedule = report["schedule"]
            cycle = schedule["wait"] + schedule["warmup"] + schedule["active"]
            first = cycle + schedule["wait"] + schedule["warmup"]  # the steps timed after the window
            own = _own_times(Path(report["traces"][0]).parent, program,
                             range(first, first + report["unprofiled"]["passes"]))
            if own:
                row["profile"]["own_timer_ms"] = round(statistics.median(own), 3)
                row["profile"]["own_timer_steps"] = len(own)
                row["profile"]["unprofiled_over_own"] = round(unprofiled / statistics.median(own), 3)
    if not measure:
        return row
    code, doc, err, seconds = _stepscope(stepscope_python, "measure", program.script, *program.step, "--json",
                                         "--python", python, "--passes", "20", "--", *args, cwd=cwd,
                                         env=program.env)
    row["measure"] = {"exit": code, "seconds": round(seconds, 1), "error": err.strip().splitlines()[-1:] if code else []}
    if doc is not None:
        row["measure"].update(median_ms=doc.get("median_ms"), iqr_ms=doc.get("iqr_ms"))
        run_dir = Path(doc.get("run_dir") or doc.get("folder") or "")
        if program.own_timer and run_dir.is_dir():
            first = len(doc.get("warmup_ms") or [])
            own = _own_times(run_dir, program, range(first, first + len(doc.get("raw_ms") or [])))
            if own and doc.get("median_ms"):
                row["measure"]["own_timer_ms"] = round(statistics.median(own), 3)
                row["measure"]["own_timer_steps"] = len(own)
                row["measure"]["median_over_own"] = round(doc["median_ms"] / statistics.median(own), 3)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkouts", required=True, type=Path)
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs the programs")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--only", help="comma-separated names (a part of the name is enough)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--no-measure", action="store_true", help="profile only (the findings, the figures)")
    args = parser.parse_args()
    chosen = [p for p in PROGRAMS if not args.only or any(part.lower() in p.name.lower() for part in args.only.split(","))]
    rows = []
    with tempfile.TemporaryDirectory(prefix="stepscope-public-") as scratch:
        for program in chosen:
            if not (args.checkouts / program.repo).is_dir():
                rows.append({"program": program.name, "skipped": f"no checkout {args.checkouts / program.repo}"})
                continue
            rows.append(run_program(program, args.checkouts, sys.executable, args.python, Path(scratch), args.device,
                                    measure=not args.no_measure))
            print(json.dumps(rows[-1], indent=1), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
