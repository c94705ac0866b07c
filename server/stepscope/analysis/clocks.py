"""Clocks across hosts, aligned from the collectives the ranks share, and how well that holds.

Each host has its own clock: the traces of one host share it (the profiler's timestamps are that
host's time), and two hosts' clocks can differ by hundreds of µs or more. A collective to which
every rank contributes (all-reduce, all-gather, reduce-scatter, all-to-all, barrier) cannot end on
one rank before every other rank has started it. With θ the amount to add to a rank b's timestamps
to read them on the reference rank a's clock, each collective k both ran bounds θ:

    start_a,k − end_b,k  ≤  θ  ≤  end_a,k − start_b,k

The intersection over the collectives a host's ranks share with the reference rank is where θ can
lie (`bound_us`: a fact of the traces, not an estimate). Its point value (`offset_us`) is the median
of end_a,k − end_b,k, since a collective ends at nearly the same moment on every rank, kept inside
the bound; `residual_us` (the median distance of those differences from the offset) says how
closely the ends agree once aligned.

Invariants:
- The k-th collective of a name in each rank's window is the same collective on every rank (ranks
  call the collectives of a group in the same order: that is what makes them collective). Names a
  rank saw a different number of times are left out of the matching. Windows that hold different
  steps (ProfilerStep numbers) are never matched: nothing is aligned, and the note says why.
- Ranks on one host are never shifted against each other: their clock is one (offset 0). A rank
  whose host is unknown is a clock of its own, aligned like another host.
- A host whose bounds contradict each other (the intersection is empty: collectives matched wrongly,
  or a group the reference rank is not in) or that shares no collective with the reference rank is
  not aligned (`offset_us` null), and the note says so; nothing is compared across unaligned clocks.
- Between ranks of the reference host the same bounds must hold 0: `check` reports them, a test of
  the matching on clocks known to agree.
- `late_ms` of a rank: per step, how much later than the first rank it started the collectives
  they all share, on aligned clocks (the sum over those collectives); null where any clock is not
  aligned. A rank the others wait for starts its collectives last.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from statistics import median
from typing import Any

from ..trace import Kind, Trace
from .links import Links

#: NCCL/RCCL kernels of collectives every rank contributes to (not SendRecv, Broadcast, Reduce)
_GPU_COLLECTIVE = re.compile(r"^(nccl|rccl)\w*?_(AllReduce|AllGather|ReduceScatter)", re.IGNORECASE)
#: gloo's operations, as the profiler records them on gloo's threads while they run
_HOST_COLLECTIVE = re.compile(r"^gloo:(all_?reduce|all_?gather\w*|reduce_?scatter\w*|all_?to_?all\w*|barrier)$",
                              re.IGNORECASE)


@dataclass(frozen=True)
class Collectives:
    """One rank's collectives in its window: `by` "gpu" (kernels) or "host" (gloo's operations),
    each name's (start, end) in µs on the rank's clock, in start order."""

    by: str
    events: dict[str, list[tuple[float, float]]]

    def __len__(self) -> int:
        return sum(len(v) for v in self.events.values())


def collective_events(trace: Trace, links: Links, window_us: tuple[float, float]) -> Collectives | None:
    """The collectives the window's steps started (a kernel by its launch): GPU collective kernels when
    there are any, else gloo's host operations; None when there are neither."""
    for by, kinds, pattern in (("gpu", (Kind.KERNEL,), _GPU_COLLECTIVE),
                               ("host", (Kind.ANNOTATION, Kind.CPU_OP), _HOST_COLLECTIVE)):
        names = {i: _short(n) for i, n in enumerate(trace.names) if pattern.match(n)}
        if not names:
            continue
        found: dict[str, list[tuple[float, float]]] = {}
        for row in trace.rows(*kinds):
            name = names.get(trace.name[row])
            if name is None:
                continue
            start, end = trace.ts[row], trace.end(row)
            # a step's collective belongs to it by when it was started (a kernel: launched), however
            # late it ends: gloo's last one of a step can end after the step, a kernel run after it
            launch = links.launch_row.get(row) if by == "gpu" else None
            if window_us[0] <= (trace.ts[launch] if launch is not None else start) < window_us[1]:
                found.setdefault(name, []).append((start, end))
        if found:
            return Collectives(by, {k: sorted(v) for k, v in found.items()})
    return None


def _short(name: str) -> str:
    """A kernel's name without its argument list."""
    return name.split("(", 1)[0]


@dataclass(frozen=True)
class RankClock:
    """What the alignment reads of one rank: its host (None: unknown), the steps of its window (their
    names), and its collectives."""

    rank: int | None
    host: str | None
    steps: tuple[str, ...]
    n_steps: int
    collectives: Collectives | None


def _pairs(a: Collectives, b: Collectives):
    """The collectives a and b both ran, matched by name and order: ((start_a, end_a), (start_b, end_b))."""
    for name, mine in a.events.items():
        theirs = b.events.get(name)
        if theirs is not None and len(theirs) == len(mine):
            yield from zip(mine, theirs)


@dataclass(frozen=True)
class Bound:
    lo: float
    hi: float
    offset: float
    residual: float
    collectives: int

    @property
    def holds(self) -> bool:
        return self.lo <= self.hi


def bound(reference: Collectives, others: list[Collectives]) -> Bound | None:
    """The bound on θ (see the module's docstring) from every collective `others` share with the
    reference; None when they share none."""
    lo, hi, ends = -math.inf, math.inf, []
    for other in others:
        for (sa, ea), (sb, eb) in _pairs(reference, other):
            lo, hi = max(lo, sa - eb), min(hi, ea - sb)
            ends.append(ea - eb)
    if not ends:
        return None
    offset = min(max(median(ends), lo), hi) if lo <= hi else median(ends)
    return Bound(lo, hi, offset, median(abs(d - offset) for d in ends), len(ends))


def _us(value: float) -> float:
    return round(value, 1)


def _clock_name(clock: RankClock) -> str:
    return clock.host if clock.host is not None else f"rank {clock.rank}"


def align(clocks: list[RankClock]) -> tuple[dict[str, Any], dict[Any, float | None], dict[Any, float | None], list[str]]:
    """(the report's `clocks` section, each rank's offset in µs (None: not aligned), each rank's
    `late_ms`, notes) for ranks in rank order. The reference is the first rank with collectives.
    `method`: "one host" (one clock: nothing to align), "collectives" (every clock aligned), or
    "not aligned" (a clock could not be)."""
    by_domain: dict[str, list[RankClock]] = {}
    for clock in clocks:
        by_domain.setdefault(_clock_name(clock), []).append(clock)
    reference = next((c for c in clocks if c.collectives), clocks[0])
    home = _clock_name(reference)
    hosts = [{"host": name if group[0].host is not None else None, "ranks": [c.rank for c in group],
              "offset_us": 0.0 if name == home else None, "bound_us": None, "residual_us": None, "collectives": 0}
             for name, group in by_domain.items()]
    section: dict[str, Any] = {"method": "", "by": reference.collectives.by if reference.collectives else None,
                               "reference_rank": reference.rank, "hosts": hosts, "check": None}
    offsets: dict[Any, float | None] = {c.rank: (0.0 if _clock_name(c) == home else None) for c in clocks}
    late: dict[Any, float | None] = {c.rank: None for c in clocks}
    if len({c.rank for c in clocks}) < len(clocks):  # ranks claimed twice: not one run's ranks (ranks.py says so)
        section["method"] = "not aligned"
        return section, {rank: None for rank in offsets}, late, []
    matched, notes = _align_hosts(clocks, by_domain, reference, section, offsets)
    if matched and all(v is not None for v in offsets.values()):  # each rank's lateness, on aligned clocks
        late = _lateness(clocks, offsets)
    section["method"] = ("one host" if len(by_domain) == 1 else
                         "collectives" if all(v is not None for v in offsets.values()) else "not aligned")
    return section, offsets, late, notes


def _align_hosts(clocks: list[RankClock], by_domain: dict[str, list[RankClock]], reference: RankClock,
                 section: dict[str, Any], offsets: dict[Any, float | None]) -> tuple[bool, list[str]]:
    """Fill in each host's offset and bound. (whether the collectives could be matched at all: if
    not, nothing is compared across ranks; the notes)."""
    home = _clock_name(reference)
    if len({c.steps for c in clocks}) > 1:
        return False, ["the ranks' windows hold different steps (" + "; ".join(
            f"rank {c.rank}: {_step_span(c.steps)}" for c in clocks) + "): their collectives are not matched, and no "
            "clock is aligned"]
    if reference.collectives is None:
        if len(by_domain) == 1:
            return False, []
        return False, [f"{len(by_domain)} hosts, but the traces hold no collective every rank contributes to (all-reduce, "
                "all-gather, reduce-scatter): their clocks are not aligned, and no time is compared across hosts"]
    # the matching, tested on the clock every rank of the reference's host shares
    same_host = [c.collectives for c in by_domain[home] if c is not reference and c.collectives]
    check = bound(reference.collectives, same_host) if same_host else None
    if check is not None:
        section["check"] = {"bound_us": [_us(check.lo), _us(check.hi)], "residual_us": _us(check.residual),
                            "holds": check.lo <= 0 <= check.hi, "collectives": check.collectives}
        if not check.lo <= 0 <= check.hi:
            return False, [f"the collectives of the ranks on {home} do not line up on the clock they share (the bound "
                    f"[{check.lo:+.1f}, {check.hi:+.1f}] µs excludes 0): they are not matched right, so nothing is "
                    "aligned or compared from them"]
    notes: list[str] = []
    for entry, (name, group) in zip(section["hosts"], by_domain.items()):
        if name == home:
            continue
        found = bound(reference.collectives, [c.collectives for c in group if c.collectives])
        if found is None:
            notes.append(f"the clock of {name} is not aligned: its ranks share no collective with rank "
                         f"{reference.rank}, the reference")
            continue
        entry["collectives"] = found.collectives
        if not found.holds:
            notes.append(f"the clock of {name} is not aligned: its {found.collectives} collectives shared with rank "
                         f"{reference.rank} contradict each other (matched wrongly, or of a group rank "
                         f"{reference.rank} is not in)")
            continue
        entry.update(offset_us=_us(found.offset), bound_us=[_us(found.lo), _us(found.hi)],
                     residual_us=_us(found.residual))
        for c in group:
            offsets[c.rank] = found.offset
    aligned = [h for h in section["hosts"] if h["bound_us"] is not None]
    if aligned:
        notes.append(_aligned_words(reference, home, section["by"], aligned))
    return True, notes


def _host_words(host: dict[str, Any]) -> str:
    return f"host {host['host']}" if host["host"] is not None else f"rank {host['ranks'][0]}"


MAX_HOSTS_NAMED = 3  # more aligned clocks than this are summed up in one range (each is in `clocks.hosts`)


def _aligned_words(reference: RankClock, home: str, by: str | None, aligned: list[dict[str, Any]]) -> str:
    """The note that says how the clocks were aligned and how well that holds."""
    to = f"rank {reference.rank}'s" + (f" (host {home})" if reference.host is not None else "")
    what = f"from the {'GPU' if by == 'gpu' else 'host'} collectives the ranks share"
    if len(aligned) <= MAX_HOSTS_NAMED:
        return f"clocks aligned to {to} {what}: " + "; ".join(
            f"{_host_words(h)} {h['offset_us']:+.1f} µs (bounded to [{h['bound_us'][0]:+.1f}, {h['bound_us'][1]:+.1f}] "
            f"µs by the collectives; their ends agree to {h['residual_us']:.1f} µs once aligned)" for h in aligned)
    offsets = [h["offset_us"] for h in aligned]
    widest = max(h["bound_us"][1] - h["bound_us"][0] for h in aligned)
    return (f"{len(aligned)} clocks aligned to {to} {what}: offsets from {min(offsets):+.1f} to {max(offsets):+.1f} µs, "
            f"each bounded by the collectives to an interval at most {widest:.1f} µs wide, their ends agreeing to "
            f"{max(h['residual_us'] for h in aligned):.1f} µs or better once aligned (each clock is in clocks.hosts)")


def _step_span(steps: tuple[str, ...]) -> str:
    if not steps:
        return "no steps"
    return steps[0] if len(steps) == 1 else f"{steps[0]} to {steps[-1]}"


def _lateness(clocks: list[RankClock], offsets: dict[Any, float | None]) -> dict[Any, float | None]:
    """Each rank's `late_ms` (see the module's docstring) over the collectives every rank saw as
    many times."""
    seen = [c for c in clocks if c.collectives]
    late: dict[Any, float | None] = {c.rank: None for c in clocks}
    if len(seen) < 2 or len(seen) < len(clocks):
        return late
    names = [n for n in seen[0].collectives.events
             if all(len(c.collectives.events.get(n, ())) == len(seen[0].collectives.events[n]) for c in seen)]
    total = {c.rank: 0.0 for c in seen}
    for name in names:
        for k in range(len(seen[0].collectives.events[name])):
            starts = {c.rank: c.collectives.events[name][k][0] + offsets[c.rank] for c in seen}
            first = min(starts.values())
            for rank, start in starts.items():
                total[rank] += start - first
    if not names:
        return late
    return {c.rank: round(total[c.rank] / 1000.0 / max(c.n_steps, 1), 4) for c in seen}
