"""Each tool's result: a short text and a structured document, in the presenters' words.

No figure is worded here: every sentence that states a figure comes from `analysis.present`,
`measurement.present` or `trying.present`, the words the CLI and the editor give it.

Invariants:
- A profile's summary leads with the step timed without the profiler where the run timed it, and
  says the profiled ms/step beside it as the profiled one, with the distortion; its structured
  result keeps them apart (`ms_per_step.unprofiled`, `ms_per_step.profiled`, `distortion`), so
  the profiled figure is never the only one named.
- A comparison is said by its verdict words (`measurement.present.verdict_words`), never by a
  bare "faster"; a structured `verdict` is the detailed one those words say (`verdict_of`: an
  inconclusive comparison is never "no detectable difference").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TOP_LINES = 5


def _run_dir_of_report(report: dict[str, Any], root: Path) -> Path | None:
    """The run folder a profile's report was written in: its traces' folder."""
    for trace in report.get("traces") or []:
        path = Path(trace if isinstance(trace, str) else (trace or {}).get("path", ""))
        if path.parent.parent == root / ".stepscope" / "runs":
            return path.parent
    return None


def profile_result(report: dict[str, Any], root: Path, *, run_dir: Path | None = None,
                   notes: list[str] | None = None) -> tuple[str, dict[str, Any]]:
    """The summary of a profile's (or an analysis's) report: (text, structured)."""
    from ..analysis.present import (distortion_text, finding_message, headline, line_label, machine_words, where)

    run_dir = run_dir or _run_dir_of_report(report, root)
    unprofiled = report.get("unprofiled") or {}
    # the headline leads with the step without the profiler where it was timed, naming the profiled figure
    # beside it; a trace alone has only the profiled figure, said as such
    lead = headline(report) if unprofiled else f"under the profiler: {headline(report)}"
    distortion = distortion_text(report)
    text = [lead] + ([distortion] if distortion else [])
    text.append(machine_words(report))
    lines = sorted(report.get("lines") or [], key=lambda line: -(line.get("wall_ms") or 0.0))[:TOP_LINES]
    if lines:
        text.append("top lines (profiled figures of the mean step):")
        text += [f"  {where(line.get('file'), line.get('line'), str(root))}  {line_label(line, report)}"
                 for line in lines]
    findings = report.get("findings") or []
    if findings:
        text.append(f"findings ({len(findings)}):")
        for finding in findings:
            message = finding_message(finding, report, str(root), surface="cli").replace("\n", "\n    ")
            text.append(f"  [{finding.get('severity')}] {finding.get('kind')} at "
                        f"{where(finding.get('file'), finding.get('line'), str(root))}\n    {message}")
    if run_dir is not None:
        text.append(f"run: {run_dir.name}")
    structured = {
        "run_id": run_dir.name if run_dir else None,
        "run_dir": str(run_dir) if run_dir else None,
        "ms_per_step": {"unprofiled": unprofiled.get("ms_per_step"), "profiled": report.get("ms_per_step")},
        "distortion": report.get("distortion"),
        "distortion_words": distortion,
        "headline": lead,
        "machine": machine_words(report),
        "top_lines": [{"file": line.get("file"), "line": line.get("line"), "wall_ms": line.get("wall_ms"),
                       "label": line_label(line, report)} for line in lines],
        "findings": [{"kind": f.get("kind"), "severity": f.get("severity"), "file": f.get("file"),
                      "line": f.get("line"), "observation": f.get("observation"),
                      "hypothesis": f.get("hypothesis"), "next_check": f.get("next_check")} for f in findings],
        "report": str(run_dir / "report.json") if run_dir else None,
        "notes": notes or [],
    }
    return "\n".join(t for t in text if t), structured


def measure_result(doc: dict[str, Any], *, notes: list[str] | None = None) -> tuple[str, dict[str, Any]]:
    """The summary of a measure document (`measure --json`): the CLI's text, and its figures."""
    from ..measurement.present import measurement_text, verdict_line, verdict_of, verdict_words

    run_dir = Path(doc["run_dir"]) if doc.get("run_dir") else None
    text = measurement_text(doc).rstrip("\n")
    if run_dir is not None:
        text += f"\nrun: {run_dir.name}"
    baseline = doc.get("baseline") or {}
    structured = {
        "run_id": run_dir.name if run_dir else None,
        "run_dir": str(run_dir) if run_dir else None,
        "ms_per_step_unprofiled": doc.get("median_ms"),
        "mean_ms": doc.get("mean_ms"),
        "iqr_ms": doc.get("iqr_ms"),
        "noisy": doc.get("noisy"),
        "passes": len(doc.get("raw_ms") or []),
        # the detailed verdict (inconclusive is not "no detectable difference"), as the words say it
        "verdict": verdict_of(doc)[0] if doc.get("verdict") else None,
        "verdict_words": verdict_words(doc) if doc.get("verdict") else None,
        "verdict_line": verdict_line(doc) if doc.get("verdict") else None,
        "ratio": doc.get("ratio"),
        "baseline": baseline.get("label") or baseline.get("run") if baseline else None,
        "values_check": doc.get("values_check"),
        "notes": list(doc.get("notes") or []) + (notes or []),
    }
    return text, structured


def try_result(doc: dict[str, Any], *, notes: list[str] | None = None) -> tuple[str, dict[str, Any]]:
    """The summary of a try document (`try --json`): the CLI's text, and each try's verdict."""
    from ..measurement.present import verdict_of, verdict_words
    from ..trying.present import beside_baseline, headline, try_text

    structured = {
        "best": doc.get("best"),
        "tries": [{"name": e.get("name"), "run_id": e.get("run"), "run_dir": e.get("run_dir"),
                   "verdict": verdict_of(e)[0] if e.get("verdict") else None,
                   "verdict_words": verdict_words(e) if e.get("verdict") else None, "saves": e.get("saves"), "results_changed": e.get("results_changed"),
                   "headline": headline(beside_baseline(e, doc.get("baseline"))), "applicable": e.get("applicable")}
                  for e in doc.get("tries") or []],
        "notes": notes or [],
    }
    return try_text(doc).rstrip("\n"), structured


def runs_list_result(doc: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    from ..measurement.present import runs_table

    return runs_table(doc.get("runs") or []).rstrip("\n"), doc


def runs_show_result(doc: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    from ..measurement.present import machine_label, run_summary, step_label

    row = doc.get("run") or {}
    lines = [f"{row.get('id')}  ({row.get('kind')}, {row.get('status')})",
             f"  step     {step_label(row.get('script'), row.get('step_line'), row.get('step_function'))}",
             f"  result   {run_summary(row)}",
             f"  machine  {machine_label(row.get('machine'))}",
             f"  folder   {row.get('run_dir')}"]
    return "\n".join(lines), doc


def runs_compare_result(doc: dict[str, Any], root: Path) -> tuple[str, dict[str, Any]]:
    from ..analysis.present import compare_runs_text
    from ..measurement.present import comparison_text

    text = comparison_text(doc) if "no_verdict" not in doc else f"no verdict: {doc['no_verdict']}\n"
    if doc.get("statements") is not None:
        text += "\n" + compare_runs_text({**doc["statements"], "lines": doc.get("lines") or []}, str(root))
    return text.rstrip("\n"), doc


def _where(item: dict[str, Any]) -> str:
    cell = f":cell {item['cell']}" if item.get("cell") else ""
    line = f":{item['line']}" if item.get("line") else ""
    return f"{item.get('path')}{cell}{line}"


def check_result(doc: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`check --format json`'s document: one line per diagnostic, as `path:line: CODE message`
    (`path:cell N:line: ...` in a notebook, the line counted in that cell)."""
    diagnostics = doc.get("diagnostics") or []
    lines = [f"{_where(d)}: {d.get('code')} {d.get('message')}" for d in diagnostics]
    lines.append(f"{len(diagnostics)} problem{'' if len(diagnostics) == 1 else 's'} in "
                 f"{doc.get('files_checked')} file(s) checked")
    return "\n".join(lines), doc
