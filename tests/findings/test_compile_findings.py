"""Findings from torch.compile's records (findings/compile_rule.py): a compilation inside the window,
and graph breaks, on the line torch names."""

from __future__ import annotations

from stepscope.analysis.findings import find


def report_with(compiled_code: dict) -> dict:
    return {"ms_per_step": 10.0, "steps": [{"name": f"ProfilerStep#{i}", "ms": 10.0} for i in range(5)],
            "machine": {"source": "scenario", "device": "NVIDIA H200", "host": "vm"}, "regions": [], "lines": [],
            "scenario": {"step": {"file": "/ws/train.py", "line": 20}}, "gpu": {"observed": True},
            "evidence": {}, "compiled_code": compiled_code}


def test_a_recompilation_in_the_window_is_a_finding_on_the_compiled_function_with_torchs_reason():
    report = report_with({"compilations": [
        {"file": "/ws/model.py", "line": 12, "function": "forward", "step": 5, "phase": "active",
         "reasons": ["0/0: tensor 'x' size mismatch at index 0. expected 16, actual 24"], "recompile": True}],
        "graph_breaks": []})
    (f,) = [f for f in find(report) if f["kind"] == "recompilation"]
    assert (f["file"], f["line"], f["severity"]) == ("/ws/model.py", 12, "warning")
    assert "recompiled `forward`" in f["observation"] and "expected 16, actual 24" in f["observation"]
    assert "NVIDIA H200" in f["observation"]
    assert "--warmup" in f["next_check"] and "mark_dynamic" in f["next_check"]


def test_graph_breaks_are_findings_on_their_line_a_warning_only_inside_the_window():
    brk = {"file": "/ws/model.py", "line": 17, "reason": "Unsupported function call", "detail": "print",
           "step": 0, "phase": "wait"}
    report = report_with({"compilations": [], "graph_breaks": [brk, dict(brk), {**brk, "line": 30, "phase": "active",
                                                                                 "step": 6}]})
    found = [f for f in find(report) if f["kind"] == "graph-break"]
    assert [(f["line"], f["severity"]) for f in found] == [(17, "info"), (30, "warning")]  # the repeat said once
    assert "before the window; the split graphs run in every step" in found[0]["observation"]
    assert "Unsupported function call (print)" in found[0]["observation"]


def test_no_compile_records_no_finding():
    assert not [f for f in find(report_with({})) if f["kind"] in ("recompilation", "graph-break")]
    report = report_with({})
    del report["compiled_code"]
    assert not [f for f in find(report) if f["kind"] in ("recompilation", "graph-break")]


def test_a_function_torch_skipped_is_a_warning_that_it_runs_eager_wherever_the_break_was():
    """torch 2.11's words on the H200 when Dynamo could not enter a context manager in a forward."""
    reason = ("Failed to handle graph break gracefully. Skipping the function and falling back to eager. "
              "Graph break encountered:")
    report = report_with({"compilations": [], "graph_breaks": [
        {"file": "/ws/compiled_mlp.py", "line": 31, "reason": reason, "detail": "Unsupported context manager",
         "step": 0, "phase": "wait"}]})
    (f,) = [f for f in find(report) if f["kind"] == "graph-break"]
    assert (f["file"], f["line"], f["severity"]) == ("/ws/compiled_mlp.py", 31, "warning")
    assert "runs it eager, every step" in f["observation"] and "Unsupported context manager" in f["observation"]
    assert "none of this function's code is compiled" in f["hypothesis"]
    assert f["figures"]["fallback"] is True
