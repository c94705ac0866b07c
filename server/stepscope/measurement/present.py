"""Measurements in words: the one place that decides how a measure figure, a comparison and a row
of the history are rounded and said (the CLI text of `measure` and `runs`). Pure functions of
the JSON documents those commands print; no I/O.

Definitions said here once (docs/measure.md has them in full):
- ms/step of a measure run is its `median_ms`: the median of every measured pass (warm-up apart).
- the spread beside it is the IQR, in ms and as a share of the median; `noisy` above 10%.
- a ratio is candidate / baseline ms/step: below 1 the candidate is faster.
- under a launcher, the figures are the slowest rank's of each process (the header names it), and
  each rank's own median is listed beside them (`ranks_words`).
"""

from __future__ import annotations

from typing import Any, Sequence

from .stats import PACE_LIMIT, overlapping_middles

RANKS_LISTED = 8  # ranks named one by one in the text; beyond that, the slowest ones and the fastest


def ms(value: float | None) -> str:
    """Milliseconds: three significant figures or so (`0.421`, `12.3`, `148`); `n/o` unknown."""
    if value is None:
        return "n/o"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def percent(share: float | None) -> str:
    return "n/o" if share is None else f"{100 * share:.0f}%"


def ratio(value: float) -> str:
    return f"{value:.3f}"


def spread(median_ms: float | None, iqr_ms: float | None, noisy: bool | None) -> str:
    """`IQR 0.40 ms, 3% of the median`, with `noisy` when the IQR is over 10% of the median."""
    if median_ms is None or iqr_ms is None:
        return ""
    text = f"IQR {ms(iqr_ms)} ms, {percent(iqr_ms / median_ms if median_ms else None)} of the median"
    return text + ", noisy" if noisy else text


def step_label(script: str | None, line: int | None, function: str | None) -> str:
    """`train.py:42`, `train.py:step()`; a file of an installed package from its package folder on
    (`transformers/trainer.py:Trainer.training_step()`)."""
    parts = (script or "").split("/")
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in ("site-packages", "dist-packages"):
            script = "/".join(parts[i + 1:])
            break
    if function:
        return f"{script or '?'}:{function}()"
    return f"{script or '?'}:{line}" if line is not None else (script or "?")


def machine_label(machine: dict[str, Any] | None) -> str:
    """`NVIDIA H200 on gpu-3, torch 2.11.0`: where a figure was measured (guide §13)."""
    machine = machine or {}
    text = str(machine.get("device") or "unknown device")
    if machine.get("host"):
        text += f" on {machine['host']}"
    if machine.get("torch"):
        text += f", torch {machine['torch']}"
    return text


def verdict_of(result: dict[str, Any]) -> tuple[str, float | None]:
    """(verdict_detail, margin) of a comparison document or a history row; a document written before
    `verdict_detail` existed gets it from its interval and its method's margin."""
    from .compare import VERDICT_DETAILS, verdict_detail

    margin = result.get("margin")
    if margin is None:
        margin = (result.get("method") or {}).get("margin")
    detail = result.get("verdict_detail")
    if detail not in VERDICT_DETAILS:
        ci = result.get("ci95") or [result.get("ci_low"), result.get("ci_high")]
        known = isinstance(margin, (int, float)) and all(isinstance(v, (int, float)) for v in ci)
        detail = verdict_detail((ci[0], ci[1]), margin) if known else str(result.get("verdict"))
    return detail, margin if isinstance(margin, (int, float)) else None


def verdict_words(result: dict[str, Any]) -> str:
    """The verdict with the margin it was called against, and for an inconclusive one what would
    likely decide it: `faster (beyond the 1% margin)`, `no difference larger than 1%`,
    `inconclusive: the interval reaches past ±1% and inside it; about 8 processes a side (6 more)
    would likely decide it`."""
    from .compare import FASTER, INCONCLUSIVE, SLOWER, WITHIN_MARGIN

    detail, margin = verdict_of(result)
    if margin is None:
        return detail
    limit = percent(margin)
    if detail in (FASTER, SLOWER):
        return f"{detail} (beyond the {limit} margin)"
    if detail == WITHIN_MARGIN:
        return f"no difference larger than {limit}"
    if detail != INCONCLUSIVE:
        return detail
    text = f"inconclusive: the interval reaches past ±{limit} and inside it"
    processes = list((result.get("method") or {}).get("processes") or [])
    needed = result.get("processes_to_decide")
    if processes and min(processes) < 2:
        return text + ("; with one process a side, run-to-run variation is not observed: measure with --runs 3 "
                       "or more")
    if isinstance(needed, int):
        more = f" ({needed - min(processes)} more)" if processes else ""
        return text + f"; about {needed} processes a side{more} would likely decide it (--runs {needed})"
    if processes:
        return text + "; the ratio lies so near the margin that more processes are unlikely to decide it"
    return text


def verdict_line(result: dict[str, Any]) -> str:
    """`ratio 0.912 (95% interval 0.893–0.931): faster (beyond the 1% margin)`."""
    low, high = result["ci95"]
    return f"ratio {ratio(result['ratio'])} (95% interval {ratio(low)}–{ratio(high)}): {verdict_words(result)}"


def method_line(method: dict[str, Any]) -> str:
    observed = ("run-to-run variation observed" if method.get("run_to_run_observed")
                else "one process on a side: run-to-run variation not observed")
    a, b = method.get("processes", [None, None])
    text = (f"{method.get('resampling')}; {a} and {b} processes; {observed}; differences under "
            f"{percent(method.get('margin'))} are not called")
    if method.get("statistic") == "mean":
        text += ("; the ratio is of the means: a side's mean lies more than 10% from its median (bursty passes, as "
                 "DataLoader workers deliver), so its pace is the mean")
    return text


def compared_figure(side: dict[str, Any], method: dict[str, Any] | None) -> str:
    """A side's figure as the comparison's ratio is of it: `61.2 ms/step` (its median), or `88.6 ms/step
    (mean)` where the comparison was of the means."""
    if (method or {}).get("statistic") == "mean" and side.get("mean_ms") is not None:
        return f"{ms(side['mean_ms'])} ms/step (mean)"
    return f"{ms(side.get('median_ms'))} ms/step"


def values_line(check: dict[str, Any] | None) -> str:
    if not check or check.get("match") is None:
        return "values: not compared (no values on a side, or a value that is not a number)"
    if check["match"]:
        return (f"values: the same in the {check['compared']} passes compared "
                f"(largest relative difference {check['max_relative_difference']:.2g}, "
                f"tolerance {check['tolerance']:g})")
    return (f"values: DIFFER from pass {check['first_difference']} on (largest relative difference "
            f"{check['max_relative_difference']:.2g}, tolerance {check['tolerance']:g}): the change altered "
            "the results")


def step_values(m: dict[str, Any]) -> str:
    """What the step computed, pass by pass: `loss 3.092 → 2.635 (first → last of 30 passes)`, so
    a reader sees that the step trained (or that a comparison's sides computed the same); under a
    launcher, of the rank whose values the result keeps (`loss of rank 0 ...`). Says where no value
    was read: without one, a before/after comparison cannot say whether results changed."""
    name = m.get("value") or "loss"
    if m.get("values_rank") is not None:
        name += f" of rank {m['values_rank']}"
    values = m.get("values") or []
    numbers = [v for v in values if v is not None]
    if not numbers and ((m.get("scope") or {}).get("step") or {}).get("function") and name == "return":
        return ("no value: the step function returned no number (nor a dict, output or tuple holding its loss) and "
                "has no `loss` as it returns: name what it computes with --value EXPR (`return` is what each call "
                "returned), so that comparisons say whether results changed")
    if not numbers:
        return (f"no `{name}` read in the step (none in its frame, or not a number): name what the step "
                "computes with --value EXPR, so that comparisons say whether results changed")
    unknown = len(values) - len(numbers)
    name = "return value" if name == "return" else name
    text = f"{name} {numbers[0]:.4g} → {numbers[-1]:.4g} (first → last of {len(values)} passes"
    text += f"; {unknown} not a number or changed in place)" if unknown else ")"
    consistent = m.get("values_consistent")
    if consistent is not None:
        text += ("; the same in every process" if consistent
                 else "; different between processes with the same seeds: the step is not deterministic, so a "
                 "comparison cannot tell whether a change altered the results")
    return text


def pace_words(m: dict[str, Any]) -> str | None:
    """When the median is not the loop's pace (the mean is more than 10% away from it): which figure
    is, and why they differ. None when the two agree."""
    median, mean = m.get("median_ms"), m.get("mean_ms")
    if not median or mean is None or abs(mean - median) / median <= PACE_LIMIT:
        return None
    side = "above" if mean > median else "below"
    return (f"the mean ({ms(mean)} ms) is {percent(abs(mean / median - 1))} {side} the median: the passes are "
            "skewed or alternate (as when DataLoader workers deliver in bursts), so the loop's pace over many "
            "steps is the mean, not the median")


def unit_words(m: dict[str, Any]) -> str | None:
    """What one pass of a `--function` step is, where it is not one call: `one optimizer step: 4
    calls of training_step (micro-batches) and the optimizer step after them`. None otherwise."""
    step = (m.get("scope") or {}).get("step") or {}
    calls = step.get("calls_per_step")
    if step.get("unit") != "optimizer step" or calls is None or calls == 1:
        return None
    name = str(step.get("function") or "").rsplit(".", 1)[-1]
    return f"one optimizer step: {calls:g} calls of {name} (micro-batches) and the optimizer step after them"


def whose_passes(m: dict[str, Any]) -> str:
    """Whose passes the figures are of, after "median of N passes": nothing without ranks, else
    ` of rank 1, the slowest of 2 ranks` (or, where the slowest rank changed between processes,
    `, each process's slowest of 2 ranks (ranks 1, 0, 1)`)."""
    ranks = m.get("ranks")
    if not ranks:
        return ""
    per_process = [run.get("rank") for run in m.get("runs") or []]
    if len(set(per_process)) == 1:
        return f" of rank {per_process[0]}, the slowest of {len(ranks)} ranks"
    return f", each process's slowest of {len(ranks)} ranks (ranks {', '.join(map(str, per_process))})"


def ranks_words(m: dict[str, Any]) -> str | None:
    """Each rank's own median ms/step over its passes, the slowest named, and whether it stands out
    (its passes' middle half apart from another rank's): `rank 0 12.1, rank 1 12.4 ms (median of
    each rank's passes); slowest: rank 1, within the others' spread (no rank stands out)`. None
    without ranks. Beyond RANKS_LISTED ranks, the slowest ones and the fastest are named."""
    ranks = m.get("ranks")
    if not ranks:
        return None
    by_pace = sorted(ranks, key=lambda e: (-e["median_ms"], e["rank"]))
    listed = ranks if len(ranks) <= RANKS_LISTED else sorted(by_pace[:RANKS_LISTED - 1] + by_pace[-1:],
                                                             key=lambda e: e["rank"])
    text = ", ".join(f"rank {e['rank']} {ms(e['median_ms'])}" for e in listed) + " ms"
    if len(listed) < len(ranks):
        text += f" ({len(ranks) - len(listed)} more ranks in the JSON)"
    text += " (median of each rank's passes)"
    slowest = next((e for e in ranks if e["rank"] == m.get("slowest_rank")), by_pace[0])
    others = [e for e in ranks if e is not slowest]
    text += f"; slowest: rank {slowest['rank']}"
    if others and all(overlapping_middles(slowest.get("raw_ms") or [], e.get("raw_ms") or []) for e in others):
        text += ", within the others' spread (no rank stands out)"
    return text


def call_words(m: dict[str, Any]) -> str | None:
    """A `--function` step's call itself, beside ms/step (call start to call start): `10.2 ms per
    call, start to return (median; p10 9.80, p90 11.0), 26% of the time between call starts; the
    rest runs between calls` (where a step holds several calls: the first call of each step). None
    for a loop's step."""
    call = m.get("call")
    if not call:
        return None
    several = unit_words(m) is not None
    text = (f"{ms(call.get('median_ms'))} ms per call, start to return (median; p10 {ms(call.get('p10_ms'))}, "
            f"p90 {ms(call.get('p90_ms'))})")
    if several:
        text = f"{text}, the first call of each step"
        if call.get("share_of_step") is not None:
            text += f", {percent(call['share_of_step'])} of the step"
    elif call.get("share_of_step") is not None:
        text += (f", {percent(call['share_of_step'])} of the time between call starts; the rest runs between "
                 "calls")
    return text


def run_summary(row: dict[str, Any]) -> str:
    """One run in the words of a list: its figure and what qualifies it."""
    if row.get("status") != "complete" and row.get("ms_per_step") is None:
        return f"{row.get('status')}" + (f": {row['reason']}" if row.get("reason") else "")
    text = f"{ms(row.get('ms_per_step'))} ms/step"
    if row.get("kind") == "profile":
        # the step without the profiler leads where the run timed it (docs/figures.md)
        if row.get("unprofiled_ms") is not None:
            text = f"{ms(row['unprofiled_ms'])} ms/step without the profiler, {ms(row.get('ms_per_step'))} profiled"
            if row.get("distortion") is not None:
                text += f" ({row['distortion']:.2f}x"
                # the window's steps and the steps after it overlap: the ratio is their variation (docs/measure.md)
                text += ", within the steps' own variation)" if row.get("distortion_overlaps") else ")"
        else:
            text += " profiled"
    else:
        text += f" ({spread(row.get('ms_per_step'), row.get('iqr_ms'), row.get('noisy'))})"
        if row.get("verdict"):
            text += f"; against its baseline: {verdict_words(row)} (ratio {ratio(row['ratio'])})"
    if row.get("status") != "complete":
        text += f" [{row.get('status')}]"
    return text


def runs_table(rows: Sequence[dict[str, Any]]) -> str:
    if not rows:
        return "no runs recorded yet (`stepscope profile` and `stepscope measure` record theirs)\n"
    lines = [f"{'run':<40} {'kind':<8} {'step':<22} result"]
    for r in rows:
        step = step_label(r.get("script"), r.get("step_line"), r.get("step_function"))
        lines.append(f"{r['id']:<40} {r['kind']:<8} {step:<22} {run_summary(r)}")
    return "\n".join(lines) + "\n"


def measurement_text(m: dict[str, Any]) -> str:
    """The CLI text of a measure result (the `measure --json` document)."""
    scope = m.get("scope") or {}
    step = scope.get("step") or {}
    out = [f"{step_label(scope.get('script'), step.get('line'), step.get('function'))}: "
           f"{ms(m['median_ms'])} ms/step without the profiler (median of {len(m['raw_ms'])} passes"
           + (f" in {len(m['runs'])} processes" if len(m.get("runs") or []) > 1 else "") + whose_passes(m) + ")"]
    out.append(f"  spread   {spread(m['median_ms'], m['iqr_ms'], m['noisy'])}; p10 {ms(m['p10_ms'])}, "
               f"p90 {ms(m['p90_ms'])}, min {ms(m['min_ms'])}, max {ms(m['max_ms'])} ms")
    if m.get("mean_ms") is not None:
        out.append(f"  mean     {ms(m['mean_ms'])} ms/step (the passes' total / passes: the loop's pace where steps "
                   "alternate, as when DataLoader workers deliver in bursts)")
    if unit_words(m):
        out.append(f"  step     {unit_words(m)}")
    if call_words(m):
        out.append(f"  call     {call_words(m)}")
    if ranks_words(m):
        out.append(f"  ranks    {ranks_words(m)}")
    if m.get("samples_per_s") is not None:
        out.append(f"  samples  {m['samples_per_s']:.0f}/s at batch {scope.get('batch_size')}")
    variation = m.get("variation") or {}
    if variation.get("run_to_run_pct") is not None:
        out.append(f"  runs     medians {', '.join(ms(v) for v in variation['run_medians_ms'])} ms: "
                   f"{variation['run_to_run_pct']:.1f}% run to run, {variation['pass_to_pass_pct']:.1f}% "
                   "pass to pass (IQR)")
    if m.get("warmup_ms"):
        out.append(f"  warm-up  {', '.join(ms(v) for v in m['warmup_ms'][:8])}"
                   + (" ..." if len(m["warmup_ms"]) > 8 else "") + " ms (not in the figures)")
    out.append(f"  value    {step_values(m)}")
    out.append(f"  clock    {m.get('clock')}")
    out.append(f"  machine  {machine_label(m.get('machine'))}")
    if m.get("noisy"):
        out.append("  note     the passes disagree by more than 10% (IQR / median): look at the raw values "
                   "before trusting one figure")
    if pace_words(m):
        out.append(f"  note     {pace_words(m)}")
    if m.get("verdict"):
        baseline = m.get("baseline") or {}
        out.append("")
        method = m.get("method") or {}
        out.append(f"against {baseline.get('label') or baseline.get('run')}: {compared_figure(baseline, method)}"
                   + (f"; this run {compared_figure(m, method)}" if method.get("statistic") == "mean" else ""))
        out.append(verdict_line(m))
        out.append(f"  method   {method_line(m.get('method') or {})}")
        out.append(f"  {values_line(m.get('values_check'))}")
        for difference in m.get("differences") or []:
            out.append(f"  forced   compared although they differ in {difference}")
    return "\n".join(out) + "\n"


def comparison_text(c: dict[str, Any]) -> str:
    """The CLI text of `runs compare` (its JSON document)."""
    out = []
    for role in ("baseline", "candidate"):
        side = c[role]
        out.append(f"{role:<10} {side['run']}  {side['kind']}  {compared_figure(side, c.get('method'))} "
                   f"({side['passes']} passes, {side['processes']} process{'es' if side['processes'] != 1 else ''})")
    out.append(verdict_line(c))
    out.append(f"  method   {method_line(c['method'])}")
    out.append(f"  {values_line(c.get('values_check'))}")
    out.append(f"  machine  {machine_label(c['candidate'].get('machine'))}")
    for difference in c.get("differences") or []:
        out.append(f"  forced   compared although they differ in {difference}")
    return "\n".join(out) + "\n"


# -- the editor --------------------------------------------------------------------------------------
def editor_summary(m: dict[str, Any]) -> str:
    """A measure result in one line for the editor's notification: `12.3 ms/step without the profiler
    (median of 30 passes; IQR 0.40 ms, 3% of the median) on CPU on host-1, torch 2.13.0`, with the
    verdict when the result carries one."""
    processes = len(m.get("runs") or [])
    text = (f"{ms(m.get('median_ms'))} ms/step without the profiler (median of {len(m.get('raw_ms') or [])} passes"
            + (f" in {processes} processes" if processes > 1 else "") + whose_passes(m)
            + f"; {spread(m.get('median_ms'), m.get('iqr_ms'), m.get('noisy'))}) on {machine_label(m.get('machine'))}")
    if m.get("verdict") and m.get("ci95"):
        text += f"; {verdict_line(m)}"
    return text


def editor_status(m: dict[str, Any]) -> str:
    """The status bar's figure of a measure result: `12.3 ms/step measured, IQR 3%` (the spread as
    everywhere: the IQR as a share of the median; `noisy` when it is over 10%)."""
    median, iqr = m.get("median_ms"), m.get("iqr_ms")
    share = f", IQR {percent(iqr / median)}" if median and iqr is not None else ""
    return f"{ms(median)} ms/step measured{share}" + (", noisy" if m.get("noisy") else "")


def editor_details(m: dict[str, Any]) -> list[str]:
    """The lines of a measure result's tooltip: the spread, samples/s, run-to-run, warm-up, machine,
    the clock. Plain text (the client shows it untrusted)."""
    scope = m.get("scope") or {}
    out = [f"p10 {ms(m.get('p10_ms'))}, p90 {ms(m.get('p90_ms'))}, min {ms(m.get('min_ms'))}, "
           f"max {ms(m.get('max_ms'))} ms"]
    if call_words(m):
        out.append(f"the call itself: {call_words(m)}")
    if ranks_words(m):
        out.append(f"ranks: {ranks_words(m)}")
    if m.get("samples_per_s") is not None:
        out.append(f"{m['samples_per_s']:.0f} samples/s at batch {scope.get('batch_size')}")
    variation = m.get("variation") or {}
    if variation.get("run_to_run_pct") is not None:
        out.append(f"{variation['run_to_run_pct']:.1f}% run to run, {variation['pass_to_pass_pct']:.1f}% pass to pass")
    if m.get("warmup_ms"):
        count = len(m["warmup_ms"])
        out.append(f"{count} warm-up pass{'es' if count != 1 else ''} apart, in no figure")
    out.append(step_values(m))
    if m.get("noisy"):
        out.append("noisy: the passes disagree by more than 10% (IQR / median); look at the raw values before "
                   "trusting one figure")
    if pace_words(m):
        out.append(pace_words(m))
    out.append(f"measured on {machine_label(m.get('machine'))}")
    if m.get("clock"):
        out.append(f"clock: {m['clock']}")
    return out


def comparison_markdown(c: dict[str, Any], note: str | None = None) -> str:
    """A comparison (`runs compare`'s document) for the editor, in Markdown: both sides, the ratio of
    medians with its interval and the verdict, the method and the values."""
    def cell(text: Any) -> str:
        return str(text).replace("|", "\\|").replace("`", "'")

    rows = [f"# Stepscope: {cell(c['candidate']['run'])} against {cell(c['baseline']['run'])}", "",
            "| | baseline | candidate |", "|---|---|---|"]
    pace = "mean_ms" if (c.get("method") or {}).get("statistic") == "mean" else "median_ms"
    for label, key in (("run", "run"), ("kind", "kind"), (f"ms/step ({pace[:-3]})", pace), ("passes", "passes"),
                       ("processes", "processes")):
        a, b = c["baseline"].get(key), c["candidate"].get(key)
        if key == pace:
            a, b = ms(a), ms(b)
        rows.append(f"| {label} | {cell(a)} | {cell(b)} |")
    low, high = c["ci95"]
    rows += ["", f"**{cell(verdict_words(c))}**: candidate / baseline ratio {ratio(c['ratio'])} (95% interval "
                 f"{ratio(low)}–{ratio(high)})", "",
             f"- method: {cell(method_line(c.get('method') or {}))}",
             f"- {cell(values_line(c.get('values_check')))}",
             f"- machine: {cell(machine_label(c['candidate'].get('machine')))}"]
    for difference in c.get("differences") or []:
        rows.append(f"- compared although they differ in {cell(difference)}")
    if note:
        rows += ["", cell(note)]
    return "\n".join(rows) + "\n"
