"""A run's report, shaped for the editor: one entry per source line with a short label.

Pure: report dict in, plain dicts out (the `stepscope.profile` command's result contract in
docs/extension.md). Only lines of files inside the workspace root are returned.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _fmt_ms(ms: float) -> str:
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    return f"{ms:.2f}"


def machine_summary(report: dict[str, Any]) -> str:
    m = report.get("machine") or {}
    device = m.get("device") or ", ".join(m.get("devices") or []) or "unknown device"
    torch_v = m.get("torch")
    return f"{device}" + (f", torch {torch_v}" if torch_v else "")


def line_label(line: dict[str, Any], ms_per_step: float | None) -> str:
    label = f"{_fmt_ms(line['wall_ms'])} ms/step"
    if ms_per_step:
        label += f" · {100 * line['wall_ms'] / ms_per_step:.0f}%"
    gpu = line.get("gpu_ms")
    if gpu is not None and gpu > 0:
        label += f" · GPU {_fmt_ms(gpu)} ms"
    if line.get("backward_ms"):
        label += f" · bwd {_fmt_ms(line['backward_ms'])} ms"
    return label


def editor_lines(report: dict[str, Any], root: Path) -> list[dict[str, Any]]:
    root = Path(root).resolve()
    ms = report.get("ms_per_step") or None
    out = []
    for line in report.get("lines", []):
        path = Path(line["file"]).resolve()
        if root != path and root not in path.parents:
            continue  # never point the editor at files outside the workspace
        out.append({
            "uri": path.as_uri(),
            "line": int(line["line"]) - 1,
            "wallMs": line["wall_ms"],
            "gpuMs": line.get("gpu_ms"),
            "fraction": min(1.0, line["wall_ms"] / ms) if ms else 0.0,
            "precision": line.get("precision", "exact"),
            "label": line_label(line, ms),
        })
    return out


def profile_result(report: dict[str, Any], run_dir: Path, root: Path) -> dict[str, Any]:
    ms = report.get("ms_per_step")
    machine = machine_summary(report)
    summary = f"{_fmt_ms(ms)} ms/step on {machine}" if ms is not None else f"no steady step measured on {machine}"
    return {
        "runDir": str(run_dir),
        "msPerStep": ms,
        "machine": machine,
        "summary": summary,
        "lines": editor_lines(report, root),
        "findings": report.get("findings", []),
    }
