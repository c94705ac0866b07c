"""Text rendering of a report (for `stepscope analyze` and `stepscope profile`).

Pure function of the report dict: headline (ms/step and the machine it came from), the per-line
table sorted by wall time, regions, findings, and what was not observed. A trace without step
markers has no ms/step: its headline names the window and its figures are per window.
"""

from __future__ import annotations

from pathlib import Path

MAX_ROWS = 30
MAX_STEPS_SHOWN = 10


def _fmt_ms(v: float | None) -> str:
    return "n/o" if v is None else f"{v:.3f}"


def _machine_name(machine: dict) -> str:
    parts = [str(machine.get("device") or "unknown device")]
    if machine.get("host"):
        parts.append(f"host {machine['host']}")
    if machine.get("rank") is not None:
        parts.append(f"rank {machine['rank']}")
    parts.append(f"from the {machine.get('source', 'trace')}")
    return ", ".join(parts)


def _short(path: str | None, root: str | None) -> str:
    if not path:
        return "-"
    if root:
        try:
            return Path(path).relative_to(root).as_posix()
        except ValueError:
            pass
    return path


def _headline(report: dict) -> str:
    if report.get("ms_per_step") is None:
        window_ms = (report.get("window") or {}).get("ms") or 0.0
        return f"no step markers (ProfilerStep#N): one window of {window_ms:.3f} ms, no ms/step"
    headline = f"{report['ms_per_step']:.3f} ms/step (median of {len(report.get('steps', []))} active steps)"
    if report.get("samples_per_s") is not None:
        headline += f", {report['samples_per_s']:.1f} samples/s"
    return headline


def render_text(report: dict) -> str:
    out: list[str] = []
    steps = report.get("steps", [])
    per = "window" if report.get("ms_per_step") is None else "step"
    out.append(_headline(report))
    out.append(f"measured on: {_machine_name(report.get('machine', {}))}")
    contents = report.get("step_contents")
    if contents:
        out.append(f"the step contains: {contents['summary']} ({contents['kind']})")
    values = [s["ms"] for s in steps]
    if not values:
        pass
    elif len(values) <= MAX_STEPS_SHOWN:
        out.append("steps (ms): " + ", ".join(f"{v:.3f}" for v in values))
    else:
        shown = ", ".join(f"{v:.3f}" for v in values[:MAX_STEPS_SHOWN])
        out.append(f"steps (ms): {shown}, ... ({len(values)} steps; min {min(values):.3f}, max {max(values):.3f})")
    startup = report.get("startup") or {}
    if startup.get("to_first_step_ms") is not None:
        first = ", ".join(f"{v:.1f}" for v in startup.get("first_steps_ms") or [])
        out.append(f"start-up (separate from the window): {startup['to_first_step_ms']:.1f} ms to the first step"
                   + (f"; first steps {first} ms" if first else ""))
    ranks = report.get("ranks") or []
    if ranks:
        per_rank = ", ".join(f"rank {r['rank']}: " + ("no step markers" if r.get("ms_per_step") is None
                                                       else f"{r['ms_per_step']:.3f}") for r in ranks)
        out.append(f"ranks (ms/step): {per_rank}; figures below are rank {report['machine'].get('rank')}'s")
    gpu = report.get("gpu") or {}
    out.append("GPU: observed" if gpu.get("observed") else f"GPU: not observed ({gpu.get('reason')})")

    root = report.get("source_root")
    lines = report.get("lines") or []
    out.append("")
    if lines:
        out.append(f"per line, per {per} (wall = union of intervals; n/o = not observed):")
        header = f"{'file:line':<40} {'prec':<8} {'wall ms':>9} {'self ms':>9} {'gpu ms':>9} {'bwd ms':>9} {'kern':>5} {'sync ms':>8}"
        out.append(header)
        for row in lines[:MAX_ROWS]:
            where = f"{_short(row['file'], root)}:{row['line']}"
            out.append(
                f"{where[-40:]:<40} {row['precision']:<8} {row['wall_ms']:>9.3f} {row['cpu_self_ms']:>9.3f} "
                f"{_fmt_ms(row['gpu_ms']):>9} {_fmt_ms(row['backward_ms']):>9} {row['kernels']:>5} {row['sync_ms']:>8.3f}"
            )
        if len(lines) > MAX_ROWS:
            out.append(f"... {len(lines) - MAX_ROWS} more lines (see --json)")
    else:
        out.append("no per-line figures")
    regions = report.get("regions") or []
    if regions:
        out.append("")
        out.append(f"regions, per {per}:")
        for r in regions[:MAX_ROWS]:
            out.append(f"  {r['label'][:50]:<50} wall {r['wall_ms']:>9.3f} ms   gpu {_fmt_ms(r['gpu_ms']):>9} ms")
    findings = report.get("findings") or []
    if findings:
        out.append("")
        out.append("findings:")
        for f in findings:
            where = f" ({_short(f.get('file'), root)}:{f.get('line')})" if f.get("file") else ""
            out.append(f"  [{f['kind']}]{where} {f['observation']}")
            out.append(f"      hypothesis: {f['hypothesis']}")
            out.append(f"      next check: {f['next_check']}")
    notes = report.get("notes") or []
    if notes:
        out.append("")
        out.append("not observed / limits:")
        for n in notes:
            out.append(f"  - {n}")
    return "\n".join(out) + "\n"
