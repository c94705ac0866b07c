"""What a region does itself, and whose code the step's time runs in.

A framework's step is not laid out like a hand-written loop: Lightning runs the user's
`training_step` and its backward inside `optimizer.step(closure)`, the HF Trainer's step is its own
code calling the user's model. Two figures keep that from reading as "the optimizer takes 77%":

- A region's own time (`own_time`): the moments of its events that no event nested in it on its
  thread holds (a line, another region) and no backward op holds: on its own thread, and for a
  region of the step's thread on any thread (that thread waits in `backward()` while another runs
  it; a region of another thread, a collective's, does not wait for backward running elsewhere). A region that only
  wraps other attributed work (`Optimizer.step#AdamW.step` around the closure, the def line of a step
  function, a `with autocast():` line) keeps little of its own: for the optimizer, its update without
  the closure it ran.
- The step's time by owner (`split_time`): each moment of the window counts once, in the first of
  1. your code: one of your lines runs (on any thread), or the backward of one of them runs;
  2. a line of an installed package's module that holds the step (the HF Trainer's training_step);
  3. torch's own regions on the step's thread: an optimizer's update (`Optimizer.step#`,
     `Optimizer.zero_grad#`), a DataLoader's batch (`enumerate(DataLoader)#`);
  in 2 and 3, a moment is the innermost region's on the step's thread (backward ops included: a
  package line's backward is its package's work; your lines' backward was taken in 1);
  4. the rest: the code that runs the step, said by the report from the scenario (`time_split` in
     report.py: the framework that calls the step function, the package that holds the step loop,
     or the user's own loop). Other regions of the step's thread outside your lines belong to it.
  The parts are unions taken in that order, so they add up to the window, never more.

Pure functions of interval lists; no trace access (attribution.py gathers the nodes).
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from typing import Any, Callable, Hashable, Iterable, Protocol

from .intervals import Interval, clip, merge, subtract, union_length

#: torch's own region labels outside anyone's lines: (pattern, role)
TORCH_REGIONS = ((re.compile(r"^Optimizer\.(step|zero_grad)#"), "optimizer"),
                 (re.compile(r"^enumerate\(DataLoader\)#"), "data"))


class Node(Protocol):
    start: float
    end: float
    track: int
    key: Hashable


def own_time(nodes: Iterable[Node], backward: Iterable[tuple[float, float, int]], w0: float, w1: float,
             main_track: int | None = None) -> dict[Hashable, list[Interval]]:
    """Per key: the moments of its nodes (inside the window) that no node nested in one of them on
    the same thread holds, and that no `backward` op (start, end, thread) holds on the node's thread
    (on any thread for a node of `main_track`, the step's)."""
    by_track: dict[int, list[Node]] = defaultdict(list)
    for n in nodes:
        by_track[n.track].append(n)
    backward = list(backward)
    out: dict[Hashable, list[Interval]] = defaultdict(list)
    for track, track_nodes in by_track.items():
        holes = merge(clip(((s, e) for s, e, t in backward if track == main_track or t == track), w0, w1))
        hole_ends = [end for _, end in holes]
        track_nodes.sort(key=lambda n: (n.start, -n.end))
        children: list[list[Interval]] = [[] for _ in track_nodes]
        stack: list[int] = []
        for k, n in enumerate(track_nodes):
            while stack and not (track_nodes[stack[-1]].start <= n.start and n.end <= track_nodes[stack[-1]].end):
                stack.pop()
            if stack:
                children[stack[-1]].append((n.start, n.end))
            stack.append(k)
        for k, n in enumerate(track_nodes):
            span = clip([(n.start, n.end)], w0, w1)
            if span:
                first = bisect.bisect_right(hole_ends, span[0][0])  # the holes that end inside or after it
                last = bisect.bisect_left(holes, (span[0][1], span[0][1]), lo=first)
                out[n.key].extend(subtract(span, children[k] + holes[first:last]))
    return {key: merge(ivs) for key, ivs in out.items()}


def region_role(label: str) -> str | None:
    """"optimizer" or "data" for torch's own regions, else None."""
    for pattern, role in TORCH_REGIONS:
        if pattern.match(label):
            return role
    return None


def split_time(*, user: Iterable[Interval], main_own: dict[Hashable, list[Interval]],
               owner_of: Callable[[Hashable], tuple[str, str] | None], w0: float, w1: float,
               n_steps: int) -> dict[str, Any]:
    """The window's time by owner, per step (see the module docstring). `user`: the moments of your
    lines and their backward; `main_own`: the own time of each region on the step's thread, by key;
    `owner_of(key)`: ("package", name) for a line of a package's module, ("torch", role) for torch's
    own regions, None for any other region (it falls to the rest). Returns `{"window_ms", "user_ms",
    "parts": [{"package", "role", "ms", "regions"}], "rest_ms"}`, each per step."""
    covered = merge(clip(user, w0, w1))
    user_us = union_length(covered)
    groups: dict[tuple[str, str], list[Hashable]] = defaultdict(list)
    for key in main_own:
        owner = owner_of(key)
        if owner is not None:
            groups[owner].append(key)
    # package lines first, then torch's regions: each takes what the ones before left
    order = sorted(groups, key=lambda o: (o[0] != "package", o))
    parts = []
    for owner in order:
        own = merge(iv for key in groups[owner] for iv in main_own[key])
        before = union_length(covered)
        covered = merge(covered + own)
        us = union_length(covered) - before
        if us <= 0:
            continue
        kind, name = owner
        parts.append({"package": name if kind == "package" else "torch", "role": "step" if kind == "package" else name,
                      "ms": _per_step(us, n_steps),
                      "regions": sorted(str(k) for k in groups[owner]) if kind == "torch" else []})
    window_us = max(0.0, w1 - w0)
    rest = max(0.0, window_us - union_length(covered))
    return {"window_ms": _per_step(window_us, n_steps), "user_ms": _per_step(user_us, n_steps), "parts": parts,
            "rest_ms": _per_step(rest, n_steps)}


def _per_step(us: float, n_steps: int) -> float:
    return round(us / 1000.0 / max(1, n_steps), 4)
