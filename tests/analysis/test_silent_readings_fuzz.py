"""Fuzzing what a trace says of itself and where it puts its events: any JSON value as the device
list, a rank or a world size, duplicate ranks across a folder, kernels on the step thread's own
pid/tid. The analysis never fails on them, never reads a value it cannot stand behind (a rank is a
whole number or unknown), and says in a note whatever it read differently from what was written.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from stepscope.analysis.machine import MAX_RANK
from stepscope.analysis.report import analyze

ANY_JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False, allow_infinity=False)
                        | st.text(max_size=8),
                        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                        max_leaves=6)


def _trace(path: Path, *, kernel_on_step_thread: bool, **metadata) -> Path:
    events = []
    for i in (1, 2, 3):
        t = 1000.0 * i
        events += [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1, "ts": t, "dur": 900},
                   {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 10,
                    "dur": 5, "args": {"correlation": i}},
                   {"ph": "X", "cat": "kernel", "name": "k", "pid": 1 if kernel_on_step_thread else 0,
                    "tid": 1 if kernel_on_step_thread else 7, "ts": t + 20, "dur": 100, "args": {"correlation": i}}]
    path.write_text(json.dumps({**metadata, "traceEvents": events}))
    return path


@given(devices=ANY_JSON, rank=ANY_JSON, world=ANY_JSON, shared=st.booleans())
@settings(max_examples=60, deadline=None)
def test_any_machine_metadata_is_read_or_said(devices, rank, world, shared) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        report = analyze([_trace(Path(tmp) / "t.json", kernel_on_step_thread=shared, deviceProperties=devices,
                                 distributedInfo={"rank": rank, "world_size": world})])
    machine = report["machine"]
    assert [s["name"] for s in report["steps"]] == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"]
    assert report["gpu"]["observed"]
    for key, least, given_value in (("rank", 0, rank), ("world_size", 1, world)):
        value = machine[key]
        assert value is None or (type(value) is int and least <= value <= MAX_RANK)
        if value is None and given_value is not None:
            assert any(n.startswith(f"distributedInfo.{key} is ") for n in report["notes"]), given_value
    assert all(isinstance(d, str) and d for d in machine["devices"])
    if not isinstance(devices, (list, type(None))) and devices not in (0, False, "", 0.0):
        assert any(n.startswith("deviceProperties is ") for n in report["notes"])
    assert shared == any(n.startswith("device events were recorded on the CPU thread") for n in report["notes"])


@given(ranks=st.lists(st.integers(0, 3) | st.none(), min_size=2, max_size=4))
@settings(max_examples=20, deadline=None)
def test_a_folder_whose_ranks_repeat_is_said_and_never_compared(ranks) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for i, rank in enumerate(ranks):
            _trace(folder / f"t{i}.json", kernel_on_step_thread=False,
                   distributedInfo={} if rank is None else {"rank": rank, "world_size": 4})
        report = analyze([folder])
    said = [n for n in report["notes"] if n.startswith("the traces' ranks are not distinct")]
    distinct = len({r["rank"] for r in report["ranks"]}) == len(report["ranks"])
    assert len(report["ranks"]) == len(ranks)
    assert bool(said) == (not distinct)
    if not distinct:
        assert report["rank_wait"] is None and report["clocks"]["method"] == "not aligned"
