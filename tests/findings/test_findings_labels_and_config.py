"""Region labels written in the source but absent from the trace; thresholds from pyproject.toml."""

from __future__ import annotations

import textwrap
from pathlib import Path

from stepscope.analysis.findings import Thresholds, load_thresholds, thresholds_from_table
from stepscope.analysis.report import analyze
from tests.analysis.kineto_synth import Synth, run_folder

from .conftest import kinds

SOURCE = textwrap.dedent('''\
    import torch
    from torch.profiler import record_function
    from torch.cuda import nvtx


    def helper(x):
        with record_function("helper_ran"):
            return x * 2


    def never_called(x):
        with record_function("never_called_label"):
            return x


    def main(loader, model, augment=False):
        with record_function("setup"):
            model = model.cuda()
        for x in loader:
            with record_function("forward"):
                y = helper(model(x))
            if augment:
                with record_function("augment"):
                    y = y.flip(0)
            with record_function(f"dynamic_{augment}"):
                nvtx.range_push("nvtx_region")
                y.sum()
''')
LOOP = 19  # `for x in loader:`


def labelled_run(tmp_path: Path, regions: list[str]) -> dict:
    s = Synth(devices=[])
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region(f"ss:f0:{LOOP}:next", t + 5, 20)
        for j, label in enumerate(regions):
            s.region(label, t + 100 + 100 * j, 50)
        s.region("ss:f0:8", t + 700, 10)  # a line of helper() ran in the window
    run = run_folder(tmp_path, s, files={"f0": "train.py"},
                     scenario={"step": {"file": str(tmp_path / "ws" / "train.py"), "line": LOOP, "kind": "loop"}})
    (tmp_path / "ws" / "train.py").write_text(SOURCE)
    return analyze([run / "trace.json"])


def test_labels_of_the_step_missing_from_the_trace_are_listed_and_found(tmp_path: Path) -> None:
    report = labelled_run(tmp_path, ["forward"])
    path = str(tmp_path / "ws" / "train.py")
    # setup (before the loop) and never_called (a function that did not run) are not the step's
    file_id = [f["path"] for f in report["files"]].index("train.py")  # the file table's id of train.py
    assert report["missing_labels"] == [{"label": "helper_ran", "file": path, "line": 7, "file_id": file_id},
                                        {"label": "augment", "file": path, "line": 23, "file_id": file_id}]
    missing = [f for f in report["findings"] if f["kind"] == "missing-label"]
    assert [(f["line"], f["figures"]["label"]) for f in missing] == [(7, "helper_ran"), (23, "augment")]
    assert any("NVTX" in note and "not checked" in note for note in report["notes"])


def test_a_label_torch_wrote_as_unknown_is_not_said_to_have_not_run(tmp_path: Path) -> None:
    report = labelled_run(tmp_path, ["forward", "augment", "unknown"])  # helper_ran's region, named "unknown"
    (f,) = [f for f in report["findings"] if f["kind"] == "missing-label"]
    assert f["figures"]["label"] == "helper_ran"
    assert "did not run" not in f["hypothesis"].split(" Or ")[0] and "may have run" in f["hypothesis"]
    assert "'unknown' regions" in f["next_check"]
    plain = labelled_run(tmp_path / "plain", ["forward", "augment"])
    (g,) = [g for g in plain["findings"] if g["kind"] == "missing-label"]
    assert g["hypothesis"].startswith("This code did not run during the window")


def test_no_label_is_missing_when_the_trace_holds_them_all(tmp_path: Path) -> None:
    report = labelled_run(tmp_path, ["forward", "augment", "helper_ran"])
    assert report["missing_labels"] == [] and "missing-label" not in kinds(report)


def test_labels_are_not_checked_without_the_source(tmp_path: Path) -> None:
    s = Synth(devices=[])
    for k in range(5):
        s.step(k + 1, k * 1000, 1000)
        s.region("forward", k * 1000 + 10, 100)
    report = analyze([s.write(tmp_path / "t.json")])
    assert report["missing_labels"] == []


def test_thresholds_read_from_pyproject_with_reasons_for_what_is_not_used(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent('''\
        [tool.stepscope]
        select = ["SS1"]

        [tool.stepscope.findings]
        dominant-op-share = 0.8
        small_launches_min_kernels = 200
        batch-read-patterns = ["my_reader"]
        sync-min-share = "high"
        not-a-threshold = 1
    '''))
    t, problems = load_thresholds(tmp_path)
    assert t.dominant_op_share == 0.8 and t.small_launches_min_kernels == 200
    assert t.batch_read_patterns == ("my_reader",)
    assert t.sync_min_share == Thresholds().sync_min_share
    assert len(problems) == 2 and any("sync-min-share" in p for p in problems) \
        and any("not-a-threshold" in p for p in problems)


def test_a_broken_pyproject_keeps_the_defaults_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.stepscope.findings\n")
    t, problems = load_thresholds(tmp_path)
    assert t == Thresholds() and len(problems) == 1 and "not read" in problems[0]


def test_an_integer_threshold_refuses_a_fraction() -> None:
    t, problems = thresholds_from_table({"min-active-steps": 2.5})
    assert t.min_active_steps == 3 and problems


def test_configured_thresholds_reach_the_report_and_its_notes(tmp_path: Path) -> None:
    s = Synth(devices=[])
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:12:next", t + 5, 20)
        s.op("aten::mm", t + 50, 650)
    run = run_folder(tmp_path, s)
    assert "dominant-op" in kinds(analyze([run / "trace.json"]))
    (tmp_path / "ws" / "pyproject.toml").write_text("[tool.stepscope.findings]\ndominant-op-share = 0.9\nbogus = 1\n")
    report = analyze([run / "trace.json"])
    assert "dominant-op" not in kinds(report)
    assert any("bogus" in note for note in report["notes"])


def test_the_text_names_stepscopes_regions_by_their_lines_and_the_programs_as_written(tmp_path: Path) -> None:
    from stepscope.analysis.render import render_text

    report = labelled_run(tmp_path, ["forward"])
    text = render_text(report)
    regions = text.split("regions, per step (mean of")[1].split("\n\n")[0]
    assert "ss:f0" not in regions, regions
    assert f"train.py:{LOOP} (batch read)" in regions and "train.py:8 " in regions, regions
    assert "  forward " in regions, regions
