"""The trace panel's timeline: spans, lines, reduction, per-step breakdown and tables.

Hand-built traces check figures that can be computed by hand; generated ones (hypothesis) check the
summary's invariants: the cap holds, every step boundary is kept, spans stay in the range, each
track's busy time is the same before and after reduction, names are interned right.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepscope.analysis.breakdown import step_breakdown
from stepscope.analysis.intervals import union_length
from stepscope.analysis.labels import FileTable
from stepscope.analysis.links import build_links
from stepscope.analysis.op_tables import kernel_table, operator_table
from stepscope.analysis.panel import SCHEMA, timeline_document, timeline_file_name, write_timelines
from stepscope.analysis.report import analyze
from stepscope.analysis.steps import find_steps
from stepscope.analysis.timeline import CAT, MAX_NAME, MIN_CAP, NEVER_MERGED, build_spans, summarize
from stepscope.errors import UsageError
from stepscope.trace import read_trace

from .kineto_synth import MAIN, Synth, run_folder

SCHEMA_DOC = json.loads(SCHEMA.read_text())
AUTOGRAD = 200


def table_of(synth: Synth, tmp: Path, *, files: dict[str, str] | None = None, root: Path | None = None):
    path = synth.write(tmp / "trace.json")
    trace = read_trace(path)
    links = build_links(trace)
    steps = find_steps(trace, links)
    table = FileTable(root or tmp, files if files is not None else {"f0": "train.py"})
    return trace, build_spans(trace, links, steps, file_table=table)


def one_step() -> Synth:
    """One 1000 µs step: a batch read, a region with an op that launches a kernel and a copy, a sync,
    and an op of the autograd thread that launches a kernel too (times chosen to be added by hand)."""
    s = Synth()
    s.step(1, 0, 1000)
    s.region("ss:f0:10:next", 0, 300)
    s.region("ss:f0:11", 300, 600)
    s.op("aten::mm", 310, 90)
    s.launch(320, 400, 300)  # cudaLaunchKernel [320, 330] -> kernel [400, 700]
    s.launch(335, 700, 50, kind="gpu_memcpy", nbytes=4096)  # -> copy [700, 750]
    s.sync(600, 200)  # host blocked [600, 800]
    s.op("aten::add", 500, 50, tid=AUTOGRAD)
    s.launch(510, 705, 10, tid=AUTOGRAD, name="void add_kernel<float>()", stream=8)  # -> kernel [705, 715]
    return s


def test_spans_have_their_categories_depths_and_lines(tmp_path: Path) -> None:
    _, table = table_of(one_step(), tmp_path)
    by_name = defaultdict(list)
    for i in range(len(table)):
        by_name[table.names[table.name[i]]].append(i)
    lines = [table.lines[k] if k >= 0 else None for k in table.line]
    assert [table.tracks[t].label for t in sorted(set(table.track))][:1] == ["thread 100"]
    assert table.tracks[0].main and table.tracks[0].kind == "cpu"
    assert {tr.kind for tr in table.tracks} == {"cpu", "gpu"}
    assert "ProfilerStep#1" not in by_name  # steps are their own list
    (read,) = by_name["ss:f0:10:next"]
    assert table.category[read] == CAT["batch_read"] and lines[read] == ("f0", 10) and table.depth[read] == 0
    (mm,) = by_name["aten::mm"]
    assert table.category[mm] == CAT["operator"] and lines[mm] == ("f0", 11) and table.depth[mm] == 1
    launch = next(i for i in by_name["cudaLaunchKernel"] if table.tracks[table.track[i]].main)
    assert table.depth[launch] == 2 and table.parent[launch] == mm
    (sync,) = by_name["cudaStreamSynchronize"]
    assert table.category[sync] == CAT["sync"]
    (kernel,) = by_name["void gemm_kernel<float>()"]
    assert table.category[kernel] == CAT["kernel"] and lines[kernel] == ("f0", 11)  # its launch call's line
    (copy,) = by_name["Memcpy HtoD (Pageable -> Device)"]
    assert table.category[copy] == CAT["copy_h2d"]
    # the autograd thread holds no region: its op and the kernel it launched take the main thread's line
    (add,) = by_name["aten::add"]
    assert not table.tracks[table.track[add]].main and lines[add] == ("f0", 11)
    (add_kernel,) = by_name["void add_kernel<float>()"]
    assert lines[add_kernel] == ("f0", 11)
    assert table.files == {"f0": "train.py"}


def test_frames_place_lines_when_no_region_does(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "model").mkdir(parents=True)
    (root / "model" / "net.py").write_text("def forward(x):\n    return x\n")
    s = Synth(devices=[])
    s.step(1, 0, 100)
    s.frame("model/net.py", 1, "forward", 10, 50)
    s.op("aten::relu", 20, 10)
    s.frame("/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", 1500, "_call_impl", 60, 10)
    s.frame("/elsewhere/outside.py", 3, "helper", 75, 10)
    _, table = table_of(s, tmp_path, files={"f0": "train.py"}, root=root)
    by_name = {table.names[table.name[i]]: i for i in range(len(table))}
    line = lambda name: table.lines[table.line[by_name[name]]] if table.line[by_name[name]] >= 0 else None  # noqa: E731
    assert line("model/net.py(1): forward") == ("x0", 1)  # a workspace file outside the run's table: its own id
    assert line("aten::relu") == ("x0", 1)  # held by the frame: the function's line
    assert line("/usr/lib/python3.11/site-packages/torch/nn/modules/module.py(1500): _call_impl") is None
    assert line("/elsewhere/outside.py(3): helper") is None  # outside the workspace: no id, no path
    assert table.files == {"x0": "model/net.py"}


def test_breakdown_adds_up_to_each_step_by_hand(tmp_path: Path) -> None:
    _, table = table_of(one_step(), tmp_path)
    (step,) = step_breakdown(table)
    assert step["ms"] == 1.0
    assert step["parts"] == {
        "gpu_busy": 0.31,  # kernels [400, 700] and [705, 715]
        "copies": 0.04,  # the copy [700, 750] where no kernel runs: [700, 705] and [715, 750]
        "batch_read": 0.3,  # [0, 300], GPU idle
        # the sync [600, 800] outside GPU work: [750, 800]; and the call of the copy from pageable memory
        # [335, 345], which waits for the device too (links.py)
        "host_wait": 0.06,
        "cpu_work": 0.19,  # the region [300, 400] and [800, 900], but for that call
        "other": 0.1,  # [900, 1000]: nothing recorded
    }
    assert sum(step["parts"].values()) == pytest.approx(step["ms"], abs=1e-9)


def test_breakdown_says_gpu_parts_were_not_observed_on_a_cpu_trace(tmp_path: Path) -> None:
    s = Synth(devices=[])
    for k in range(3):
        s.step(k + 1, k * 100, 100)
        s.region("ss:f0:5", k * 100 + 10, 60)
    _, table = table_of(s, tmp_path)
    for step in step_breakdown(table):
        assert step["parts"]["gpu_busy"] is None and step["parts"]["copies"] is None  # not 0: not observed
        assert step["parts"]["cpu_work"] == 0.06 and step["parts"]["other"] == 0.04


def test_operator_and_kernel_tables_by_hand(tmp_path: Path) -> None:
    s = one_step()
    s.op("aten::linear", 410, 100)  # holds aten::addmm, which holds a nested aten::addmm (recursion)
    s.op("aten::addmm", 420, 60)
    s.op("aten::addmm", 430, 20)
    _, table = table_of(s, tmp_path)
    ops, left = operator_table(table)
    assert left == 0
    by_name = {r["name"]: r for r in ops}
    assert by_name["aten::mm"] == {"name": "aten::mm", "calls": 1.0, "self_ms": 0.09, "total_ms": 0.09,
                                   "gpu_ms": 0.35, "shapes": None, "file": "f0", "line": 11, "line_calls": 1.0}
    assert by_name["aten::linear"]["self_ms"] == 0.04 and by_name["aten::linear"]["total_ms"] == 0.1
    # two calls, one inside the other: self times add (40 + 20 µs), the inner call adds nothing to the total
    assert by_name["aten::addmm"]["calls"] == 2.0
    assert by_name["aten::addmm"]["self_ms"] == 0.06 and by_name["aten::addmm"]["total_ms"] == 0.06
    assert by_name["aten::add"]["gpu_ms"] == 0.01 and by_name["aten::add"]["line"] == 11
    kernels, _ = kernel_table(table)
    assert kernels == [
        {"name": "void gemm_kernel<float>()", "launches": 1.0, "total_ms": 0.3, "mean_us": 300.0, "file": "f0", "line": 11,
         "line_launches": 1.0},
        {"name": "void add_kernel<float>()", "launches": 1.0, "total_ms": 0.01, "mean_us": 10.0, "file": "f0", "line": 11,
         "line_launches": 1.0},
    ]


def test_document_validates_and_its_files_cover_every_source(tmp_path: Path) -> None:
    s = one_step()
    trace = read_trace(s.write(tmp_path / "trace.json"))
    links = build_links(trace)
    doc = timeline_document(trace, links, find_steps(trace, links), per="step",
                            file_table=FileTable(tmp_path, {"f0": "train.py", "f1": "unused.py"}), source_root=None)
    jsonschema.validate(doc, SCHEMA_DOC)
    assert doc["files"] == {"f0": "train.py"}
    assert not doc["reduced"] and doc["notes"] == []
    assert doc["window"] == {"duration_us": 1000.0, "per": "step", "steps": 1, "gpu_observed": True}
    assert doc["steps"] == [{"name": "ProfilerStep#1", "start_us": 0.0, "cpu_start_us": 0.0, "cpu_end_us": 1000.0,
                             "completion_us": 1000.0, "ms": 1.0, "cpu_known": True}]
    assert len(doc["tracks"]) == 4  # main thread, autograd thread, streams 7 and 8


# ---------------------------------------------------------------- invariants over generated traces

@st.composite
def busy_traces(draw) -> Synth:
    """Steps of regions holding bursts of short operators (each launching a kernel), some nested, some
    outlasting their region, on the main and the autograd thread, with gaps on every track."""
    s = Synth()
    t = 0
    for k in range(draw(st.integers(1, 3))):
        step_start = t
        t += draw(st.integers(0, 50))
        for _ in range(draw(st.integers(1, 3))):
            line = draw(st.integers(1, 9))
            burst = draw(st.integers(0, 200))
            region_start = t
            t += 5
            for _ in range(burst):
                dur = draw(st.sampled_from([1, 2, 3, 8, 40]))
                tid = draw(st.sampled_from([MAIN, MAIN, MAIN, AUTOGRAD]))
                s.op("aten::mul" if dur < 8 else "aten::mm", t, dur, tid=tid)
                if draw(st.booleans()):
                    s.op("aten::copy_", t, dur / 2, tid=tid)  # nested, same start
                s.launch(t, t + 30, draw(st.sampled_from([1, 2, 5, 50])), tid=tid, stream=draw(st.sampled_from([7, 8])))
                t += dur + draw(st.sampled_from([0, 0, 1, 4]))
            end = t + 5
            outlast = draw(st.integers(0, 2)) == 0 and burst > 0  # the last op outlasts its region
            s.region(f"ss:f0:{line}", region_start, (end - region_start) - (3 if outlast else 0))
            t = end + draw(st.integers(0, 30))
        s.step(k + 1, step_start, t - step_start)
    return s


def _track_union(table, a: float, b: float) -> dict[int, float]:
    out = {}
    by_track = defaultdict(list)
    for i in range(len(table)):
        s, e = max(table.start[i], a), min(table.end[i], b)
        if e > s:
            by_track[table.track[i]].append((s, e))
    for t, ivs in by_track.items():
        out[t] = union_length(ivs)
    return out


def shown_name(name: str) -> str:
    """A name as a summary shows it: cut to MAX_NAME characters with an ellipsis."""
    return name if len(name) <= MAX_NAME else name[: MAX_NAME - 1] + "…"


def check_summary(table, doc: dict, cap: int, lo: float | None = None, hi: float | None = None) -> None:
    jsonschema.validate(doc, SCHEMA_DOC)
    spans = doc["spans"]
    n = len(spans["start_us"])
    assert n <= cap
    assert {len(col) for col in spans.values()} == {n}
    w0 = table.window[0]
    lo = 0.0 if lo is None else lo
    hi = table.window[1] - w0 if hi is None else hi
    assert doc["range"] == {"start_us": round(lo, 3), "end_us": round(hi, 3)}
    assert all(lo - 1e-3 <= s and s + d <= hi + 2e-3 for s, d in zip(spans["start_us"], spans["dur_us"]))
    # every step boundary is kept, whatever the range and cap
    assert [(st_["name"], st_["completion_us"]) for st_ in doc["steps"]] == \
        [(step.name, round(step.completion - w0, 3)) for step in table.steps]
    merged = dict(zip(doc["merged"]["span"], zip(doc["merged"]["count"], doc["merged"]["busy_us"])))
    # busy time per track: what the spans cover, less the idle time merged top-level spans declare
    before = _track_union(table, w0 + lo, w0 + hi)
    shown = defaultdict(list)
    idle = defaultdict(float)
    for k in range(n):
        t, s, d = spans["track"][k], spans["start_us"][k], spans["dur_us"][k]
        if d > 0:
            shown[t].append((s, s + d))
        if k in merged and spans["depth"][k] == 0:
            idle[t] += d - merged[k][1]
    for t in set(before) | set(shown):
        tolerance = 2e-3 * (len(shown[t]) + 1)
        assert union_length(shown[t]) - idle[t] == pytest.approx(before.get(t, 0.0), abs=tolerance), t
    # one track and depth: spans never overlap
    rows = defaultdict(list)
    for k in range(n):
        rows[(spans["track"][k], spans["depth"][k])].append((spans["start_us"][k], spans["start_us"][k] + spans["dur_us"][k]))
    for ivs in rows.values():
        ivs.sort()
        assert all(b[0] >= a[1] - 2e-3 for a, b in zip(ivs, ivs[1:]))
    # names interned right: each span shown as is has a span of that name, track and extent in the table
    original = defaultdict(list)  # (track, name, start in ns) -> durations
    for i in range(len(table)):
        s, e = max(table.start[i], w0 + lo), min(table.end[i], w0 + hi)
        original[(table.track[i], shown_name(table.names[table.name[i]]), round((s - w0) * 1000))].append(e - s)
    for k in range(n):
        if k not in merged:
            key = (spans["track"][k], doc["names"][spans["name"][k]])
            ns = round(spans["start_us"][k] * 1000)
            durations = [d for near in (ns - 1, ns, ns + 1) for d in original.get((*key, near), ())]
            assert any(abs(d - spans["dur_us"][k]) <= 2e-3 for d in durations)
        else:
            assert merged[k][1] <= spans["dur_us"][k] + 2e-3
    # regions are never merged (while they are at most half the cap)
    labelled = [i for i in range(len(table)) if table.category[i] in NEVER_MERGED
                and table.end[i] > w0 + lo and table.start[i] < w0 + hi]
    if len(labelled) <= cap // 2:
        plain = set()
        for k in range(n):
            if k not in merged:
                plain.add((spans["track"][k], doc["names"][spans["name"][k]], round(spans["start_us"][k] * 1000)))
        for i in labelled:
            ns = round((max(table.start[i], w0 + lo) - w0) * 1000)
            key = (table.track[i], shown_name(table.names[table.name[i]]))
            assert any((*key, near) in plain for near in (ns - 1, ns, ns + 1))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(synth=busy_traces(), cap=st.sampled_from([MIN_CAP, 1500, 200_000]), cut=st.floats(0.0, 0.9),
       width=st.floats(0.05, 1.0))
def test_summary_invariants_on_generated_traces(synth: Synth, cap: int, cut: float, width: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _, table = table_of(synth, Path(tmp))
    length = table.window[1] - table.window[0]
    check_summary(table, summarize(table, cap=cap), cap)
    lo = cut * length
    hi = min(length, lo + width * length)
    if hi > lo:
        check_summary(table, summarize(table, lo, hi, cap=cap), cap, lo, hi)


def test_a_busy_window_is_reduced_and_says_so(tmp_path: Path) -> None:
    s = Synth()
    t = 0
    s.step(1, 0, 40_000)
    s.region("ss:f0:3", 10, 39_900)
    t = 20
    for _ in range(1200):  # 3600 spans: ops, launch calls, kernels of 2 µs with 1 µs gaps
        s.op("aten::mul", t, 2)
        s.launch(t, t + 5, 2)
        t += 30
    _, table = table_of(s, tmp_path)
    doc = summarize(table, cap=MIN_CAP)
    check_summary(table, doc, MIN_CAP)
    assert doc["reduced"] and doc["resolution_us"] > 0 and doc["spans_in_range"] == len(table)
    assert "merged" in doc["notes"][0] and str(len(table)) in doc["notes"][0]
    assert doc["merged"]["span"]
    # a finer level of one stretch: everything in it, nothing merged
    fine = summarize(table, 1000.0, 1300.0, cap=MIN_CAP)
    check_summary(table, fine, MIN_CAP, 1000.0, 1300.0)
    assert not fine["reduced"] and fine["merged"]["span"] == []


@pytest.mark.parametrize(("start", "end", "cap", "reason"), [
    (-1.0, None, MIN_CAP, "not inside the window"),
    (10.0, 5.0, MIN_CAP, "not inside the window"),
    (None, 1e12, MIN_CAP, "not inside the window"),
    (float("nan"), None, MIN_CAP, "not inside the window"),
    (None, None, 10, "below the smallest"),
    (None, None, True, "below the smallest"),
])
def test_a_bad_range_or_cap_is_refused_with_a_reason(tmp_path: Path, start, end, cap, reason) -> None:
    _, table = table_of(one_step(), tmp_path)
    with pytest.raises(UsageError, match=reason):
        summarize(table, start, end, cap=cap)


def test_timelines_are_written_beside_the_report_and_never_over_one(tmp_path: Path) -> None:
    run = run_folder(tmp_path, one_step())
    timelines: dict = {}
    report = analyze([run], timelines=timelines)
    assert report["ms_per_step"] == 1.0
    assert write_timelines(run, timelines) == []
    doc = json.loads((run / "timeline.json").read_text())
    jsonschema.validate(doc, SCHEMA_DOC)
    assert doc["breakdown"]["steps"][0]["parts"]["gpu_busy"] == 0.31
    before = (run / "timeline.json").read_bytes()
    problems = write_timelines(run, timelines)  # a second write is refused: the first stays
    assert len(problems) == 1 and "File exists" in problems[0]
    assert (run / "timeline.json").read_bytes() == before
    assert write_timelines(run, {run / "trace.json": b"!ValueError: no steps"}) == \
        ["no timeline for trace.json: ValueError: no steps"]


def test_timeline_file_names_follow_the_traces() -> None:
    assert timeline_file_name(Path("trace.json")) == "timeline.json"
    assert timeline_file_name(Path("trace-rank1.json.gz")) == "timeline-rank1.json"
    assert timeline_file_name(Path("trace-rank1-2.json")) == "timeline-rank1-2.json"
    assert timeline_file_name(Path("trace-1.json")) == "timeline-1.json"
    assert timeline_file_name(Path("mine.json")) is None


def test_a_trace_without_step_markers_is_one_window(tmp_path: Path) -> None:
    s = Synth(devices=[])
    s.region("ss:f0:4", 0, 50)
    s.op("aten::add", 60, 20)
    run = run_folder(tmp_path, s)
    timelines: dict = {}
    analyze([run], timelines=timelines)
    doc = json.loads(timelines[run / "trace.json"])
    jsonschema.validate(doc, SCHEMA_DOC)
    assert doc["window"]["per"] == "window" and doc["window"]["steps"] == 0
    assert len(doc["steps"]) == 1 and doc["breakdown"]["steps"][0]["ms"] == 0.08



@pytest.mark.torch
def test_a_profile_run_writes_its_timeline(workspace: Path) -> None:
    from ..conftest import run_stepscope

    out = workspace / "run"
    r = run_stepscope("profile", "train_cpu.py", "--out", str(out), "--json", cwd=workspace)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "no timeline" not in r.stderr
    doc = json.loads((out / "timeline.json").read_text())
    jsonschema.validate(doc, SCHEMA_DOC)
    report = json.loads((out / "report.json").read_text())
    assert len(doc["steps"]) == len(report["steps"]) == 5
    assert [s["ms"] for s in doc["steps"]] == [s["ms"] for s in report["steps"]]
    assert doc["files"] == {"f0": "train_cpu.py"}
    assert {doc["lines"]["line"][k] for k in range(len(doc["lines"]["line"]))} >= {r["line"] for r in report["lines"]}
    for step in doc["breakdown"]["steps"]:
        assert step["parts"]["gpu_busy"] is None  # a CPU run: not observed, not 0
        assert sum(v for v in step["parts"].values() if v is not None) == pytest.approx(step["ms"], abs=1e-3)
    assert doc["operators"]["rows"] and doc["kernels"]["rows"] == []


def test_analyze_writes_the_timeline_into_a_run_folder_only_when_asked(tmp_path: Path) -> None:
    from ..conftest import run_stepscope

    run = run_folder(tmp_path, one_step())
    plain = run_stepscope("analyze", str(run), "--json", cwd=tmp_path)
    assert plain.returncode == 0 and not (run / "timeline.json").exists()  # analyze writes nothing by itself
    asked = run_stepscope("analyze", str(run), "--json", "--timeline", cwd=tmp_path)
    assert asked.returncode == 0, asked.stderr
    assert json.loads(asked.stdout)["ms_per_step"] == 1.0  # stdout still holds the report alone
    jsonschema.validate(json.loads((run / "timeline.json").read_text()), SCHEMA_DOC)
    before = (run / "timeline.json").read_bytes()
    again = run_stepscope("analyze", str(run), "--json", "--timeline", cwd=tmp_path)
    assert again.returncode == 0 and "no timeline for trace.json" in again.stderr  # never over an earlier one
    assert (run / "timeline.json").read_bytes() == before
    lone = run_stepscope("analyze", str(run / "trace.json"), "--timeline", cwd=tmp_path)
    assert lone.returncode == 0  # a trace inside a run folder: the run folder is found
    other = tmp_path / "loose"
    other.mkdir()
    one_step().write(other / "trace.json")
    refused = run_stepscope("analyze", str(other / "trace.json"), "--timeline", cwd=tmp_path)
    assert refused.returncode == 2 and "--timeline writes into a run folder" in refused.stderr
    assert not (other / "timeline.json").exists()


def test_the_language_servers_analysis_child_writes_the_timeline(tmp_path: Path) -> None:
    from stepscope.lsp import analysis_child

    run = run_folder(tmp_path, one_step())
    report = analysis_child.analyse(run)
    assert report["ms_per_step"] == 1.0
    doc = json.loads((run / "timeline.json").read_text())
    assert doc["breakdown"]["steps"][0]["ms"] == 1.0


# ---------------------------------------------------------------- what sharing would change

def test_the_document_marks_the_strings_sharing_would_change(tmp_path: Path) -> None:
    s = one_step()
    s.region("jane.doe@example.com", 320, 10)  # a label holding an address
    s.region("load /home/jdoe/secret-project/data.bin", 340, 10)  # a label holding a home path
    s.region("ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", 360, 10)  # a token
    s.op("fn@example.com", 380, 5)  # a name of work: never marked, even when it reads like an address
    trace = read_trace(s.write(tmp_path / "trace.json"))
    links = build_links(trace)
    doc = timeline_document(trace, links, find_steps(trace, links), per="step",
                            file_table=FileTable(tmp_path, {"f0": "train.py"}), source_root=None)
    jsonschema.validate(doc, SCHEMA_DOC)
    marks = doc["redactable"]
    assert marks["jane.doe@example.com"] == ["email"]
    assert "path" in marks["load /home/jdoe/secret-project/data.bin"]
    assert marks["ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"] == ["token"]
    assert set(marks) <= set(doc["names"]) | {t["label"] for t in doc["tracks"]} | set(doc["files"].values())
    # Stepscope's labels, operators, kernels and the step are never marked
    for name in ("ss:f0:11", "ss:f0:10:next", "aten::mm", "void add_kernel<float>()", "cudaLaunchKernel",
                 "fn@example.com"):
        assert name in doc["names"] and name not in marks, name
    # a range at a finer level carries its own marks, from the same decisions
    part = summarize(build_spans(trace, links, find_steps(trace, links), file_table=FileTable(tmp_path, {"f0": "train.py"})),
                     300, 400)
    from stepscope.analysis.panel import with_redactable

    assert with_redactable(part)["redactable"] == {k: v for k, v in marks.items() if k in part["names"]}
