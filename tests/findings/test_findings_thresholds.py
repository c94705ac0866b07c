"""Every finding's every threshold, just below, at and just above its default: each fires exactly on
the side docs/findings.md says (≥ "at least", ≤ "at most", > "more than", "fewer than").

The reports are the smallest that `find` reads (it is a pure function of the report), with a 2 ms
step (a share of it is then twice the threshold, exactly), and values on either side one float
apart (`math.nextafter`) or one count apart.
"""

from __future__ import annotations

import math
import re
from dataclasses import fields
from pathlib import Path
from typing import Callable

import pytest

from stepscope.analysis.findings import Thresholds, find

DEFAULTS = Thresholds()
REPO = Path(__file__).resolve().parents[2]


STEP_MS = 2.0


def report(*, steps: list[float] | None = None, gpu: bool = True, **extra) -> dict:
    """A steady window of four 2 ms steps, on a machine the report does not name."""
    steps = [STEP_MS] * 4 if steps is None else steps
    base = {"ms_per_step": STEP_MS, "steps": [{"name": f"ProfilerStep#{i}", "ms": ms} for i, ms in enumerate(steps, 1)],
            "gpu": {"observed": gpu}, "machine": {}, "regions": [], "evidence": {}}
    base.update(extra)
    return base


def batch_read(read_ms: float, *, gpu: bool) -> dict:
    # the GPU idles for the whole read (busy 0 ms) on a GPU run; no GPU figure on a CPU run
    read = {"ms": read_ms, "gpu_busy_ms": 0.0 if gpu else None, "signals": ["ss:f0:3:next"]}
    return report(gpu=gpu, evidence={"batch_read": read})


def kernels(*, count: int = 200, median_us: float = 5.0, busy_ms: float = 0.2) -> dict:
    k = {"count": count, "median_us": median_us, "p90_us": median_us, "gpu_busy_ms": busy_ms, "launch_ms": 0.5,
         "top_line_kernels": count}
    return report(evidence={"kernels": k})


def dominant(self_ms: float) -> dict:
    return report(evidence={"ops": [{"name": "aten::mm", "self_ms": self_ms, "gpu_ms": None, "count": 1}]})


def syncs(*, ms: float = 1.0, steps: int = 4) -> dict:
    return report(evidence={"syncs": {"count": 1, "ms": ms, "steps": steps, "calls": ["cudaStreamSynchronize"],
                                      "gpu_idle_after_ms": None}})


def host(ms: float, *, gpu: bool = True) -> dict:
    # the host's own work, on a GPU run while the GPU idles (all of the step), on a CPU run in a training step
    work = {"ms": ms, "gpu_idle_ms": STEP_MS if gpu else None, "records_autograd": True, "lines": [], "within": [],
            "file": "/ws/train.py", "line": 9, "precision": "exact", "anchor_ms": ms}
    return report(gpu=gpu, evidence={"host_work": work})


def copies(steps: int) -> dict:
    group = {"factory": "aten::arange", "in_batch_read": False, "steps": steps, "bytes": 1024, "per_step": 1,
             "precision": "exact", "file": "/ws/train.py", "line": 7}
    return report(evidence={"h2d_copies": [group]})


def startup(first_ms: float, steady: float) -> dict:
    r = report(steps=[steady] * 4, startup={"first_steps_ms": [first_ms], "to_first_step_ms": None})
    r["ms_per_step"] = steady
    return r


def ranks(late: float, waiting: float) -> dict:
    return report(ranks=[{"rank": 0, "collective_ms": late, "ms_per_step": 1.0},
                         {"rank": 1, "collective_ms": waiting, "ms_per_step": 1.0}])


def unsteady(slowest: float, rest: tuple[float, float] = (1.0, 1.0)) -> dict:
    # the first active step is left out of the spread; the others are `rest` and `slowest`
    return report(steps=[1.0, *rest, slowest])


def faster(distortion: float, *, window_mean: float | None = None) -> dict:
    # the loop timed after the window: 4 ms/step (median and mean); the window's mean when given
    r = report(distortion=distortion, unprofiled={"ms_per_step": 4.0, "mean_ms": 4.0, "passes": 5})
    if window_mean is not None:
        r["evidence"] = {"step_mean_ms": window_mean}
    return r


AT_LEAST, AT_MOST, MORE_THAN, FEWER_THAN = "at least", "at most", "more than", "fewer than"
FIRES = {  # (just below, at, just above)
    AT_LEAST: (False, True, True), AT_MOST: (True, True, False),
    MORE_THAN: (False, False, True), FEWER_THAN: (True, False, False),
}

# field of Thresholds -> (finding kind, how it compares, the report with its figure at a value, the
# figure's value at the threshold). Where the figure is the threshold itself (a share of the 1 ms
# step, a count), the value is the threshold's; where the report holds a figure the finding derives
# the compared one from, its value at the threshold is given, so that one float apart stays exact.
T = DEFAULTS
CASES: dict[str, tuple[str, str, Callable[[float], dict], float]] = {
    "input_gpu_idle_share": ("input-bound", AT_LEAST, lambda v: batch_read(v, gpu=True),
                             T.input_gpu_idle_share * STEP_MS),
    "input_cpu_share": ("input-bound", AT_LEAST, lambda v: batch_read(v, gpu=False), T.input_cpu_share * STEP_MS),
    "host_bound_share": ("host-bound", AT_LEAST, host, T.host_bound_share * STEP_MS),
    # a copy in v of the 4 active steps
    "repeated_copy_step_share": ("repeated-copy", AT_LEAST, lambda v: copies(int(v)), T.repeated_copy_step_share * 4),
    "small_launches_min_kernels": ("small-launches", AT_LEAST, lambda v: kernels(count=int(v)),
                                   T.small_launches_min_kernels),
    "small_kernel_us": ("small-launches", AT_MOST, lambda v: kernels(median_us=v), T.small_kernel_us),
    "small_launches_max_gpu_busy": ("small-launches", AT_MOST, lambda v: kernels(busy_ms=v),
                                    T.small_launches_max_gpu_busy * STEP_MS),
    "dominant_op_share": ("dominant-op", AT_LEAST, dominant, T.dominant_op_share * STEP_MS),
    # the share makes it a warning (waits every step are said at severity info however short they look)
    "sync_min_share": ("sync-in-step:warning", AT_LEAST, lambda v: syncs(ms=v), T.sync_min_share * STEP_MS),
    # waits in v of the 4 active steps
    "sync_step_share": ("sync-in-step", AT_LEAST, lambda v: syncs(steps=int(v)), T.sync_step_share * 4),
    # ratio: a start-up step of v ms against 100 ms/step (more than 50 ms above it)
    "startup_ratio": ("startup-cost", AT_LEAST, lambda v: startup(v, 100.0), T.startup_ratio * 100.0),
    # extra: a start-up step of v ms against 10 ms/step (6 times as long: the ratio holds)
    "startup_min_extra_ms": ("startup-cost", AT_LEAST, lambda v: startup(v, 10.0), 10.0 + T.startup_min_extra_ms),
    "min_active_steps": ("unsteady-window", FEWER_THAN, lambda v: report(steps=[STEP_MS] * int(v)), T.min_active_steps),
    # spread: steps of 1, 1 and v ms (median 1, range v - 1 ms, over 0.25 ms)
    "max_step_spread": ("unsteady-window", MORE_THAN, unsteady, 1.0 + T.max_step_spread),
    # range: steps of 0.25, 0.25 and v ms (a spread of 1 at the threshold: well over 0.5)
    "unsteady_min_range_ms": ("unsteady-window", AT_LEAST, lambda v: unsteady(v, (0.25, 0.25)),
                              0.25 + T.unsteady_min_range_ms),
    # the rank waited for spends nothing in collectives: the other's extra time is v
    "rank_wait_min_ms": ("rank-imbalance", AT_LEAST, lambda v: ranks(0.0, v), T.rank_wait_min_ms),
    "rank_wait_ratio": ("rank-imbalance", AT_LEAST, lambda v: ranks(1.0, v), T.rank_wait_ratio),
    "profiled_faster_ratio": ("profiled-faster", FEWER_THAN, faster, T.profiled_faster_ratio),
    # the window's mean of v ms against the loop's 4 ms (the medians 2x apart: the ratio holds)
    "profiled_faster_mean_ratio": ("profiled-faster", FEWER_THAN, lambda v: faster(0.5, window_mean=v),
                                   T.profiled_faster_mean_ratio * 4.0),
}
# a count of steps or kernels, not a float: one apart, not one float apart
WHOLE = {"repeated_copy_step_share", "sync_step_share", "small_launches_min_kernels", "min_active_steps"}
# more copies than active steps cannot be observed
NO_ABOVE = {"repeated_copy_step_share"}


def test_every_threshold_has_its_boundary_case() -> None:
    numeric = {f.name for f in fields(Thresholds) if not isinstance(getattr(DEFAULTS, f.name), tuple)}
    assert set(CASES) == numeric


def _sides(name: str) -> list[tuple[str, float]]:
    at = CASES[name][3]
    if name in WHOLE:
        below, above = at - 1, at + 1
    else:
        below, above = math.nextafter(at, -math.inf), math.nextafter(at, math.inf)
    sides = [("just below", below), ("at", at), ("just above", above)]
    return [s for s in sides if not (s[0] == "just above" and name in NO_ABOVE)]


@pytest.mark.parametrize("name", CASES)
def test_a_finding_fires_on_the_documented_side_of_each_threshold(name: str) -> None:
    kind, comparison, build, _ = CASES[name]
    kind, _, severity = kind.partition(":")  # `kind:severity`: only a finding of that severity counts
    expected = dict(zip(("just below", "at", "just above"), FIRES[comparison]))
    seen = {}
    for side, value in _sides(name):
        findings = find(build(value), DEFAULTS)
        seen[side] = any(f["kind"] == kind and (not severity or f["severity"] == severity) for f in findings)
    assert seen == {side: expected[side] for side in seen}, \
        f"{kind} with {name} = {getattr(DEFAULTS, name)} ({comparison}): fired {seen}"


def test_the_documented_defaults_are_the_thresholds() -> None:
    text = (REPO / "docs" / "findings.md").read_text(encoding="utf-8")
    for name in CASES:
        key = name.replace("_", "-")
        m = re.search(rf"`{key}`[\s,(]*([0-9.]+)", text)
        assert m, f"docs/findings.md does not give the default of {key}"
        assert float(m.group(1)) == getattr(DEFAULTS, name), key


@pytest.mark.parametrize("active, in_steps, fires", [(2, 2, True), (2, 1, False), (1, 1, False)])
def test_a_repeated_copy_needs_two_steps_at_least(active: int, in_steps: int, fires: bool) -> None:
    r = copies(in_steps)
    r["steps"] = r["steps"][:active]
    assert any(f["kind"] == "repeated-copy" for f in find(r, DEFAULTS)) is fires


# -- what else each finding reads, beside its thresholds -------------------------------------------

def _only(kind: str, r: dict) -> dict | None:
    found = [f for f in find(r, DEFAULTS) if f["kind"] == kind]
    assert len(found) <= 1
    return found[0] if found else None


def test_the_figures_of_a_finding_are_its_shares_and_ratios() -> None:
    assert _only("dominant-op", dominant(1.5))["figures"]["share"] == 0.75  # 1.5 of the 2 ms step
    assert _only("startup-cost", startup(500.0, 100.0))["figures"]["ratio"] == 5.0
    assert _only("rank-imbalance", ranks(0.25, 1.0))["figures"]["extra_ms"] == 0.75
    assert _only("unsteady-window", unsteady(1.75))["figures"]["spread"] == 0.75


def test_a_small_gap_between_ranks_is_not_an_imbalance_however_large_the_ratio() -> None:
    assert _only("rank-imbalance", ranks(0.03125, 0.09375)) is None  # 3 times as long, 0.0625 ms more


def test_the_operator_named_dominant_is_the_one_with_the_most_time_of_its_own() -> None:
    r = report(evidence={"ops": [{"name": "aten::small", "self_ms": 0.1, "gpu_ms": 0.2, "count": 1},
                                 {"name": "aten::big", "self_ms": 1.5, "gpu_ms": None, "count": 1}]})
    assert _only("dominant-op", r)["figures"]["op"] == "aten::big"


def test_a_start_up_step_is_compared_with_the_slowest_step_after_the_first() -> None:
    # the window's second step took 300 ms: a 500 ms start-up step is not twice the slowest
    r = startup(500.0, 100.0)
    r["steps"] = [{"name": f"ProfilerStep#{i}", "ms": ms} for i, ms in enumerate([100.0, 300.0, 100.0, 100.0], 1)]
    assert _only("startup-cost", r) is None


def test_copies_inside_the_batch_read_are_left_to_input_bound() -> None:
    r = copies(4)
    r["evidence"]["h2d_copies"][0]["in_batch_read"] = True
    assert _only("repeated-copy", r) is None


def test_a_copy_says_its_size_in_the_largest_unit_it_fills() -> None:
    r = copies(4)
    r["evidence"]["h2d_copies"][0]["bytes"] = 1 << 20
    assert "A 1.0 MB host-to-device copy" in _only("repeated-copy", r)["observation"]
    r["evidence"]["h2d_copies"][0]["bytes"] = 1536
    assert "A 1.5 KB host-to-device copy" in _only("repeated-copy", r)["observation"]
