"""The presenter: one wording and rounding of each figure, used by the CLI text and the editor alike."""

from __future__ import annotations

import inspect
import re
import shutil
from pathlib import Path

import pytest

from stepscope.analysis import present
from stepscope.analysis.render import render_text
from stepscope.analysis.report import analyze

DATA = Path(__file__).resolve().parent.parent / "data" / "traces"

LINE = {"file": "/ws/train.py", "line": 12, "precision": "exact", "wall_ms": 12.34, "cpu_self_ms": 3.5,
        "cpu_total_ms": 12.34, "gpu_ms": 8.1, "backward_ms": 3.2, "kernels": 4, "sync_ms": 0.0,
        "copies": {"h2d": {"count": 2, "bytes": 3 << 20}, "d2h": {"count": 0, "bytes": 0},
                   "d2d": {"count": 0, "bytes": 0}}}
MACHINE = {"source": "scenario", "device": "NVIDIA H200", "host": "gpu-3", "rank": 1, "torch": "2.11.0+cu130",
           "cuda_build": "13.0"}


@pytest.fixture(scope="module")
def gpu_report(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("h200")
    shutil.copytree(DATA / "h200_async", tmp / "run")
    return analyze([tmp / "run"])


def test_the_machine_is_named_the_same_in_the_text_report_and_the_editor(gpu_report: dict) -> None:
    label = present.machine_label(gpu_report["machine"])
    assert f"measured on: {label}\n" in render_text(gpu_report)
    assert present.run_summary(gpu_report) == f"{present.ms_short(gpu_report['ms_per_step'])} ms/step profiled on {label}"
    # timed without the profiler too: that figure leads, the profiled one beside it, on every one-line surface
    timed = {**gpu_report, "unprofiled": {"ms_per_step": 2.0, "passes": 5, "iqr_ms": 0.1}}
    profiled = present.ms_short(gpu_report["ms_per_step"])
    assert present.run_summary(timed) == f"2.00 ms/step without the profiler ({profiled} profiled) on {label}"
    assert present.status_text(timed) == f"2.00 ms/step ({profiled} profiled)"
    assert present.headline(timed).startswith(f"2.00 ms/step without the profiler (median of 5 passes after the "
                                              f"window, same process); profiled: {gpu_report['ms_per_step']:.3f} ms/step")
    assert present.basis_words(timed) == "the profiled mean step" and "under the profiler" in present.per_words(timed)
    assert present.machine_label(MACHINE) == "NVIDIA H200, host gpu-3, rank 1, from the scenario"
    assert present.machine_label({}) == "unknown device, from the trace"


def test_the_headline_is_the_text_report_s_first_line(gpu_report: dict) -> None:
    assert render_text(gpu_report).splitlines()[0] == present.headline(gpu_report)
    window_only = {"ms_per_step": None, "window": {"ms": 12.5}, "steps": []}
    assert present.headline(window_only) == "no step markers (ProfilerStep#N): one window of 12.500 ms, no ms/step"
    assert present.run_summary({"ms_per_step": None, "machine": MACHINE}).startswith("no steady step measured on ")


@pytest.mark.parametrize(("ms", "short", "table"), [
    (0.004, "0.00", "0.004"), (4.2567, "4.26", "4.257"), (42.567, "42.6", "42.567"), (425.67, "426", "425.670"),
    (None, None, "n/o"),
])
def test_milliseconds_are_rounded_one_way_per_surface(ms, short, table) -> None:
    if short is not None:
        assert present.ms_short(ms) == short
    assert present.ms_table(ms) == table


#: a report of 4 active steps (median 48 ms): the steps tile a 200 ms window, a mean step of 50 ms
STEPPED = {"ms_per_step": 48.0, "steps": [{"ms": 48.0}] * 3 + [{"ms": 56.0}],
           "window": {"ms": 200.0, "steps": 4, "mean_step_ms": 50.0}, "machine": MACHINE}
WINDOW = {"ms_per_step": None, "steps": [], "window": {"ms": 400.0, "steps": 0, "mean_step_ms": None}}


def test_a_line_s_label_and_hover_say_the_same_figures_as_shares_of_the_mean_step() -> None:
    label = present.line_label(LINE, STEPPED)
    assert label == "12.3 ms/step · 25% · GPU 8.10 ms · bwd 3.20 ms"  # 12.34 of the 50 ms mean step
    hover = present.line_hover(LINE, STEPPED, "20261201T000000Z-train-1a2b")
    assert "- wall: 12.3 ms" in hover
    assert "- share of the mean step: 25% of 50.0 ms (mean of 4 active steps, profiled; the median, 48.0 ms/step, is " \
           "the headline)" in hover
    # where the step was timed without the profiler, that is the headline, and the share says it is of the profiled step
    real = present.line_hover(LINE, {**STEPPED, "unprofiled": {"ms_per_step": 20.0, "passes": 5, "iqr_ms": 0.1}}, "r")
    assert "(mean of 4 active steps, profiled; without the profiler the step takes 20.0 ms, the headline)" in real
    assert "- GPU: 8.10 ms" in hover and "- backward: 3.20 ms" in hover and "- kernels: 4" in hover
    assert "- copies: host→device 2 (3.00 MiB)" in hover
    assert "run `20261201T000000Z-train-1a2b`" in hover and "gpu\\-3" in hover
    assert present.heat(LINE, STEPPED) == pytest.approx(12.34 / 50.0)
    # the headline says both: the median is ms/step, per-line figures are of the mean step
    assert present.headline(STEPPED) == "48.000 ms/step (median of 4 active steps; mean 50.000 ms)"
    assert "mean step, 50.0 ms" in present.status_tooltip(STEPPED)


def test_a_report_written_before_the_mean_step_was_recorded_takes_the_mean_of_its_steps() -> None:
    old = {**STEPPED, "window": {"ms": 200.0, "steps": 4}}
    assert present.share_basis(old) == pytest.approx(50.0)
    assert present.line_label(LINE, old) == present.line_label(LINE, STEPPED)


def test_what_was_not_observed_is_said_never_zero() -> None:
    cpu = {**LINE, "gpu_ms": None, "backward_ms": None}
    assert "GPU" not in present.line_label(cpu, STEPPED)
    assert "- GPU: not observed" in present.line_hover(cpu, STEPPED, None)
    window = present.line_hover(cpu, WINDOW, None)
    assert "per window" in window and "share of the step" not in window and "share of the mean step" not in window
    assert "- share of the window: 3% of 400 ms" in window
    assert present.line_label(cpu, WINDOW) == "12.3 ms/window · 3%"
    assert present.heat(cpu, {"ms_per_step": None, "window": {}}) == 0.0


def test_no_share_exceeds_the_mean_step_even_when_a_line_exceeds_the_median() -> None:
    # a loop line that holds nearly the whole window: above the 48 ms median, within the 50 ms mean
    loop = {**LINE, "wall_ms": 49.5}
    assert present.share_of(loop["wall_ms"], STEPPED) <= 1.0
    assert present.line_label(loop, STEPPED).split(" · ")[1] == "99%"
    assert present.heat({**LINE, "wall_ms": 55.0}, STEPPED) == 1.0  # an old report's share above 1 heats as 1


def test_names_from_a_trace_or_a_host_are_never_markup() -> None:
    hostile = {**MACHINE, "host": "<img src=x onerror=alert(1)>[click](http://evil)*x*", "device": "`dev`"}
    hover = present.line_hover(LINE, {**STEPPED, "machine": hostile}, "run`id")
    machine_row = hover.splitlines()[-1].split(" · ", 1)[1]
    # every character Markdown would read as markup is escaped
    assert not re.search(r"(?<!\\)[<>\[\]()*`]", machine_row), machine_row
    assert "\\<img src=x onerror=alert\\(1\\)\\>\\[click\\]\\(http://evil\\)\\*x\\*" in machine_row
    assert "run `run'id`" in hover  # a backtick cannot close the code span early
    tooltip = present.status_tooltip({"ms_per_step": 50.0, "steps": [{"ms": 50.0}] * 5, "machine": hostile}, "r1")
    assert "\\<img" in tooltip and not re.search(r"(?<!\\)<", tooltip)
    assert "median of 5 active steps" in tooltip and "torch 2\\.11\\.0" in tooltip


def test_the_hover_lists_what_the_line_ran_and_states_the_share_basis() -> None:
    line = {**LINE, "sync_ms": 0.5,
            "top_ops": [{"name": "aten::linear", "calls": 3.0, "ms": 3.99}, {"name": "aten::relu", "calls": 0.5, "ms": 0.05}],
            "top_kernels": [{"name": "void gemm_kernel<float, 128>(" + "x" * 300 + ")", "calls": 2.0, "ms": 0.14}]}
    hover = present.line_hover(line, STEPPED, "r1",
                               panel_link="command:stepscope.openPanel?%7B%7D", notes=("Lines changed since.",))
    assert "**Operators it called** (outermost calls per step × time per step):" in hover
    assert "- `aten::linear` ×3 · 3.99 ms" in hover and "- `aten::relu` ×0.50 · 0.05 ms" in hover
    kernel_row = next(r for r in hover.splitlines() if r.startswith("- `void gemm"))
    assert kernel_row.endswith("…` ×2 · 0.14 ms") and len(kernel_row) < 120  # the panel has the whole name
    assert "- copies: host→device 2 (3.00 MiB)" in hover and "- waits on the device: 0.50 ms" in hover
    assert "[Open in the trace panel](command:stepscope.openPanel?%7B%7D)" in hover
    assert "- share of the mean step: 25% of 50.0 ms (mean of 4 active steps" in hover
    assert hover.index("*Lines changed since\\.*") < hover.index("- wall:")
    assert hover.splitlines()[-1].startswith("run `r1` · NVIDIA H200")


def test_without_gpu_events_the_hover_gives_no_kernel_list() -> None:
    cpu = {**LINE, "gpu_ms": None, "kernels": 0, "top_kernels": None, "top_ops": []}
    hover = present.line_hover(cpu, {"ms_per_step": 50.0}, None)
    assert "Kernels" not in hover and "Operators" not in hover and "- GPU: not observed" in hover


def test_a_line_below_the_threshold_gets_no_label_and_without_a_basis_every_line_gets_one() -> None:
    tiny = {**LINE, "wall_ms": 0.02, "gpu_ms": 0.01}
    assert not present.worth_a_label(tiny, STEPPED, 0.01)
    assert present.worth_a_label(LINE, STEPPED, 0.01)
    assert present.worth_a_label(tiny, STEPPED, 0.0)
    assert present.worth_a_label(tiny, {"ms_per_step": None, "window": {}}, 0.5)


def test_a_finding_in_the_editor_names_settings_and_says_the_machine_and_path_once() -> None:
    report = {"machine": {"host": "vm", "device": "CPU only"}}
    finding = {"kind": "dominant-op", "file": "/ws/train.py", "line": 3,
               "observation": "aten::mm takes 40% of the 10.00 ms step at /ws/model/net.py:4 (measured on vm (CPU only)).",
               "hypothesis": "A decisive shape or algorithm.",
               "next_check": "Before replacing it, profile again with --shapes to see its input shapes and call count."}
    said = present.finding_message(finding, report, "/ws")
    assert said.splitlines() == [
        "aten::mm takes 40% of the 10.00 ms step at model/net.py:4.",
        "Hypothesis: A decisive shape or algorithm.",
        "Next check: Before replacing it, profile again with the `stepscope.profile.shapes` setting on to see its "
        "input shapes and call count."]
    assert "--shapes" in present.finding_message(finding, report, "/ws", surface="cli")
    assert present.finding_doc_url("input-bound").endswith("docs/findings.md#input-bound")


def test_every_flag_a_finding_names_has_the_editor_s_words(gpu_report: dict) -> None:
    """Each CLI flag in the findings' texts is said as a setting in the editor: a new flag in a finding
    without an editor wording fails here."""
    import re as _re
    from stepscope.analysis import findings as findings_pkg

    from stepscope.analysis.findings import distorted

    source = "".join(p.read_text() for p in Path(findings_pkg.__file__).parent.glob("*.py"))
    # the flags of `stepscope measure`'s command line, which the editor cannot run: it says to run it
    # in a terminal (below)
    measure_flags = set(_re.findall(r"(?<![\w-])--[a-z][a-z-]+", inspect.getsource(distorted.measure_command)))
    for command in _re.findall(r"`stepscope measure[^`]*`", source):
        measure_flags |= set(_re.findall(r"(?<![\w-])--[a-z][a-z-]+", command))
    flags = set(_re.findall(r"(?<![\w-])--[a-z][a-z-]+", source)) - {"--json"} - measure_flags
    for flag in flags:
        assert flag not in present.for_surface(f"profile again with {flag} to see", "editor"), flag
    report = {"scenario": {"step": {"file": "/ws/train.py", "line": 42}, "program": {"cwd": "/ws"}},
              "distortion": None}
    (marked,) = distorted.mark_distorted([{"kind": "input-bound", "observation": "o.", "next_check": "n.",
                                           "figures": {}}], report)
    assert present.for_surface(marked["next_check"], "editor") == (
        "n. Check the step without the profiler, from a terminal: `stepscope measure train.py --line 42`.")
    assert present.for_surface("compare the two with `stepscope measure --against` (several timed passes)", "editor") == (
        "compare the two from a terminal with `stepscope measure --against` (several timed passes)")


def test_two_runs_side_by_side_statement_by_statement() -> None:
    """Line 12 of A moved to line 14 in B (two lines inserted above it); A's line 13 changed into B's 15;
    B's 22 (A's 20) was timed in B only. Matched by code: 12 beside 14, never beside what line 12 holds now."""
    from stepscope.analysis.run_compare import RunLines, compare_statements

    before = "import torch\n" + "\n" * 10 + "loss = model(x)\nold = step()\n" + "\n" * 6 + "opt.step()\n"
    after = before.replace("import torch\n", "import torch\n# a\n# b\n").replace("old = step()", "new = step()")
    a = {"ms_per_step": 50.0, "machine": MACHINE, "steps": [{}] * 5,
         "lines": [{**LINE, "wall_ms": 10.0}, {**LINE, "line": 13, "wall_ms": 4.0}]}
    b = {"ms_per_step": 40.0, "machine": MACHINE, "steps": [{}] * 5,
         "lines": [{**LINE, "line": 14, "wall_ms": 5.0}, {**LINE, "line": 15, "wall_ms": 2.0},
                   {**LINE, "line": 22, "wall_ms": 1.0}]}
    doc = compare_statements(RunLines("A1", a, {"train.py": before}, "/ws"), RunLines("B2", b, {"train.py": after}, "/ws"))
    text = present.compare_runs(doc, "/ws")
    assert "| ms/step | 50.000 | 40.000 |" in text
    assert "| `loss = model(x)` | `train.py:12` | `train.py:14` | 10.000 | 5.000 | -5.000 | 0.50× |" in text
    assert "| `opt.step()` | `train.py:20` | `train.py:22` | – | 1.000 | – | – |" in text  # A did not time it
    only_a, only_b = text.split("Only in A's code")[1].split("Only in B's code")
    assert "| `old = step()` | `train.py:13` | 4.000 |" in only_a and "| `new = step()` | `train.py:15` | 2.000 |" in only_b
    assert "different machines" not in text
    cli = present.compare_runs_text(doc, "/ws")
    assert "train.py:12                  train.py:14                     10.000     5.000    -5.000   0.50×  loss = model(x)" in cli
    other = {**b, "machine": {**MACHINE, "host": "gpu-9"}}
    assert "different machines" in present.compare_runs(
        compare_statements(RunLines("A1", a, {"train.py": before}, "/ws"), RunLines("B2", other, {"train.py": after}, "/ws")),
        "/ws")
    # without A's text, lines are matched by number (line 12 beside line 12), and the comparison says so
    blind = compare_statements(RunLines("A1", a, {"train.py": None}, "/ws"), RunLines("B2", b, {"train.py": after}, "/ws"))
    assert {e["match"] for e in blind["lines"]} == {"number"}
    assert "matched by number" in present.compare_runs(blind, "/ws")


@pytest.mark.parametrize(("cli", "editor"), [
    ("give it more data or lower --wait/--warmup",
     "give it more data or lower the `stepscope.profile.wait` or `stepscope.profile.warmup` setting"),
    ("too few for a distribution (use --active 5 or more)",
     "too few for a distribution (set `stepscope.profile.active` to 5 or more)"),
])
def test_a_run_s_reason_in_the_editor_names_the_setting(cli: str, editor: str) -> None:
    assert present.for_surface(cli, "editor") == editor
    assert present.for_surface(cli, "cli") == cli


def test_a_lines_profiler_cost_is_said_only_where_it_reads_as_more_than_zero() -> None:
    from stepscope.analysis.present import profiler_cost_text

    assert profiler_cost_text({"profiler_ms_estimate": 0.004}) is None
    assert profiler_cost_text({"profiler_ms_estimate": None}) is None
    assert profiler_cost_text({}) is None
    assert profiler_cost_text({"profiler_ms_estimate": 0.42}).startswith("~0.42 ms of it is the profiler's own cost")


def test_steps_timed_without_the_profiler_are_said_even_where_no_ratio_can_be_given() -> None:
    report = {"ms_per_step": 0.0, "distortion": None, "steps": [{"ms": 0.0}],
              "unprofiled": {"ms_per_step": 1.0, "passes": 1, "iqr_ms": 0.0, "raw_ms": [1.0]}}
    text = present.distortion_text(report)
    assert text.startswith("without the profiler: 1.00 ms/step (median of 1 passes") and "no distortion" in text
    assert "not timed" not in text
