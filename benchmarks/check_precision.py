"""Run every rule over real training code from PyPI source distributions and list the findings.

Precision is judged by reading each flagged line (is it really the problem the rule names, in
code where it matters?); this script gathers the findings to read. It downloads the source
distributions with pip into a temporary folder (never into the project), runs
`stepscope check --select SS --format json` on them, prints the count per rule and writes every
finding with its source line to findings.txt in that folder for review.

Run: `.venv/bin/python benchmarks/check_precision.py [--keep DIR] [PACKAGE ...]`
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PACKAGES = [
    "timm", "litgpt", "open_clip_torch", "ultralytics", "stable-baselines3", "accelerate",
    "torchtitan", "pytorch-lightning", "diffusers", "mosaicml", "nanotron", "trl",
    "torchdistill", "pytorch-ignite", "bitsandbytes", "deepspeed", "liger-kernel", "sglang",
    "megatron-core", "HolisticTraceAnalysis", "unsloth", "axolotl", "flash-linear-attention",
    "flashinfer-python", "hqq", "torch-pruning", "gemlite",
]


def download(packages: list[str], into: Path) -> None:
    for name in packages:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             name, "-d", str(into / "dl"), "-q"], capture_output=True, text=True)
        if done.returncode != 0:
            print(f"  {name}: not downloaded ({done.stderr.strip().splitlines()[-1:]})")
    for archive in sorted((into / "dl").glob("*")):
        target = into / "src"
        if archive.name.endswith((".tar.gz", ".tgz")):
            with tarfile.open(archive) as tar:
                tar.extractall(target, filter="data")
        elif archive.suffix == ".zip":
            with zipfile.ZipFile(archive) as z:
                z.extractall(target)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("packages", nargs="*", default=PACKAGES)
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="stepscope-precision-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        download(args.packages, work)
        done = subprocess.run(
            [sys.executable, "-m", "stepscope", "check", "--select", "SS", "--format", "json",
             str(work / "src")], capture_output=True, text=True)
        doc = json.loads(done.stdout)
        counts = collections.Counter(d["code"] for d in doc["diagnostics"])
        print(f"{doc['files_checked']} files checked, {len(doc['errors'])} not readable")
        for code, n in sorted(counts.items()):
            print(f"  {code}: {n}")
        lines = []
        for d in doc["diagnostics"]:
            if d.get("cell"):
                continue
            text = Path(d["path"]).read_text(encoding="utf-8", errors="replace").splitlines()
            lines.append(f"{d['code']} {d['path']}:{d['line']}\n    {text[d['line'] - 1].strip()}")
        (work / "findings.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"findings to review: {work / 'findings.txt'}"
              + ("" if args.keep else " (deleted on exit: use --keep DIR to keep it)"))


if __name__ == "__main__":
    main()
