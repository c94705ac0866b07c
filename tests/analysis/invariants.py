"""The invariants every report keeps, whatever the trace (PRODUCT.md, docs/figures.md), as one check.

`violations(report)` lists, in words, every place a report breaks one of them; an empty list is a
report whose figures agree with each other:
- the steps tile the window, ms/step is their median, and the mean step is the window over them;
- a line's self time ≤ its wall time ≤ the mean step (and its GPU, backward and sync time too);
  a region's wall ≤ the mean step;
- lines that do not nest add up to no more than the step: on one thread (every line exact, as
  Stepscope records them), the self times of all lines add up to at most the mean step;
- no share above 100%: not in the editor's labels, not in a finding's words or figures; an
  operator's time at its line (dominant-op) fits in that line's wall time;
- per-step counts are per the steps used: evidence counted over n steps says so (`steps` ≤ n), and a
  finding that names "N of M active steps" has M = the report's steps;
- GPU figures are null, never 0, where GPU events were not observed;
- a region's own time ≤ its wall time; the step's time split by whose code runs (`time_split`) adds
  up to the mean step (or the window), no part above it, and the text's shares of it stay ≤ 100%;
- one answer for the rank the others wait for: the rank table's mark, `slowest_rank` and the
  rank-imbalance finding agree;
- the profiler's distortion has one definition, ms/step's: the unprofiled ms/step is the median of
  its passes, `distortion` is the profiled median over it, and every surface that says them (the
  text's line, the host-side findings) says those two figures; a line's estimated share of the
  profiler's cost lies within that line's wall time and within the measured difference; nothing is
  estimated where nothing was timed without the profiler;
- where the window's steps and the passes after it overlap (their middle halves meet), the ratio is
  the steps' own variation: no line carries an estimated profiler cost, the text does not call it the
  profiler's slowdown, and no finding says the profiler made the step slower.
"""

from __future__ import annotations

import re
from statistics import median

from stepscope.analysis import present
from stepscope.analysis.distortion import window_overlap

#: figures are rounded to 0.1 µs (4 decimals of a ms): a comparison allows that much per figure
ROUND = 1e-4
PERCENT = re.compile(r"(\d+(?:\.\d+)?)%")
OF_STEPS = re.compile(r"in (\d+) of (\d+) active steps")


def violations(report: dict, *, lines_on_one_thread: bool | None = None) -> list[str]:
    """Every broken invariant, in words. `lines_on_one_thread`: whether every line ran on one thread
    (then their self times partition that thread's time); by default assumed when every line is an
    exact one (Stepscope's own regions, recorded on the step's thread)."""
    out: list[str] = []
    steps = report.get("steps") or []
    window = report.get("window") or {}
    n = len(steps)
    basis = present.share_basis(report)
    if n:
        total = sum(s["ms"] for s in steps)
        if abs(total - window["ms"]) > ROUND * (n + 1):
            out.append(f"the steps add up to {total} ms, the window is {window['ms']} ms")
        if abs(median(s["ms"] for s in steps) - report["ms_per_step"]) > ROUND:
            out.append(f"ms/step {report['ms_per_step']} is not the median of the steps")
        if window.get("mean_step_ms") is None or abs(window["mean_step_ms"] - window["ms"] / n) > ROUND:
            out.append(f"mean step {window.get('mean_step_ms')} is not the window over its {n} steps")
        if window.get("steps") != n:
            out.append(f"window.steps {window.get('steps')} is not the {n} steps listed")
    if basis is None:
        return out + ["no basis for shares (neither a mean step nor a window)"]
    gpu_observed = (report.get("gpu") or {}).get("observed")
    for line in report.get("lines") or []:
        where = f"{line['file']}:{line['line']}"
        if line["cpu_self_ms"] > line["wall_ms"] + ROUND:
            out.append(f"{where}: self {line['cpu_self_ms']} ms > wall {line['wall_ms']} ms")
        for key in ("wall_ms", "gpu_ms", "backward_ms", "sync_ms"):
            value = line.get(key)
            if value is not None and value > basis + ROUND:
                out.append(f"{where}: {key} {value} > the {basis} ms mean step")
        if not gpu_observed and line.get("gpu_ms") is not None:
            out.append(f"{where}: gpu_ms {line['gpu_ms']} although GPU events were not observed")
        label = present.line_label(line, report)
        out.extend(f"{where}: the label says {p}%" for p in PERCENT.findall(label) if float(p) > 100)
    for region in report.get("regions") or []:
        if region["wall_ms"] > basis + ROUND:
            out.append(f"region {region['label']!r}: wall {region['wall_ms']} > the {basis} ms mean step")
        if region.get("own_ms") is not None and region["own_ms"] > region["wall_ms"] + ROUND:
            out.append(f"region {region['label']!r}: own {region['own_ms']} > wall {region['wall_ms']}")
    out.extend(_time_split(report, basis))
    lines = report.get("lines") or []
    if lines_on_one_thread is None:
        lines_on_one_thread = all(line["precision"] == "exact" for line in lines)
    if lines and lines_on_one_thread:
        total_self = sum(line["cpu_self_ms"] for line in lines)
        if total_self > basis + ROUND * (len(lines) + 1):
            out.append(f"the lines' self times add up to {total_self} ms, more than the {basis} ms mean step")
    for finding in report.get("findings") or []:
        kind = finding["kind"]
        for p in PERCENT.findall(finding["observation"]):
            if float(p) > 100:
                out.append(f"[{kind}] says {p}%: {finding['observation'][:160]}")
        share = (finding.get("figures") or {}).get("share")
        if isinstance(share, (int, float)) and share > 1 + ROUND:
            out.append(f"[{kind}] share {share} > 1")
        if kind == "dominant-op" and finding.get("file"):
            # its time at its line fits in that line: its wall, and the backward it records (backward
            # work is the forward line's, in its backward_ms)
            line = next((x for x in report.get("lines") or []
                         if (x["file"], x["line"]) == (finding["file"], finding["line"])), None)
            own = (finding.get("figures") or {}).get("self_ms") or 0.0
            if line is not None and own > line["wall_ms"] + (line.get("backward_ms") or 0.0) + ROUND:
                out.append(f"[dominant-op] {own} ms of self time on a line whose wall is {line['wall_ms']} ms "
                           f"(and its backward {line.get('backward_ms')} ms)")
        for seen, of in OF_STEPS.findall(finding["observation"]):
            if int(of) != n or int(seen) > n:
                out.append(f"[{kind}] says {seen} of {of} active steps; the report has {n}")
    evidence = report.get("evidence") or {}
    for group in evidence.get("h2d_copies") or []:
        if group["steps"] > max(n, 1):
            out.append(f"a copy group is seen in {group['steps']} steps of {n}")
    syncs = evidence.get("syncs") or {}
    if syncs and syncs.get("steps", 0) > max(n, 1):
        out.append(f"host waits are seen in {syncs['steps']} steps of {n}")
    out.extend(_ranks(report))
    out.extend(_distortion(report))
    return out


#: the figures the distortion's sentences name (present.distortion_text, findings/distorted.py)
UNPROFILED_WORDS = re.compile(r"without the profiler: (\d+(?:\.\d+)?) ms/step \(median of (\d+) passes")
PROFILED_WORDS = re.compile(r"\(ms/step, the median: (\d+(?:\.\d+)?) ms profiled, (\d+(?:\.\d+)?) ms without it")


def _distortion(report: dict) -> list[str]:
    out = []
    unprofiled, d = report.get("unprofiled"), report.get("distortion")
    lines = report.get("lines") or []
    if not unprofiled:
        if d is not None:
            out.append(f"distortion {d} without an unprofiled figure")
        out.extend(f"{x['file']}:{x['line']}: a profiler cost estimated although nothing was timed without it"
                   for x in lines if x.get("profiler_ms_estimate") is not None)
        return out
    raw = unprofiled.get("raw_ms") or []
    if not raw or abs(median(raw) - unprofiled["ms_per_step"]) > ROUND or unprofiled.get("passes") != len(raw):
        out.append(f"unprofiled ms/step {unprofiled['ms_per_step']} is not the median of its {len(raw)} passes")
    profiled = report.get("ms_per_step")
    if not profiled:  # a median step of 0 ms (GPU work of one step past the next): no ratio to give
        if d is not None:
            out.append(f"distortion {d} of a {profiled} ms/step")
    elif d is None or abs(d - profiled / unprofiled["ms_per_step"]) > max(1e-3 * d, ROUND):  # d is rounded too
        out.append(f"distortion {d} is not ms/step {profiled} over the unprofiled {unprofiled['ms_per_step']}")
    difference = max(0.0, (profiled or 0.0) - unprofiled["ms_per_step"])
    for x in lines:
        estimate = x.get("profiler_ms_estimate")
        if estimate is None:
            continue
        where = f"{x['file']}:{x['line']}"
        if estimate < 0 or estimate > x["wall_ms"] + ROUND:
            out.append(f"{where}: the profiler's estimated cost {estimate} ms is not within its wall {x['wall_ms']} ms")
        if estimate > difference + ROUND:
            out.append(f"{where}: the profiler's estimated cost {estimate} ms exceeds the measured {difference} ms")
    text = present.distortion_text(report) or ""
    said = UNPROFILED_WORDS.search(text)
    if said is None:
        out.append(f"the distortion's text does not say the unprofiled median: {text!r}")
    elif (said.group(1) != present.ms_short(unprofiled["ms_per_step"]) or int(said.group(2)) != len(raw)):
        out.append(f"the distortion's text says {said.group(0)!r}, the report {unprofiled['ms_per_step']} ms of {len(raw)}")
    out.extend(f"the distortion's text says {p}%" for p in PERCENT.findall(text) if float(p) > 100)
    if window_overlap([s["ms"] for s in report.get("steps") or []], unprofiled) is not None:
        out.extend(f"{x['file']}:{x['line']}: a profiler cost estimated although both sides' step times overlap"
                   for x in lines if x.get("profiler_ms_estimate") is not None)
        if "profiler made the step" in text:
            out.append(f"the distortion's text calls overlapping step times the profiler's cost: {text!r}")
        out.extend(f"[{f['kind']}] calls overlapping step times the profiler's cost"
                   for f in report.get("findings") or [] if "profiler itself made this step" in f["observation"])
    for finding in report.get("findings") or []:
        for p_ms, u_ms in PROFILED_WORDS.findall(finding["observation"]):
            if p_ms != f"{profiled:.2f}" or u_ms != f"{unprofiled['ms_per_step']:.2f}":
                out.append(f"[{finding['kind']}] says {p_ms} ms profiled and {u_ms} ms without; ms/step is "
                           f"{profiled}, unprofiled {unprofiled['ms_per_step']}")
    return out


def _time_split(report: dict, basis: float) -> list[str]:
    split = report.get("time_split")
    if not split:
        return []
    out = []
    parts = split["parts"]
    if abs(split["basis_ms"] - basis) > ROUND * 2:
        out.append(f"time_split's basis {split['basis_ms']} is not the {basis} ms the shares are of")
    total = sum(p["ms"] for p in parts)
    if abs(total - split["basis_ms"]) > ROUND * (len(parts) + 2):
        out.append(f"time_split's parts add up to {total} ms, not its basis {split['basis_ms']} ms")
    out.extend(f"time_split part {p['role']!r} of {p['ms']} ms > its basis" for p in parts
               if p["ms"] > split["basis_ms"] + ROUND)
    for name, _, share in present.time_split_rows(report):
        if share is not None and share > 1 + ROUND:
            out.append(f"time_split says {name!r} is {share:.0%} of the step")
    return out


def _ranks(report: dict) -> list[str]:
    ranks = report.get("ranks") or []
    if not ranks:
        return []
    out = []
    marked = [r["rank"] for r in ranks if r.get("slowest")]
    if len(marked) > 1:
        out.append(f"several ranks marked slowest: {marked}")
    if (marked[0] if marked else None) != report.get("slowest_rank"):
        out.append(f"the rank table marks {marked}, slowest_rank is {report.get('slowest_rank')}")
    for finding in report.get("findings") or []:
        if finding["kind"] == "rank-imbalance":
            named = (finding.get("figures") or {}).get("waited_for")
            if named != report.get("slowest_rank"):
                out.append(f"rank-imbalance names rank {named}, the rank table rank {report.get('slowest_rank')}")
    return out
