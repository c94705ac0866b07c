"""The streaming reader: every layout and era, slices cut only between events, bad input refused."""

from __future__ import annotations

import gzip
import importlib
import os
import threading
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepscope.errors import InvalidTraceJSON, NotATraceError, TraceTooLarge, UsageError
from stepscope.trace import Kind, read_trace
from stepscope.trace import reader

HOSTILE = ['a},{"ph":"X"', "]}", '"},', "ss:f0:1", "naïve ünïcode ✓", "},\n  {", "\\", "[[", "}]"]


def events(n: int, names: list[str] | None = None) -> list[dict]:
    names = names or ["aten::mm"]
    out = []
    for i in range(n):
        out.append({"ph": "X", "cat": "cpu_op", "name": names[i % len(names)], "pid": 7, "tid": 7,
                    "ts": 1000.0 + i, "dur": 0.5,
                    "args": {"External id": i, "nested": [{"a": "},{"}, {"b": [1, 2]}], "s": names[i % len(names)]}})
    return out


def write(path: Path, doc: object, *, gz: bool = False, indent: bool = True) -> Path:
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2 if indent else 0)
    if gz:
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


def columns(trace) -> tuple:
    return (list(trace.kind), [trace.names[i] for i in trace.name], list(trace.ts), list(trace.dur),
            list(trace.external_id))


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("indent", [False, True])
def test_tiny_slices_give_the_same_columns_as_one_slice(tmp_path: Path, monkeypatch, gz: bool, indent: bool) -> None:
    doc = {"schemaVersion": 1, "deviceProperties": [{"name": "X"}, {"name": "Y"}],
           "traceEvents": events(300, HOSTILE), "traceName": "after},{the]events"}
    path = write(tmp_path / ("t.json.gz" if gz else "t.json"), doc, gz=gz, indent=indent)
    whole = read_trace(path)
    monkeypatch.setattr(reader, "READ_SIZE", 97)
    sliced = read_trace(path)
    assert columns(sliced) == columns(whole)
    assert len(whole) == 300
    assert [whole.names[i] for i in whole.name][:len(HOSTILE)] == HOSTILE
    assert whole.metadata["traceName"] == "after},{the]events"
    assert whole.metadata["deviceProperties"] == [{"name": "X"}, {"name": "Y"}]
    assert "traceEvents" not in whole.metadata


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.text(min_size=0, max_size=12), min_size=1, max_size=8),
       size=st.integers(min_value=1, max_value=400), n=st.integers(min_value=1, max_value=40))
def test_any_names_any_slice_size_read_like_a_plain_json_load(tmp_path: Path, names, size, n) -> None:
    path = write(tmp_path / "h.json", {"traceEvents": events(n, names), "z": names})
    original = reader.READ_SIZE
    reader.READ_SIZE = size
    try:
        trace = read_trace(path)
    finally:
        reader.READ_SIZE = original
    expected = orjson.loads(path.read_bytes())["traceEvents"]
    assert [trace.names[i] for i in trace.name] == [e["name"] for e in expected]
    assert trace.metadata == {"z": names}


def test_bare_array_of_early_traces(tmp_path: Path, monkeypatch) -> None:
    path = write(tmp_path / "old.json", events(50))
    monkeypatch.setattr(reader, "READ_SIZE", 64)
    trace = read_trace(path)
    assert len(trace) == 50 and trace.metadata == {}


def test_metadata_before_and_after_the_events_is_kept(tmp_path: Path) -> None:
    raw = (b'{"schemaVersion": 1, "distributedInfo": {"rank": 2}, "traceEvents": '
           + orjson.dumps(events(3)) + b', "traceName": "x.json", "deviceProperties": []}')
    (tmp_path / "m.json").write_bytes(raw)
    trace = read_trace(tmp_path / "m.json")
    assert trace.metadata == {"schemaVersion": 1, "distributedInfo": {"rank": 2}, "traceName": "x.json",
                              "deviceProperties": []}


def test_string_and_integer_ids_of_one_thread_are_one_track(tmp_path: Path) -> None:
    evs = [{"ph": "X", "cat": "Operator", "name": "a", "pid": 5, "tid": "25738", "ts": 1, "dur": 1},
           {"ph": "X", "cat": "cpu_op", "name": "b", "pid": "5", "tid": 25738, "ts": 2, "dur": 1},
           {"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": 3, "dur": 1,
            "args": {"correlation": "12", "external id": 4}},
           {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": "stream 7", "ts": 4, "dur": 1,
            "args": {"bytes": 64}}]
    trace = read_trace(write(tmp_path / "ids.json", {"traceEvents": evs}))
    assert trace.track[0] == trace.track[1]
    assert trace.tracks[trace.track[2]] == (0, "stream 7")
    assert list(trace.kind) == [Kind.CPU_OP, Kind.CPU_OP, Kind.KERNEL, Kind.MEMCPY]
    assert trace.correlation[2] == 12 and trace.external_id[2] == 4
    assert trace.nbytes[3] == 64


def test_flows_and_metadata_events(tmp_path: Path) -> None:
    evs = events(2) + [
        {"ph": "s", "id": 9, "pid": 7, "tid": 7, "ts": 1000.2, "cat": "fwdbwd", "name": "fwdbwd"},
        {"ph": "f", "id": 9, "pid": 7, "tid": 8, "ts": 1001.2, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
        {"ph": "s", "id": 3, "pid": 7, "tid": 7, "ts": 1000.2, "cat": "ac2g", "name": "ac2g"},
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 8, "args": {"name": "autograd"}},
        {"ph": "i", "name": "[memory]", "pid": 7, "tid": 7, "ts": 1000},
    ]
    trace = read_trace(write(tmp_path / "f.json", {"traceEvents": evs}))
    assert list(trace.flows.id) == [9, 9] and list(trace.flows.is_end) == [0, 1]
    assert trace.thread_names == {(7, 8): "autograd"}
    assert trace.skipped == {"s": 1, "i": 1}


@pytest.mark.parametrize("content, reason", [
    (b"", "empty file"),
    (b"hello", "not JSON"),
    (b'{"a": 1}', "without traceEvents"),
    (b'[1, 2, 3]', "no events"),
    (b'{"traceEvents": []}', "no events"),
    (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}, {"ph": "X", "na', "truncated"),
    (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}, {oops}]}', "invalid"),
    (b'{"schemaVersion": 1, "traceEv', "truncated"),
])
def test_bad_input_is_refused_with_a_one_line_reason(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(NotATraceError) as e:
        read_trace(path)
    assert reason in str(e.value) and "\n" not in str(e.value)


def test_truncated_and_corrupt_gzip_are_refused(tmp_path: Path) -> None:
    good = write(tmp_path / "g.json.gz", {"traceEvents": events(2000)}, gz=True)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(NotATraceError, match="truncated"):
        read_trace(cut)
    corrupt = tmp_path / "corrupt.json.gz"
    corrupt.write_bytes(b"\x1f\x8b" + b"\x00" * 100)
    with pytest.raises(NotATraceError, match="decompress|truncated"):
        read_trace(corrupt)


def read_within(path: Path, *, seconds: float):
    """`read_trace(path)`, failing (not hanging) if it has not returned in time: a reader that loops
    forever on some input must show up as a failed test."""
    result: list = []
    worker = threading.Thread(target=lambda: result.append(read_trace(path)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert result, f"reading {path.name} did not finish within {seconds} s"
    return result[0]


@pytest.mark.parametrize("inflater", ["zlib_ng.zlib_ng", "zlib"])
def test_gzip_reads_the_same_with_zlib_ng_or_the_standard_library(tmp_path: Path, monkeypatch, inflater: str) -> None:
    assert reader._zlib.__name__ == "zlib_ng.zlib_ng"  # the fast inflater is the one installed and used
    monkeypatch.setattr(reader, "_zlib", importlib.import_module(inflater))
    doc = {"traceEvents": events(3000, HOSTILE), "traceName": "t"}
    plain = write(tmp_path / "t.json", doc)
    data = plain.read_bytes()
    members = tmp_path / "members.json.gz"  # two gzip members in one file, as `cat a.gz b.gz` makes
    members.write_bytes(gzip.compress(data[: len(data) // 3]) + gzip.compress(data[len(data) // 3 :]))
    monkeypatch.setattr(reader, "READ_SIZE", 4096)
    assert columns(read_within(members, seconds=60)) == columns(read_trace(plain))
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(members.read_bytes()[:-200])
    with pytest.raises(NotATraceError, match="truncated"):
        read_trace(cut)
    corrupt = tmp_path / "corrupt.json.gz"
    corrupt.write_bytes(gzip.compress(data)[:40] + b"\xff" * 64)
    with pytest.raises(NotATraceError, match="decompress|truncated"):
        read_trace(corrupt)


def test_missing_file_and_folder_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        read_trace(tmp_path / "nope.json")
    with pytest.raises(UsageError, match="folder"):
        read_trace(tmp_path)


def test_broken_json_is_refused_at_its_first_invalid_byte(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(reader, "READ_SIZE", 4096)
    path = tmp_path / "huge.json"
    path.write_bytes(b'{"traceEvents": [' + b"x" * (4 << 20) + b"]}")
    with pytest.raises(InvalidTraceJSON) as e:
        read_trace(path)
    assert e.value.position == 17 and "'xxxxxxxxxxxxxxxx' is not a JSON value" in str(e.value)


def test_an_event_longer_than_the_bound_is_refused_as_too_large(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(reader, "READ_SIZE", 4096)
    monkeypatch.setattr(reader, "MAX_EVENT_BYTES", 64 * 1024)
    path = tmp_path / "long.json"
    path.write_bytes(b'{"traceEvents": [{"ph": "X", "name": "' + b"x" * (1 << 20) + b'", "ts": 1, "dur": 1}]}')
    with pytest.raises(TraceTooLarge, match="more than 64 KB of text without the end of an event, from byte 17"):
        read_trace(path)


def all_columns(trace) -> tuple:
    return (list(trace.kind), [trace.names[i] for i in trace.name], [trace.tracks[i] for i in trace.track],
            list(trace.ts), list(trace.dur), list(trace.correlation), list(trace.external_id),
            list(trace.sequence), list(trace.nbytes), list(trace.flows.id), list(trace.flows.ts),
            [trace.tracks[i] for i in trace.flows.track], trace.metadata, trace.skipped, trace.thread_names,
            [trace.names[i] if i >= 0 else None for i in trace.stack],
            [trace.names[i] if i >= 0 else None for i in trace.shapes],
            list(trace.memory.ts), [trace.tracks[i] for i in trace.memory.track], list(trace.memory.nbytes),
            list(trace.memory.total_allocated), list(trace.memory.device_type))


@pytest.mark.parametrize("decoders", ["threads", "forked", "started"])
@pytest.mark.parametrize("gz", [False, True])
def test_parallel_decoders_give_the_same_trace_row_for_row(tmp_path: Path, monkeypatch, gz: bool, decoders: str) -> None:
    from stepscope.trace import workers

    if decoders != "threads":  # worker processes: where the compiled scanner is not built
        monkeypatch.setattr(reader, "ColumnScanner", None)
    # forked (the CLI) or started (the editor)
    monkeypatch.setattr(workers.forking, "can_fork", lambda: decoders == "forked")
    evs = events(400, HOSTILE)
    for i in range(0, 400, 7):
        evs.append({"ph": "s", "id": i, "pid": 7, "tid": "8", "ts": 1000.0 + i, "cat": "fwdbwd", "name": "fwdbwd"})
        evs.append({"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": f"stream {i % 3}",
                    "ts": 2000.0 + i, "dur": 1, "args": {"correlation": i}})
        evs.append({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 7, "tid": 7, "ts": 3000.0 + i, "dur": 1,
                    "args": {"Input Dims": [[i % 4, 2], []], "Input type": ["float", "Scalar"],
                             "Call stack": f"train.py({i % 5}): main;lib.py(1): f"}})
        evs.append({"ph": "i", "name": "[memory]", "pid": 7, "tid": 7, "ts": 3000.5 + i,
                    "args": {"Device Type": 1, "Device Id": 0, "Bytes": 512 * i, "Total Allocated": 1024 * i}})
    evs.append({"ph": "M", "name": "thread_name", "pid": 7, "tid": 8, "args": {"name": "autograd"}})
    path = write(tmp_path / ("p.json.gz" if gz else "p.json"), {"schemaVersion": 1, "traceEvents": evs,
                                                                 "deviceProperties": [{"name": "H"}]}, gz=gz)
    monkeypatch.setattr(reader, "READ_SIZE", 2048)  # many slices, several per worker
    single = read_trace(path, workers=1)
    parallel = read_trace(path, workers=3)
    assert all_columns(parallel) == all_columns(single)
    assert len(single) == 400 + 58 + 58
    assert len(single.memory) == 58 and sum(i >= 0 for i in single.stack) == 58


@pytest.mark.parametrize("compiled", [True, False])  # scanning threads, or worker processes
def test_invalid_json_inside_a_slice_decoded_in_parallel_is_refused(tmp_path: Path, monkeypatch, compiled: bool) -> None:
    if not compiled:
        monkeypatch.setattr(reader, "ColumnScanner", None)
    good = orjson.dumps({"traceEvents": events(200)}, option=orjson.OPT_INDENT_2)
    at = good.index(b'"name": "aten::mm"', len(good) // 2)
    bad = good[:at] + b'"name": aten::mm' + good[at + len(b'"name": "aten::mm"'):]  # unquoted, mid-file
    (tmp_path / "bad.json").write_bytes(bad)
    monkeypatch.setattr(reader, "READ_SIZE", 1024)
    for workers in (1, 2):
        with pytest.raises(NotATraceError, match="invalid JSON"):
            read_trace(tmp_path / "bad.json", workers=workers)


def test_odd_field_types_are_coerced_or_skipped_never_a_crash(tmp_path: Path) -> None:
    evs = [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": "12.5", "dur": "3"},
           {"ph": "X", "cat": 7, "name": None, "pid": None, "tid": [1], "ts": 20, "dur": None, "args": []},
           {"ph": "X", "cat": "cpu_op", "name": "no ts", "pid": 1, "tid": 1, "dur": 1},
           {"ph": "X", "cat": "cpu_op", "name": "bad ts", "pid": 1, "tid": 1, "ts": "soon", "dur": 1},
           {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 30, "dur": -5,
            "args": {"correlation": "0x10", "External id": "x"}}]
    trace = read_trace(write(tmp_path / "odd.json", {"traceEvents": evs}))
    assert len(trace) == 3
    assert list(trace.ts) == [12.5, 20.0, 30.0]
    assert list(trace.dur) == [3.0, 0.0, 0.0]
    assert trace.correlation[2] == 16 and trace.external_id[2] == -1
    assert trace.skipped == {"X": 2}


@pytest.mark.parametrize("forked", [True, False])
def test_when_workers_die_the_trace_is_read_in_one_process_instead(tmp_path: Path, monkeypatch, forked: bool) -> None:
    from stepscope.trace import workers

    path = write(tmp_path / "w.json", {"traceEvents": events(300)})
    monkeypatch.setattr(reader, "READ_SIZE", 2048)
    expected = all_columns(read_trace(path, workers=1))
    monkeypatch.setattr(reader, "ColumnScanner", None)  # worker processes serve only the pure-Python path
    monkeypatch.setattr(workers.forking, "can_fork", lambda: forked)
    monkeypatch.setattr(workers.sys, "executable", "/bin/false")  # every started worker exits at once
    monkeypatch.setattr(workers, "_serve", lambda stdin, stdout: os._exit(3))  # and every forked one
    assert all_columns(read_trace(path, workers=2)) == expected


def test_forked_workers_are_reaped_and_see_the_end_of_their_input(monkeypatch) -> None:
    from stepscope.trace import workers

    monkeypatch.setattr(workers.forking, "can_fork", lambda: True)
    pool = workers.WorkerPool(3)
    pids = [w.pid for w in pool.procs]
    assert all(pid is not None for pid in pids) and not any(w.popen for w in pool.procs)
    pool.submit(orjson.dumps(events(5))[1:-1])
    [part] = pool.drain()
    assert [part.names[i] for i in part.name] == ["aten::mm"] * 5
    # the first worker's input closed, the others still open: it ends (no later worker holds a copy
    # of its pipe, which would keep it waiting for input that never comes)
    pool.procs[0].close_input()
    deadline = time.monotonic() + 10
    while os.waitpid(pids[0], os.WNOHANG) == (0, 0):
        assert time.monotonic() < deadline, "the first worker did not see the end of its input"
        time.sleep(0.01)
    pool.procs[0].pid = None  # reaped just above
    pool.close()
    for pid in pids:
        with pytest.raises(ChildProcessError):  # reaped: no zombie is left
            os.waitpid(pid, os.WNOHANG)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_file_that_indents_nested_objects_like_events_still_reads(tmp_path: Path, monkeypatch, workers: int) -> None:
    # one object per line, no indentation: nested objects in args start lines exactly like events
    evs = []
    for i in range(200):
        evs.append(b'{"ph": "X", "cat": "cpu_op", "name": "op%d", "pid": 1, "tid": 1, "ts": %d, "dur": 1, "args": {"list": [\n{"a": 1},\n{"b": 2}]}}' % (i, i))
    (tmp_path / "flat.json").write_bytes(b'{"traceEvents": [\n' + b",\n".join(evs) + b"\n]}")
    monkeypatch.setattr(reader, "READ_SIZE", 512)
    trace = read_trace(tmp_path / "flat.json", workers=workers)
    assert [trace.names[i] for i in trace.name] == [f"op{i}" for i in range(200)]


def test_call_stacks_shapes_and_memory_events_are_kept(tmp_path: Path) -> None:
    evs = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
            "args": {"Input Dims": [[8, 32], [32, 64]], "Input type": ["float", "float"],
                     "Call stack": "train.py(12): <module>"}},
           {"ph": "X", "cat": "user_annotation", "name": "forward", "pid": 1, "tid": 1, "ts": 0, "dur": 50},
           {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 11,
            "args": {"Device Type": 0, "Device Id": -1, "Bytes": 8192}},
           {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 12,
            "args": {"Device Type": 1, "Device Id": 0, "Bytes": -4096, "Total Allocated": 1 << 20}}]
    trace = read_trace(write(tmp_path / "d.json", {"traceEvents": evs}))
    assert trace.names[trace.stack[0]] == "train.py(12): <module>" and trace.stack[1] == -1
    assert orjson.loads(trace.names[trace.shapes[0]]) == [[[8, 32], [32, 64]], ["float", "float"]]
    assert trace.shapes[1] == -1
    mem = trace.memory
    assert list(mem.nbytes) == [8192, -4096] and list(mem.total_allocated) == [-1, 1 << 20]
    assert list(mem.device_type) == [0, 1] and trace.tracks[mem.track[0]] == (1, 1)
    assert "i" not in trace.skipped  # memory events are kept, not skipped


@pytest.mark.parametrize(("cores", "mb", "expected"), [
    (1, 100, 1),  # one core: decoding beside the reading process gains nothing
    (2, 100, 2),  # a scanning thread a core (the compiled scanner runs without the GIL)
    (16, 100, 8),  # at most 8
    (16, 10, 1),  # a few slices: one thread scans them as fast
])
def test_scanning_threads_follow_cores(tmp_path: Path, monkeypatch, cores: int, mb: int, expected: int) -> None:
    trace = tmp_path / "trace.json"
    with open(trace, "wb") as f:
        f.truncate(mb << 20)  # sparse: the size is what counts
    monkeypatch.delenv("STEPSCOPE_TRACE_WORKERS", raising=False)
    monkeypatch.setattr(reader.os, "cpu_count", lambda: cores)
    assert reader.ColumnScanner is not None
    assert reader.default_workers(trace) == expected


@pytest.mark.parametrize(("cores", "mb", "forked", "expected"), [
    (1, 100, True, 1),  # one core: decoding beside the reading process gains nothing
    (2, 100, True, 2),  # two workers beside the parent, which inflates, cuts and merges
    (4, 400, True, 3),  # cores less one
    (16, 100, False, 2),  # within twice the JSON: (200 - 80 - 25) MB leaves room for two 40 MB workers
    (16, 100, True, 5),  # ... or five forked ones, which share the interpreter (16 MB each)
    (16, 1000, True, 8),  # at most 8
    (16, 10, True, 1),  # a small file: starting workers costs more than they save
])
def test_worker_processes_follow_cores_and_the_memory_bound(tmp_path: Path, monkeypatch, cores: int, mb: int,
                                                         forked: bool, expected: int) -> None:
    trace = tmp_path / "trace.json"
    with open(trace, "wb") as f:
        f.truncate(mb << 20)  # sparse: the size is what counts
    monkeypatch.delenv("STEPSCOPE_TRACE_WORKERS", raising=False)
    monkeypatch.setattr(reader, "ColumnScanner", None)  # worker processes: the pure-Python path
    monkeypatch.setattr(reader.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(reader.forking, "can_fork", lambda: forked)
    assert reader.default_workers(trace) == expected
    monkeypatch.setenv("STEPSCOPE_TRACE_WORKERS", "5")
    assert reader.default_workers(trace) == 5


def test_thread_ids_that_only_look_like_numbers_stay_names(tmp_path: Path) -> None:
    evs = [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": tid, "ts": i, "dur": 1}
           for i, tid in enumerate(["²", "--5", " 7", "7", "-3"])]
    trace = read_trace(write(tmp_path / "t.json", {"traceEvents": evs}))
    assert trace.tracks == [(1, "²"), (1, "--5"), (1, 7), (1, -3)]
