"""Steps, attribution to lines, the report and findings: pure functions over the trace model.

Public API: `report.analyze(paths, *, source_root=None, run_dir=None) -> dict`,
`render.render_text(report) -> str`, `findings.find(report) -> list[dict]`.
See docs/trace-engine.md.
"""
