"""Any file a user points at: read, or refused with the right reason, with no traceback, no hang and
bounded work. One test per case met in the field (ids beyond int64, deep nesting, pipes and FIFOs,
truncated and trailing text, encodings, NaN, whitespace, times and durations out of range)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import orjson
import pytest

from stepscope import cli
from stepscope.analysis.report import analyze
from stepscope.errors import (RESOURCE, EmptyTrace, InvalidTraceJSON, NotAProfilerTrace, NotJSON, ResourceError,
                              TruncatedTrace)
from stepscope.trace import read_trace, reader

STEPS = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1,
          "ts": 1000.0 + 100 * k, "dur": 90.0} for k in range(3)]


def op(i: int, **fields) -> dict:
    event = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1001.0 + i, "dur": 0.5,
             "args": {"External id": i, "Input Dims": [[1, 2], [3]]}}
    event.update(fields)
    return event


def trace_bytes(events: list[dict], *, indent: bool = True, bare: bool = False) -> bytes:
    doc = events if bare else {"schemaVersion": 1, "traceEvents": events, "traceName": "t"}
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 if indent else 0)


def stepscope(*args: str, stdin=None, timeout: float = 120, shell: bool = False) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "stepscope", *args]
    return subprocess.run(command if not shell else " ".join(args), input=stdin, capture_output=True,
                          timeout=timeout, shell=shell, executable="/bin/bash" if shell else None)


def one_line(proc: subprocess.CompletedProcess, exit_code: int) -> str:
    err = proc.stderr.decode()
    assert proc.returncode == exit_code, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


# -- ids beyond int64 (Kineto writes them as uint64) --------------------------------------------------

@pytest.mark.parametrize("value", [2**63, 2**64 - 1, 2**64 + 5, -(2**63) - 1])
def test_ids_beyond_int64_are_read_as_absent_and_noted(tmp_path: Path, value: int) -> None:
    kernel = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1010.0, "dur": 5.0,
              "args": {"correlation": value, "External id": value}}
    path = tmp_path / "ids.json"
    path.write_bytes(json.dumps({"traceEvents": STEPS + [op(1, args={"Sequence number": value}), kernel]}).encode())
    trace = read_trace(path)
    assert trace.correlation[-1] == -1 and trace.external_id[-1] == -1 and trace.sequence[3] == -1
    assert trace.ids_out_of_range == 3
    report = analyze([path])
    assert report["ms_per_step"] == 0.1
    assert any("3 id(s) or byte count(s) outside the signed 64-bit range" in n for n in report["notes"])


def test_a_flow_or_memory_event_with_an_id_beyond_int64_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "flows.json"
    path.write_bytes(json.dumps({"traceEvents": STEPS + [
        {"ph": "s", "cat": "fwdbwd", "id": 2**64, "pid": 1, "tid": 1, "ts": 1001},
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1002, "args": {"Bytes": 2**63}},
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1003, "args": {"Bytes": 8, "Device Id": 2**70}}]}).encode())
    trace = read_trace(path)
    assert len(trace.flows) == 0 and list(trace.memory.nbytes) == [8] and list(trace.memory.device_id) == [-1]
    assert trace.ids_out_of_range == 3


# -- nesting deeper than the decoder goes ---------------------------------------------------------------

@pytest.mark.parametrize("where", ["args", "top", "metadata"])
def test_deep_nesting_is_refused_at_its_byte(tmp_path: Path, where: str) -> None:
    deep = "[" * 2000 + "]" * 2000
    text = {"args": '{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "args": {"x": %s}}]}' % deep,
            "top": deep,
            "metadata": '{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}], "x": %s}' % deep}[where]
    path = tmp_path / "deep.json"
    path.write_text(text)
    with pytest.raises(InvalidTraceJSON, match="values nested deeper than 512 levels") as e:
        read_trace(path)
    assert text[e.value.position] == "["


# -- pipes, /dev/stdin, process substitution and FIFOs: read once, never seeked or opened twice ----------

@pytest.mark.parametrize("gz", [False, True])
def test_a_trace_piped_to_dev_stdin_or_given_by_process_substitution(tmp_path: Path, gz: bool) -> None:
    data = trace_bytes(STEPS + [op(i) for i in range(50)])
    data = gzip.compress(data) if gz else data
    path = tmp_path / "t.json"
    path.write_bytes(data)
    piped = stepscope("analyze", "/dev/stdin", "--json", stdin=data)
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["ms_per_step"] == 0.1
    substituted = stepscope(sys.executable, "-m", "stepscope", "analyze", f"<(cat '{path}')", shell=True)
    assert substituted.returncode == 0, substituted.stderr
    assert substituted.stdout.startswith(b"0.100 ms/step")
    assert b"pipe:[" not in substituted.stdout  # the name given, not the pipe's


def test_a_named_fifo_with_a_writer_is_read_whole(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    data = trace_bytes(STEPS + [op(i) for i in range(2000)])

    def write() -> None:
        with open(fifo, "wb") as f:
            f.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    proc = stepscope("analyze", str(fifo), "--json", timeout=60)
    writer.join(10)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ms_per_step"] == 0.1 and report["window"]["trace_bytes"] == len(data)


def test_a_broken_layout_cut_read_from_a_pipe_is_cut_again_in_place(tmp_path: Path, monkeypatch) -> None:
    # nested objects indented like events: layout cuts fail and the pipe cannot be read again
    lines = [b'{"ph": "X", "cat": "cpu_op", "name": "op%d", "pid": 1, "tid": 1, "ts": %d, "dur": 1, '
             b'"args": {"list": [\n{"a": 1},\n{"b": 2}]}}' % (i, i) for i in range(300)]
    data = b'{"traceEvents": [\n' + b",\n".join(lines) + b"\n]}"
    read, write = os.pipe()
    threading.Thread(target=lambda: (os.write(write, data), os.close(write)), daemon=True).start()
    monkeypatch.setattr(reader, "READ_SIZE", 700)
    trace = read_trace(f"/dev/fd/{read}")
    os.close(read)
    assert [trace.names[i] for i in trace.name] == [f"op{i}" for i in range(300)]


# -- truncated files and trailing text: refused with the right reason after bounded work ----------------

def counting(monkeypatch) -> dict:
    """Count the decodes and walks of the reader, and the bytes they cover."""
    work = {"decodes": 0, "decoded": 0, "walks": 0, "walked": 0}
    decode, walk = reader.decode_events, reader.walk

    def counted_decode(body):
        work["decodes"] += 1
        work["decoded"] += len(body)
        return decode(body)

    def counted_walk(text, *args, **kw):
        work["walks"] += 1
        work["walked"] += len(text)
        return walk(text, *args, **kw)

    monkeypatch.setattr(reader, "decode_events", counted_decode)
    monkeypatch.setattr(reader, "walk", counted_walk)
    return work


@pytest.mark.parametrize("indent", [False, True])
@pytest.mark.parametrize("cut", [0.5, 0.95, 0.999])
def test_a_truncated_trace_under_one_read_is_refused_after_linear_work(tmp_path: Path, monkeypatch, indent: bool,
                                                                       cut: float) -> None:
    data = trace_bytes(STEPS + [op(i) for i in range(6000)], indent=indent)  # thousands of ']' to try
    assert len(data) < reader.READ_SIZE
    path = tmp_path / "cut.json"
    path.write_bytes(data[: int(len(data) * cut)])
    work = counting(monkeypatch)
    with pytest.raises(TruncatedTrace) as e:
        read_trace(path)
    assert e.value.position == path.stat().st_size
    assert "truncated: the file ends at byte" in str(e.value)
    # the old reader decoded the whole text once per ']' (thousands of times): now a bounded few times
    assert work["decodes"] <= reader.MAX_TAIL_TRIES + 1
    assert work["decoded"] + work["walked"] <= (reader.MAX_TAIL_TRIES + 3) * len(data)


@pytest.mark.parametrize("indent", [False, True])
def test_a_valid_trace_followed_by_a_log_line_names_the_trailing_text(tmp_path: Path, monkeypatch, indent: bool) -> None:
    data = trace_bytes(STEPS + [op(i) for i in range(6000)], indent=indent)
    path = tmp_path / "log.json"
    path.write_bytes(data + b"\n[I profiler.cpp:123] saved\n")
    work = counting(monkeypatch)
    with pytest.raises(InvalidTraceJSON) as e:
        read_trace(path)
    assert e.value.position == len(data) + 1
    assert "after traceEvents" in str(e.value) and "text after the end of the JSON document ('[I profiler" in str(e.value)
    assert work["decodes"] <= reader.MAX_TAIL_TRIES + 1


def test_invalid_json_mid_file_is_refused_at_once_with_its_position(tmp_path: Path, monkeypatch) -> None:
    data = trace_bytes(STEPS + [op(i) for i in range(20000)], indent=False)
    at = data.index(b'"dur":0.5', len(data) // 3)
    broken = data[:at] + b'"dur":NaN' + data[at + 9:]
    path = tmp_path / "nan.json"
    path.write_bytes(broken)
    monkeypatch.setattr(reader, "READ_SIZE", 64 << 10)
    work = counting(monkeypatch)
    with pytest.raises(InvalidTraceJSON, match="NaN is not a JSON number") as e:
        read_trace(path)
    assert e.value.position == at + len(b'"dur":')
    assert work["walked"] < len(data) // 2  # refused where it goes wrong, not after reading on


# -- the right reason for each kind of bad text -------------------------------------------------------------

@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("indent", [False, True])
def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path, gz: bool, indent: bool) -> None:
    for bare in (False, True):
        data = b"\xef\xbb\xbf" + trace_bytes(STEPS + [op(i) for i in range(20)], indent=indent, bare=bare)
        path = tmp_path / ("bom.json.gz" if gz else "bom.json")
        path.write_bytes(gzip.compress(data) if gz else data)
        assert len(read_trace(path)) == 23


@pytest.mark.parametrize("damage, reason", [
    (lambda d: d.replace(b'"ts": 1001.0', b'"ts": NaN', 1), "NaN is not a JSON number"),
    (lambda d: d.replace(b'"ts": 1001.0', b'"ts": Infinity', 1), "Infinity is not a JSON number"),
    (lambda d: d.replace(b'"ts": 1001.0', b'"ts": 1e400', 1), "a number out of range (1e400)"),
    (lambda d: d.replace(b'"name": "aten::mm"', b'"name": "a\\ud800b"', 1), "a lone surrogate \\ud800"),
    (lambda d: d.replace(b'"name": "aten::mm"', b'"name": "a\xffb"', 1), "invalid UTF-8 (byte 0xff)"),
    (lambda d: d.replace(b'"name": "aten::mm"', b'"name": "a\x07b"', 1), "a control character (0x07) inside a string"),
])
@pytest.mark.parametrize("gz", [False, True])
def test_each_kind_of_invalid_text_is_named(tmp_path: Path, damage, reason: str, gz: bool) -> None:
    data = damage(trace_bytes(STEPS + [op(i) for i in range(100)]))
    path = tmp_path / ("bad.json.gz" if gz else "bad.json")
    path.write_bytes(gzip.compress(data) if gz else data)
    with pytest.raises(InvalidTraceJSON) as e:
        read_trace(path)
    assert reason in str(e.value) and "\n" not in str(e.value)
    assert e.value.where == "in traceEvents"
    assert ("of its uncompressed text" in str(e.value)) is gz
    assert data[e.value.position:e.value.position + 1] in (b"N", b"I", b"1", b"\\", b"\xff", b"\x07")


def test_utf16_text_and_binary_files_are_not_json(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(trace_bytes(STEPS).decode().encode("utf-16"))
    with pytest.raises(NotJSON, match="UTF-16"):
        read_trace(path)
    path.write_bytes(b"PK\x03\x04\x1b[31m")
    with pytest.raises(NotJSON, match=r"this file with 'PK\\x03\\x04\\x1b\[31'"):
        read_trace(path)


@pytest.mark.parametrize("where", ["before", "between", "after", "header"])
def test_megabytes_of_whitespace_are_only_whitespace(tmp_path: Path, where: str) -> None:
    events = [orjson.dumps(e) for e in STEPS + [op(i) for i in range(30)]]
    space = b" \n\t" * (1 << 20)
    body = b",".join(events[:10]) + (b"," + space if where == "between" else b",") + b",".join(events[10:])
    text = (b'{"schemaVersion": 1,' + (space if where == "header" else b"") + b'"traceEvents": [' + body + b"]}")
    text = (space if where == "before" else b"") + text + (space if where == "after" else b"")
    path = tmp_path / "ws.json"
    path.write_bytes(text)
    trace = read_trace(path)
    assert len(trace) == 33 and trace.metadata == {"schemaVersion": 1}


def test_an_empty_and_a_whitespace_only_file(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    path.write_bytes(b"")
    with pytest.raises(EmptyTrace, match="empty file"):
        read_trace(path)
    path.write_bytes(b" \n" * 100)
    with pytest.raises(EmptyTrace, match="only whitespace"):
        read_trace(path)


# -- what the reader leaves out is said, not silent --------------------------------------------------------

@pytest.mark.parametrize("bad_ts", ["abc", None])
def test_a_step_without_a_usable_time_is_left_out_with_a_note(tmp_path: Path, bad_ts) -> None:
    steps = [dict(s, ts=bad_ts) if i == 1 else s for i, s in enumerate(STEPS)]
    path = tmp_path / "t.json"
    path.write_bytes(json.dumps({"traceEvents": steps + [op(i) for i in range(5)]}).encode())
    report = analyze([path])
    assert [s["name"] for s in report["steps"]] == ["ProfilerStep#0", "ProfilerStep#2"]
    assert any(n.startswith("1 complete event(s) left out: their ts is missing, null or not a number")
               for n in report["notes"])


def test_negative_durations_are_read_as_zero_with_a_note(tmp_path: Path) -> None:
    steps = [dict(s, dur=-5.0) if i == 1 else s for i, s in enumerate(STEPS)]
    path = tmp_path / "t.json"
    path.write_bytes(json.dumps({"traceEvents": steps + [op(i, dur=-1) for i in range(5)]}).encode())
    report = analyze([path])
    assert any(n == "6 complete event(s) with a negative dur, read as 0 µs" for n in report["notes"])


def test_times_no_profiler_writes_are_left_out_with_a_note(tmp_path: Path) -> None:
    steps = STEPS + [dict(STEPS[0], name="ProfilerStep#9", ts=1e296), dict(STEPS[0], name="ProfilerStep#8", dur=1e300)]
    path = tmp_path / "t.json"
    path.write_bytes(json.dumps({"traceEvents": steps + [op(i) for i in range(5)]}).encode())
    report = analyze([path])
    assert report["ms_per_step"] == 0.1 and len(report["steps"]) == 3
    assert any(n.startswith("2 complete event(s) left out: their ts or dur lies beyond") for n in report["notes"])


# -- errors are classes: the most telling reason of a folder, resource failures ---------------------------

def test_a_folder_reports_the_broken_trace_rather_than_the_other_json(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a_config.json").write_text('{"lr": 0.1}')
    (folder / "b_trace.json").write_bytes(trace_bytes(STEPS + [op(i) for i in range(20)])[:400])
    with pytest.raises(TruncatedTrace, match="b_trace.json: truncated"):
        analyze([folder])
    (folder / "b_trace.json").unlink()
    with pytest.raises(NotAProfilerTrace, match="a_config.json"):
        analyze([folder])


def test_a_read_that_fails_on_this_machine_is_a_resource_error_exit_7(tmp_path: Path, monkeypatch, capsys) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(trace_bytes(STEPS))

    def failing_read(self, size):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(reader._Rewound, "read", failing_read)
    with pytest.raises(ResourceError, match="cannot read"):
        read_trace(path)
    assert cli.main(["analyze", str(path)]) == RESOURCE
    err = capsys.readouterr().err
    assert err == f"stepscope: {path}: cannot read (Input/output error)\n"


def test_workers_that_cannot_start_leave_the_slices_to_this_process(tmp_path: Path, monkeypatch) -> None:
    from stepscope.trace import workers

    def no_pool(n):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(reader, "ColumnScanner", None)
    monkeypatch.setattr(workers, "WorkerPool", no_pool)
    monkeypatch.setattr(reader, "READ_SIZE", 2048)
    path = tmp_path / "t.json"
    path.write_bytes(trace_bytes(STEPS + [op(i) for i in range(300)]))
    assert len(read_trace(path, workers=3)) == 303


def test_error_lines_escape_what_they_quote(tmp_path: Path, capsys) -> None:
    path = tmp_path / "evil\x1b]0;title\x07.json"
    path.write_bytes(b'{"traceEvents": [], "x": 1} \x1b[2J')
    assert cli.main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\x07" not in err
    assert "evil\\x1b]0;title\\x07.json" in err and "('\\x1b[2J')" in err
