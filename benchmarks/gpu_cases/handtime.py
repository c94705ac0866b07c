"""Time a case's step by hand: warm up, then N steps with one synchronise at the end, five times.

Usage: python handtime.py CASE VARIANT [--steps N]. Prints one JSON line: the case, the variant, the
five ms/step figures and their median. No profiler, no Stepscope.
"""

import argparse
import importlib
import json
import statistics
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("case")
p.add_argument("variant")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--warmup", type=int, default=8)
args = p.parse_args()

step = importlib.import_module(args.case).build(args.variant)
sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
i = 0
for _ in range(args.warmup):
    step(i)
    i += 1
sync()
figures = []
for _ in range(5):
    start = time.perf_counter()
    for _ in range(args.steps):
        step(i)
        i += 1
    sync()
    figures.append((time.perf_counter() - start) * 1e3 / args.steps)
print(json.dumps({"case": args.case, "variant": args.variant, "ms_per_step": figures,
                  "median": statistics.median(figures)}))
