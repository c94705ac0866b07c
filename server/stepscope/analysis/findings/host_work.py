"""Evidence of the host's own work and of what backward work was caused by: trace facts for the
`host-bound` and `small-launches` findings, computed with the rest of the evidence (evidence.py).

Backward work belongs to the forward line that recorded it (as `backward_ms` of a line does for
time): a kernel launched inside a backward op (on the autograd thread, or on the main thread in
`loss.backward()`) is caused by the forward statement whose op recorded that backward op —
attribution's forward points (`fwdbwd` flows, else sequence numbers). `launch_causes` gives each
launch that statement's node (the launch's own node when it ran outside the backward or its forward
point is not known); `backward_op_causes` does the same for operators (dominant-op's line).

The host's own work (`host_work`): on the step's thread, the moments of each line that no line
nested in it holds (its self moments), less
- the batch read (input-bound's), the host's waits on the device (sync-in-step's),
- backward ops on any thread (the step's thread waits in `backward()` while another runs them),
  and torch's optimizer regions (`Optimizer.step#`, `Optimizer.zero_grad#`) but for the lines nested
  in them (Lightning's `training_step` runs inside `Optimizer.step#`, a wrapper),
and, with GPU events, less the moments the GPU is busy: host work that the GPU waits for.
Only lines that are neither
- training work: lines whose own moments record autograd nodes (forward points: the model's
  forward, the loss) or run backward ops (`loss.backward()`), nor
- launch work: lines that launch GPU work at least once per `LAUNCH_WORK_US` µs of their own host time
  (the host is issuing the device's work: small-launches' evidence, not host-side work),
count. The lines' self moments never overlap on one thread, so the per-line figures add up to the
total, never more than the window.

The place (`file`/`line`) is found by descending from the step's outermost lines: into the line
that holds at least `HOLDS` of the host work, again and again; a line whose statements repeat
inside it (a loop over samples) holds them as one unit and ends the descent there; where the work
is spread over the statements of a block or a function none of which holds `HOLDS` of it, the
largest of them is named — a wrapper (a `with` block, a call, a function's frame) is looked
through, never named as where the time goes. `within` lists the lines of the descent, outermost
first.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

from ...trace import Kind, Trace
from ..attribution import Points, backward_points, backward_rows, gpu_under_backward
from ..intervals import Coverage, Interval, clip, merge, subtract
from ..links import Links
from ..ownership import region_role

if TYPE_CHECKING:
    from .evidence import EvidenceWindow

#: a line holding at least this share of all the host work is descended into
HOLDS = 0.6
#: a line that launches GPU work at least once per this many µs of its own host time is issuing the
#: device's work (launch overhead, small-launches' evidence), not doing work of its own on the host;
#: profiled host time per launch of an eager operator is 10 to 50 µs
LAUNCH_WORK_US = 200.0
#: per line listed in the evidence
MAX_LINES = 5
US_PER_MS = 1000.0


def _ms(us: float, n: int) -> float:
    return round(us / US_PER_MS / n, 4)


def launch_causes(trace: Trace, win: "EvidenceWindow", launch_lines: list) -> tuple[list, list]:
    """(the node that caused each launch of `win.launches`, the node of each forward point of the
    window's backward ops)."""
    points, _ = backward_points(trace, win.w0, win.w1)
    if not points.row:
        return launch_lines, []
    forward_nodes = win.locator.locate(list(zip(points.track, points.ts)))
    node_of_backward: dict[int, Any] = {}
    for row, node in zip(points.row, forward_nodes):
        if node is not None:
            node_of_backward.setdefault(row, node)
    known = [i for i, row in enumerate(points.row) if row in node_of_backward]
    with_forward = Points([points.track[i] for i in known], [points.ts[i] for i in known],
                          [points.row[i] for i in known])
    launched = Points([q[0] for q in win.launch_q], [q[1] for q in win.launch_q], list(range(len(win.launch_q))))
    under = gpu_under_backward(trace, with_forward, launched)
    causes = list(launch_lines)
    for row, launches in under.items():
        for i in launches:
            causes[i] = node_of_backward[row]
    return causes, forward_nodes


def backward_op_causes(trace: Trace, win: "EvidenceWindow", op_spans: dict[int, tuple[list, list, list[int]]],
                       parent: Any) -> dict[int, Any]:
    """The forward line's node of every operator that runs inside a backward op whose forward point is
    known (the backward op itself included), by row. `op_spans`: per thread, its operators' rows,
    parents first; `parent`: each row's enclosing operator (-1 at top level)."""
    points, _ = backward_points(trace, win.w0, win.w1)
    if not points.row:
        return {}
    node_of: dict[int, Any] = {}
    for row, node in zip(points.row, win.locator.locate(list(zip(points.track, points.ts)))):
        if node is not None:
            node_of.setdefault(row, node)
    out: dict[int, Any] = {}
    if not node_of:
        return out
    for _, _, rows in op_spans.values():
        for r in rows:
            found = node_of.get(r)
            if found is None and parent[r] >= 0:
                found = out.get(parent[r])
            if found is not None:
                out[r] = found
    return out


def _nesting(starts: list[float], ends: list[float]) -> list[int]:
    """The enclosing node of each node (-1 at top level); nodes sorted by (start, -end), as on one
    thread where they nest."""
    parent: list[int] = []
    stack: list[int] = []
    for k, (start, end) in enumerate(zip(starts, ends)):
        while stack and not (start >= starts[stack[-1]] and end <= ends[stack[-1]]):
            stack.pop()
        parent.append(stack[-1] if stack else -1)
        stack.append(k)
    return parent


def _excluded(trace: Trace, links: Links, win: "EvidenceWindow", backward: list[int], starts: list[float],
              ends: list[float]) -> list[Interval]:
    """The moments that are not the host's own work: batch read, waits, backward ops, and an optimizer
    region's own time — not the lines nested in it (Lightning runs `training_step` inside
    `Optimizer.step#`: a wrapper, whose lines keep their work)."""
    spans = list(win.batch_merged)
    spans.extend((trace.ts[r], trace.end(r)) for r in win.sync_rows)
    spans.extend((trace.ts[r], trace.end(r)) for r in backward)
    optimizer = frozenset(i for i, name in enumerate(trace.names) if region_role(name) == "optimizer")
    rows = [r for r in trace.rows_named(optimizer) if trace.track[r] == links.main_track
            and trace.kind[r] in (Kind.ANNOTATION, Kind.CPU_OP)] if optimizer else []
    for r in rows:
        lo, hi = trace.ts[r], trace.end(r)
        first = bisect.bisect_left(starts, lo)
        last = bisect.bisect_right(starts, hi)
        spans.extend(subtract([(lo, hi)], [(starts[k], ends[k]) for k in range(first, last) if ends[k] <= hi]))
    return merge(clip(spans, win.w0, win.w1))


def host_work(trace: Trace, links: Links, win: "EvidenceWindow", launch_lines: list,
              forward_nodes: list) -> dict | None:
    """The host's own work on the step's thread (see the module's docstring); None where the step's
    thread holds no line."""
    main = links.main_track
    track = win.locator.tracks.get(main) if main is not None else None
    if not track or not track[2]:
        return None
    starts, ends, nodes = track
    n, w0, w1 = win.n, win.w0, win.w1
    gpu_observed = bool(links.gpu_rows)
    backward = backward_rows(trace, w0, w1)
    excluded = _excluded(trace, links, win, backward, starts, ends)
    not_own = Coverage(excluded)
    not_own_or_busy = Coverage(excluded + list(win.gpu_busy)) if gpu_observed else not_own
    parent = _nesting(starts, ends)
    children: list[list[int]] = [[] for _ in nodes]
    for k, p in enumerate(parent):
        if p >= 0:
            children[p].append(k)
    # each node's span in the window, and how much of it is not the host's own work (with GPU events:
    # not own work, or the GPU busy); a node's own moments are its span less its children's spans
    los = [min(max(start, w0), w1) for start in starts]
    his = [max(lo, min(end, w1)) for lo, end in zip(los, ends)]
    spans = [hi - lo for lo, hi in zip(los, his)]
    host_us: Counter = Counter()  # line key -> its own host time (waits, reads, backward left out)
    idle_us = [0.0] * len(nodes)  # node -> its own host time while the GPU is idle (all of it without GPU)
    for cover, own in ((not_own, None), (not_own_or_busy, idle_us)):
        left = [span - c for span, c in zip(spans, _covered(cover, los, his))]  # per node, its span's work
        kept = list(left)
        for k, p in enumerate(parent):
            if p >= 0:
                kept[p] -= left[k]
        if own is None:
            for node, us in zip(nodes, kept):
                host_us[node.key] += max(0.0, us)
        else:
            own[:] = [max(0.0, us) for us in kept]
    launches: Counter = Counter(node.key for node in launch_lines if node is not None)
    # the model's training work: lines that record autograd nodes, and those that run the backward
    # (`loss.backward()`: its moments between backward ops are the autograd engine's)
    ran_backward = win.locator.locate([(trace.track[r], trace.ts[r]) for r in backward])
    records = Counter(node.key for node in [*forward_nodes, *ran_backward] if node is not None)

    def work(key: tuple) -> str:
        if records[key]:
            return "training"
        if launches[key] and host_us[key] / launches[key] < LAUNCH_WORK_US:
            return "launch"
        return "host"

    kind = {key: work(key) for key in host_us}
    own_work = [idle_us[k] if kind[nodes[k].key] == "host" else 0.0 for k in range(len(nodes))]
    held = list(own_work)  # node -> host work inside it, nested lines included
    for k in range(len(nodes) - 1, -1, -1):  # children come after their parent
        if parent[k] >= 0:
            held[parent[k]] += held[k]
    total = sum(own_work)
    by_kind: Counter = Counter()
    for k, node in enumerate(nodes):
        by_kind[kind[node.key]] += idle_us[k]
    own_by_key: Counter = Counter()
    for k, node in enumerate(nodes):
        own_by_key[node.key] += own_work[k]
    top = [key for key, us in own_by_key.most_common(MAX_LINES) if us > 0]
    within, anchor = _descend(nodes, parent, children, held, own_work, total)
    gpu_idle = max(0.0, (w1 - w0) - sum(e - s for s, e in win.gpu_busy)) if gpu_observed else None
    return {
        "ms": _ms(total, n),
        "gpu_idle_ms": _ms(gpu_idle, n) if gpu_idle is not None else None,
        "launch_ms": _ms(by_kind["launch"], n),
        "training_ms": _ms(by_kind["training"], n),
        "records_autograd": bool(records) or bool(backward),
        "lines": [{**_where(key), "ms": _ms(own_by_key[key], n), "launches": round(launches[key] / n, 2)}
                  for key in top],
        "within": [{**_where(key), "ms": _ms(us, n)} for key, us in within],
        **_where(anchor[0] if anchor else None),
        "anchor_ms": _ms(anchor[1], n) if anchor else 0.0,
    }


def _covered(cover: Coverage, los: list[float], his: list[float]) -> list[float]:
    """How much of each span [lo, hi] `cover` covers."""
    return [max(0.0, b - a) for a, b in zip(cover.upto_many(los), cover.upto_many(his))]


def _where(key: tuple | None) -> dict:
    if key is None:
        return {"file": None, "line": None, "precision": None}
    precision, path, line = key
    return {"file": path, "line": line, "precision": precision}


def _descend(nodes: list, parent: list[int], children: list[list[int]], held: list[float], own: list[float],
             total: float) -> tuple[list[tuple[tuple, float]], tuple[tuple, float] | None]:
    """(the lines of the descent with the host work each holds, the line named and its host work);
    see the module's docstring. Work is summed by line over the occurrences at one level."""
    if total <= 0:
        return [], None

    def by_key(level: list[int]) -> dict[tuple, float]:
        out: dict[tuple, float] = defaultdict(float)
        for k in level:
            out[nodes[k].key] += held[k]
        return out

    level = [k for k in range(len(nodes)) if parent[k] < 0]
    within: list[tuple[tuple, float]] = []
    last: list[int] = []
    while level:
        sums = by_key(level)
        key = max(sums, key=lambda x: (sums[x], x[1] or "", -(x[2] or 0)))
        if sums[key] < HOLDS * total:
            if not within:
                return [], (key, sums[key])
            break
        within.append((key, sums[key]))
        last = [k for k in level if nodes[k].key == key]
        if _repeats(nodes, children, last):
            return within, within[-1]  # a loop holds its statements' work as one unit
        level = [c for k in last for c in children[k]]
    if not level or not last:
        return within, within[-1]
    named = within[-1]
    own_share = sum(own[k] for k in last)
    if own_share >= 0.5 * named[1]:
        return within, named  # the line does the work itself
    sums = by_key(level)
    key = max(sums, key=lambda x: (sums[x], x[1] or "", -(x[2] or 0)))
    return within, (key, sums[key])  # a wrapper of spread work: its largest statement


def _repeats(nodes: list, children: list[list[int]], occurrences: list[int]) -> bool:
    """Whether a line's statements repeat inside one of its occurrences (a loop)."""
    for k in occurrences:
        counts = Counter(nodes[c].key for c in children[k])
        if counts and max(counts.values()) >= 2:
            return True
    return False


