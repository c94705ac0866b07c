"""Fuzzing: generated traces and byte-level mutations of real ones, through the whole analysis.

Every case is analysed in a worker process (fuzz_worker.py) as `stepscope analyze` does it, and must
end in a report or a one-line usage error (exit 2): never another exception (a traceback), never
past `CASE_SECONDS` (the worker is then killed and the case reported), never above `MEMORY_MB` of
peak memory (the worker's own peak, checked after every case; its address space is also capped
at `ADDRESS_SPACE_MB`, so a runaway allocation fails the case rather than the machine). A report's
text must print as lines of printable characters only (terminal safety).

Inputs stay under a few megabytes, so a case takes milliseconds and the whole suite well under a
minute on two cores; the bounds for large inputs (a gzip that inflates to gigabytes, millions of
names) are tested below with the reader's limits lowered, in processes of their own.
"""

from __future__ import annotations

import gzip
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import corpus

HERE = Path(__file__).resolve().parent
DATA = corpus.DATA
SOURCES = [DATA / "h200_async" / "trace.json.gz", DATA / "scenarios" / "startup_cost" / "trace.json.gz",
           DATA / "scenarios" / "gpu_missing_label" / "trace.json.gz"]

CASE_SECONDS = 30  # far above any case (milliseconds): a case that takes this long hangs
MEMORY_MB = 400  # peak memory of the analysing process over all cases (an idle one takes about 60 MB)
ADDRESS_SPACE_MB = 4096


class Worker:
    """The analysing process; restarted after a case that had to be stopped."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def start(self) -> subprocess.Popen:
        self.proc = subprocess.Popen([sys.executable, str(HERE / "fuzz_worker.py"), str(ADDRESS_SPACE_MB)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        return self.proc

    def analyse(self, path: Path) -> dict:
        proc = self.proc if self.proc is not None and self.proc.poll() is None else self.start()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(f"{path}\n")
        proc.stdin.flush()
        started = time.monotonic()
        ready, _, _ = select.select([proc.stdout], [], [], CASE_SECONDS)
        if not ready:
            self.stop()
            pytest.fail(f"analysing {path.name} did not end within {CASE_SECONDS} s (killed)")
        line = proc.stdout.readline()
        if not line:
            code = proc.wait()
            self.proc = None
            pytest.fail(f"the analysing process died on {path.name} (exit {code}) after "
                        f"{time.monotonic() - started:.1f} s")
        return json.loads(line)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.stop()


def check(answer: dict, what: str) -> None:
    """The outcome of one case: a report that prints safely, or a one-line usage error."""
    assert "crash" not in answer, f"{what}: {answer['crash']}"
    assert answer["max_rss_kb"] < MEMORY_MB << 10, f"{what}: peak memory {answer['max_rss_kb'] >> 10} MB"
    if answer.get("ok"):
        bad = [line for line in answer["text"].split("\n") if not line.isprintable()]
        assert not bad, f"{what}: unprintable report lines {bad[:3]}"
        assert answer["violations"] == [], f"{what}: the report breaks its invariants: {answer['violations'][:5]}"
    else:
        assert answer["exit_code"] == 2, f"{what}: {answer}"
        assert "\n" not in answer["message"], f"{what}: {answer['message']!r}"


def source_text(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes())


# -- truncation at every size class of real traces, plain and compressed -----------------------------------

def size_classes(n: int) -> list[int]:
    sizes = {0, 1, 2, 3, n - 1, n - 2, n - 3}
    k = 4
    while k < n:
        sizes.update((k - 1, k, k + 1))
        k *= 2
    return sorted(s for s in sizes if 0 <= s < n)


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.parent.name)
@pytest.mark.parametrize("compressed", [False, True])
def test_truncation_at_every_size_class(tmp_path: Path, worker: Worker, source: Path, compressed: bool) -> None:
    data = source.read_bytes() if compressed else source_text(source)
    path = tmp_path / ("cut.json.gz" if compressed else "cut.json")
    outcomes = set()
    for size in size_classes(len(data)):
        path.write_bytes(data[:size])
        answer = worker.analyse(path)
        check(answer, f"{source.parent.name} cut to {size} bytes")
        if not (compressed and size < 2):  # a byte of gzip's magic number is not yet gzip: "not JSON"
            outcomes.add(answer.get("error", "ok"))
    assert "ok" not in outcomes  # no cut of a trace passes for the whole trace
    assert outcomes <= {"EmptyTrace", "TruncatedTrace", "InvalidTraceJSON", "NotATraceError"}


# -- byte-level mutations of real traces ------------------------------------------------------------------

HOSTILE = [b"NaN", b"-Infinity", b"1e400", b"1" + b"0" * 5000, b"18446744073709551616", b"-9223372036854775809",
           b'"\\ud800"', b"\\ud800", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\x01", b"\x1b]0;x\x07", b"\r\n",
           b"\xef\xbb\xbf", b"[" * 600, b"[" * 2000 + b"]" * 2000, b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\",
           b"},{", b"]}", b" " * 5000, b"1e296", b"-1e300", b"null", b"true", b'"abc"', b"\xe2\x80\xae"]


@st.composite
def mutated(draw) -> tuple[str, bytes]:
    source = draw(st.sampled_from(SOURCES))
    data = bytearray(source_text(source))
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["insert", "replace", "delete", "flip", "duplicate", "truncate"]))
        at = draw(st.integers(0, len(data)))
        if kind == "insert":
            data[at:at] = draw(st.sampled_from(HOSTILE))
        elif kind == "replace":
            data[at:at + draw(st.integers(1, 16))] = draw(st.sampled_from(HOSTILE))
        elif kind == "delete":
            del data[at:at + draw(st.integers(1, 4096))]
        elif kind == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "duplicate":
            data[at:at] = data[at:at + draw(st.integers(1, 4096))]
        elif kind == "truncate":
            del data[at:]
        steps.append(f"{kind}@{at}")
    return f"{source.parent.name}: {', '.join(steps)}", bytes(data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=mutated(), compressed=st.booleans())
def test_mutations_of_real_traces(tmp_path: Path, worker: Worker, case: tuple[str, bytes], compressed: bool) -> None:
    what, data = case
    path = tmp_path / ("m.json.gz" if compressed else "m.json")
    path.write_bytes(gzip.compress(data, compresslevel=1) if compressed else data)
    check(worker.analyse(path), what)


# -- generated traces: odd fields, extreme numbers, hostile names, every layout and encoding --------------

NUMBERS = st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from([0, -0.0, 1e-300, 1e296, -1e300, 2**53, 2**53 + 1, 2**63, 2**64 - 1, -(2**63) - 1,
                                     1.5e15, 1700000000000000.25]))
NAMES = st.one_of(st.text(max_size=20), st.sampled_from(
    ["ProfilerStep#1", "ProfilerStep#2", "aten::mm", "cudaLaunchKernel", "[memory]", "train.py(12): step",
     "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "\x1b[2J", "a\rb", "x\ny", "\u202eevil",
     "\x85", "\ud83d\ude00", "x" * 5000, "ss:f0:3", "Optimizer.step#SGD.step", "},{", "]}"]))
ODD = st.one_of(st.none(), st.booleans(), NUMBERS, NAMES, st.lists(st.integers(), max_size=3),
                st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def maybe(values):
    return st.one_of(values, values, values, ODD)


EVENT = st.fixed_dictionaries(
    {"ph": maybe(st.sampled_from(["X", "X", "X", "X", "i", "s", "f", "M", "C"])),
     "name": maybe(NAMES), "ts": maybe(NUMBERS)},
    optional={"cat": maybe(st.sampled_from(["cpu_op", "user_annotation", "kernel", "cuda_runtime", "gpu_memcpy",
                                            "python_function", "gpu_user_annotation", "fwdbwd", "Kernel"])),
              "pid": maybe(st.sampled_from([0, 1, "1", "Spans", -1, 2**64])),
              "tid": maybe(st.sampled_from([0, 1, 7, "stream 7", "1"])),
              "dur": maybe(NUMBERS), "id": maybe(NUMBERS),
              "args": maybe(st.fixed_dictionaries({}, optional={
                  "correlation": maybe(NUMBERS), "External id": maybe(NUMBERS), "Sequence number": maybe(NUMBERS),
                  "bytes": maybe(NUMBERS), "name": maybe(NAMES), "Bytes": maybe(NUMBERS), "Call stack": maybe(NAMES),
                  "Input Dims": maybe(st.lists(st.lists(st.integers(0, 9), max_size=3), max_size=3)),
                  "Input type": maybe(st.lists(st.sampled_from(["float", "Scalar"]), max_size=3))}))})
DAMAGE = st.sampled_from([b"NaN", b"Infinity", b"1e400", b"\\udc00", b"\xff", b"\x01", b"[" * 1000, b"}",
                          b"\nINFO: done\n", b" " * 3000])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(events=st.lists(EVENT, max_size=40), bare=st.booleans(), indent=st.sampled_from([None, 1, 2]),
       ascii_only=st.booleans(), bom=st.booleans(), compressed=st.booleans(),
       damage=st.one_of(st.none(), st.tuples(st.floats(0, 1), DAMAGE), st.tuples(st.floats(0, 1), st.just(b""))))
def test_generated_traces(tmp_path: Path, worker: Worker, events, bare, indent, ascii_only, bom, compressed,
                          damage) -> None:
    doc = events if bare else {"schemaVersion": 1, "deviceProperties": [{"name": "GPU\x1b[0m"}], "traceEvents": events,
                               "traceName": "t\u202e"}
    data = json.dumps(doc, indent=indent, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    if damage is not None:  # (where, what): insert text there; nothing to insert: truncate there
        at = int(damage[0] * len(data))
        data = data[:at] + damage[1] + data[at:] if damage[1] else data[:at]
    data = (b"\xef\xbb\xbf" if bom else b"") + data
    path = tmp_path / ("g.json.gz" if compressed else "g.json")
    path.write_bytes(gzip.compress(data, compresslevel=1) if compressed else data)
    check(worker.analyse(path), f"{len(events)} events, damage {damage!r:.60}")


# -- large inputs: bounded memory whatever the file inflates to --------------------------------------------

MEASURE = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from fuzz_worker import peak_rss_kb
from stepscope.analysis.report import analyze
from stepscope.errors import StepscopeError
try:
    report = analyze([Path(sys.argv[1])])
    outcome = f"ok {report['window']['events']}"
except StepscopeError as e:
    outcome = f"{type(e).__name__}: {e}"
print(peak_rss_kb() >> 10, outcome)
"""


def measured(path: Path, **env: str) -> tuple[int, str]:
    """(peak memory in MB, outcome) of analysing `path` in a fresh process (one process: no forked child)."""
    proc = subprocess.run([sys.executable, "-c", MEASURE, str(path), str(HERE)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "STEPSCOPE_ANALYSIS_FORK": "0", **env})
    assert proc.returncode == 0, proc.stderr
    peak, outcome = proc.stdout.split(" ", 1)
    return int(peak), outcome.strip()


def gzip_members(path: Path, parts: list[tuple[bytes, int]]) -> Path:
    """A gzip file of `parts` (text, times repeated), each repeat its own member: small on disk and
    quick to make, whatever it inflates to (the reader reads member after member)."""
    with open(path, "wb") as f:
        for text, times in parts:
            member = gzip.compress(text, compresslevel=1)
            for _ in range(times):
                f.write(member)
    return path


def event(i: int, name: str = "aten::mm") -> bytes:
    return json.dumps({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": float(i),
                       "dur": 0.5}).encode()


STEP = json.dumps({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0.0,
                   "dur": 1e6}).encode()


def test_a_gzip_that_inflates_to_half_a_gigabyte_of_whitespace_reads_in_little_memory(tmp_path: Path) -> None:
    path = gzip_members(tmp_path / "ws.json.gz", [(b'{"traceEvents": [' + STEP + b",", 1), (b" " * (1 << 20), 512),
                                                  (event(1) + b"]}", 1)])
    peak, outcome = measured(path)
    assert outcome == "ok 2" and peak < 150


def test_an_event_that_inflates_to_a_gigabyte_is_refused_within_twice_the_bound(tmp_path: Path) -> None:
    path = gzip_members(tmp_path / "long.json.gz", [(b'{"traceEvents": [' + STEP + b', {"ph": "X", "name": "', 1),
                                                    (b"x" * (1 << 20), 1024), (b'", "ts": 1, "dur": 1}]}', 1)])
    peak, outcome = measured(path)
    assert outcome.startswith("TraceTooLarge:") and "more than 64 MB of text without the end of an event" in outcome
    assert peak < 60 + 3 * 64


def test_events_beyond_the_limit_are_refused_as_they_are_read(tmp_path: Path) -> None:
    chunk = b",".join(event(i) for i in range(10_000)) + b","
    path = gzip_members(tmp_path / "many.json.gz", [(b'{"traceEvents": [' + STEP + b",", 1), (chunk, 100),
                                                    (event(0) + b"]}", 1)])
    peak, outcome = measured(path, STEPSCOPE_MAX_EVENTS="200000")
    assert outcome.startswith("TraceTooLarge:") and "more than 200,000 events" in outcome
    assert peak < 60 + 200_000 * 450 // 10**6 + 64  # refused within a slice of the bound, as read
    assert measured(path, STEPSCOPE_MAX_EVENTS="2000000")[1] == "ok 1000002"


def test_distinct_names_beyond_the_limit_are_refused_as_they_are_read(tmp_path: Path) -> None:
    path = tmp_path / "names.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents": [' + STEP + b"," + b",".join(
        event(i, f"op_{i}_" + "y" * 40) for i in range(100_000)) + b"]}", compresslevel=1))
    peak, outcome = measured(path, STEPSCOPE_MAX_NAMES="20000")
    assert outcome.startswith("TraceTooLarge:") and "more than 20,000 distinct names" in outcome
    assert peak < 150
