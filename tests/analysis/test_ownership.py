"""A region's own time and the step's time by owner (analysis/ownership.py), on intervals made here.

The shapes are the frameworks': Lightning runs the user's training_step and its backward inside
`optimizer.step(closure)`; the HF Trainer's step is a package's lines around the user's loss."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable

from stepscope.analysis.intervals import subtract
from stepscope.analysis.ownership import own_time, region_role, split_time


@dataclass
class N:
    start: float
    end: float
    track: int
    key: Hashable


def test_subtract_leaves_the_moments_no_hole_covers() -> None:
    assert subtract([(0, 10), (20, 30)], [(2, 3), (5, 22), (25, 26), (29, 40)]) == [(0, 2), (3, 5), (22, 25), (26, 29)]
    assert subtract([(0, 10)], [(-5, 15)]) == [] and subtract([(0, 10)], []) == [(0, 10)]


def test_an_optimizer_step_around_its_closure_owns_only_its_update() -> None:
    # Optimizer.step 0..100 on thread 1: the call of training_step 5..40 in it, backward 45..80 (no region)
    nodes = [N(0, 100, 1, "Optimizer.step#AdamW.step"), N(5, 40, 1, "ss:f0:14"), N(10, 30, 1, "ss:f0:16")]
    own = own_time(nodes, backward=[(45, 80, 1)], w0=0, w1=100)
    assert own["Optimizer.step#AdamW.step"] == [(0, 5), (40, 45), (80, 100)]  # 30 of its 100
    assert own["ss:f0:14"] == [(5, 10), (30, 40)] and own["ss:f0:16"] == [(10, 30)]


def test_backward_on_another_thread_is_taken_from_the_step_threads_regions_only() -> None:
    # the step's thread (1) waits in backward() while the autograd thread (2) runs it; a collective on
    # a thread of its own (3) runs alongside and keeps its whole time
    nodes = [N(0, 100, 1, "ss:f0:62"), N(40, 90, 3, "gloo:all_reduce")]
    own = own_time(nodes, backward=[(20, 80, 2)], w0=0, w1=100, main_track=1)
    assert own["ss:f0:62"] == [(0, 20), (80, 100)] and own["gloo:all_reduce"] == [(40, 90)]


def test_own_time_is_per_thread_and_inside_the_window() -> None:
    nodes = [N(0, 100, 1, "outer"), N(10, 90, 2, "other thread"), N(-50, 20, 1, "early")]
    own = own_time(nodes, backward=[], w0=0, w1=100)
    assert own["other thread"] == [(10, 90)]  # not nested in `outer`: another thread
    # overlapping without nesting, neither is inside the other: each keeps its time (the split counts it once)
    assert own["outer"] == [(0, 100)] and own["early"] == [(0, 20)]


def test_the_split_adds_up_to_the_window_each_moment_once() -> None:
    # user lines 10..40 and their backward 45..80; a package line 0..45 around the user's call; torch's
    # optimizer 80..90; nothing recorded 90..100
    main_own = {"ss:f1:2127": [(0, 10), (40, 45)], "Optimizer.step#AdamW.step": [(80, 90)],
                "ss:f1:2088": [(0, 45)], "my own label": [(92, 95)]}
    owners = {"ss:f1:2127": ("package", "transformers"), "ss:f1:2088": ("package", "transformers"),
              "Optimizer.step#AdamW.step": ("torch", "optimizer")}
    split = split_time(user=[(10, 40), (45, 80)], main_own=main_own, owner_of=owners.get, w0=0, w1=100, n_steps=2)
    assert split["window_ms"] == 0.05 and split["user_ms"] == 0.0325  # 65 µs over 2 steps
    parts = {(p["package"], p["role"]): p["ms"] for p in split["parts"]}
    assert parts == {("transformers", "step"): 0.0075, ("torch", "optimizer"): 0.005}
    assert split["rest_ms"] == 0.005  # 90..100, the unowned label's time included
    assert abs(split["user_ms"] + sum(parts.values()) + split["rest_ms"] - split["window_ms"]) < 1e-9


def test_torch_regions_are_known_by_their_labels() -> None:
    assert region_role("Optimizer.step#AdamW.step") == "optimizer"
    assert region_role("Optimizer.zero_grad#SGD.zero_grad") == "optimizer"
    assert region_role("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__") == "data"
    assert region_role("forward") is None and region_role("ss:f0:12") is None
