"""Text rendering of a report (for `stepscope analyze` and `stepscope profile`).

Pure function of the report dict: headline (ms/step and the machine it came from, and whether the
step runs torch.compile'd code when the run recorded it), the per-line table sorted by wall time,
the inputs and memory of the top lines (when recorded), regions, findings, and what was not
observed. A trace without step markers has no ms/step: its headline names the window and its
figures are per window.

Layout only: how each figure is rounded and worded (ms, the machine, the headline) comes from
present.py, which the editor's surfaces use too.
"""

from __future__ import annotations

from ..textsafe import printable
from . import present

_fmt_ms = present.ms_table
_short = present.short_path
_bytes_text = present.bytes_text

MAX_ROWS = 30
MAX_STEPS_SHOWN = 10


def render_ranks(report: dict) -> list[str]:
    """The per-rank table of a folder of rank traces (nothing for one trace): rank, ms/step, steps,
    GPU ms, time in collectives (comm: GPU kernels, or host operations when only those were seen), the
    rank the others wait for marked (or, without collectives, the slowest), and whose figures the rest
    of the report shows."""
    ranks = report.get("ranks") or []
    if not ranks:
        return []
    headline = ranks[0]
    whose = f"rank {headline['rank']}" if headline.get("rank") is not None else printable(headline["trace"])
    # ranks without step markers are compared by their window: show what was compared
    measure, title = ("ms_per_step", "ms/step") if any(r.get("ms_per_step") is not None for r in ranks) \
        else ("window_ms", "window ms")
    # comm: the time in collectives the rank the others wait for was read from (GPU kernels, else host ops)
    by = (report.get("rank_wait") or {}).get("by")
    if by is None and not any(r.get("collective_ms") for r in ranks) and any(r.get("host_collective_ms") for r in ranks):
        by = "host"
    comm, comm_title = ("host_collective_ms", "host comm ms") if by == "host" else ("collective_ms", "comm ms")
    marked = "waited for" if report.get("rank_wait") else "slowest"
    out = [f"ranks ({len(ranks)} traces; the figures below are {whose}'s):",
           f"  {'rank':>6} {title:>10} {'steps':>6} {'gpu ms':>9} {comm_title:>12}"]
    for r in ranks:
        ms = "no steps" if r.get(measure) is None else f"{r[measure]:.3f}"
        rank = "?" if r.get("rank") is None else str(r["rank"])
        mark = f"  <- {marked}" if r.get("slowest") else ""
        out.append(f"  {rank:>6} {ms:>10} {r.get('steps', 0):>6} {_fmt_ms(r.get('gpu_ms')):>9} "
                   f"{_fmt_ms(r.get(comm)):>12}{mark}")
    return out


def render_nodes(report: dict) -> list[str]:
    """Where the ranks ran (nothing for one node or one trace): each node's ranks, the ms/step of its
    rank with the longest step, how late its latest rank starts the collectives the ranks share, and its clock's offset;
    then one line on the clocks."""
    nodes = report.get("nodes") or []
    out = []
    if len(nodes) > 1:
        out += [f"nodes ({len(nodes)}; each figure is one of its ranks' own):",
                f"  {'node':>8} {'host':>12} {'ranks':>10} {'ms/step':>10} {'late ms':>9} {'clock us':>9}"]
        for n in nodes:
            ranks = ",".join("?" if r is None else str(r) for r in n["ranks"])
            ms = "-" if n.get("ms_per_step") is None else f"{n['ms_per_step']:.3f}"
            offset = "n/a" if n.get("clock_offset_us") is None else f"{n['clock_offset_us']:+.1f}"
            node, host = printable(str(n["node"]), 8), printable(str(n.get("host") or "-"), 12)
            out.append(f"  {node:>8} {host:>12} {ranks:>10} {ms:>10} {_fmt_ms(n.get('late_ms')):>9} {offset:>9}")
    clocks = report.get("clocks")
    if clocks and (len(nodes) > 1 or clocks["method"] != "one host"):
        out.append("clocks: " + printable(present.clocks_text(clocks)))
    return out


# markers of compiled code in the window's trace (agent/compiled.py), by how closely one occurrence is
# one call of compiled code: a compiled frame's region, else its AOTAutograd function, else dynamo's guard check
_COMPILED_CALL_MARKERS = ("Torch-Compiled Region", "CompiledFunction", "TorchDynamo Cache Lookup")


def _as_dict(value) -> dict:
    """A record's sub-record, or {} when it is missing or not an object (the record is read, not trusted)."""
    return value if isinstance(value, dict) else {}


def render_torch_compile(report: dict) -> str | None:
    """One line on torch.compile from the scenario record, or None when there is nothing to say.

    Said only from `scenario.torch_compile`: the step ran compiled code (with the compiled regions per
    step when the trace's markers count them, and any compilation inside the window, which the step's
    time then includes), or compiled objects sat in the step's frame while the step ran none. Nothing
    when the record is absent, malformed, or cannot tell (`compiled_step` null)."""
    record = _as_dict(_as_dict(report.get("scenario")).get("torch_compile"))
    objects = record.get("compiled_objects") if isinstance(record.get("compiled_objects"), list) else []
    objects = [o["name"] for o in objects if isinstance(o, dict) and o.get("name")]
    if record.get("compiled_step") is True:
        line = "torch.compile: the step runs compiled code"
        per = "step" if report.get("ms_per_step") is not None else "window"
        n = len(report.get("steps") or []) or 1
        markers = _as_dict(record.get("trace_markers"))
        counts = [markers.get(m) for m in _COMPILED_CALL_MARKERS]
        count = next((c for c in counts if isinstance(c, int) and c > 0), None)
        if count is not None:
            regions = round(count / n, 1)
            line += f" ({regions:g} compiled region{'' if regions == 1 else 's'} per {per})"
        during = _as_dict(_as_dict(record.get("dynamo")).get("during_window")).get("frames_compiled")
        if isinstance(during, int) and during > 0:
            line += f"; dynamo compiled {during} frame(s) inside the window, so its step times include compiling"
        return line
    if record.get("compiled_step") is False and objects:
        return (f"torch.compile: compiled objects in the step's frame ({printable(', '.join(map(str, objects)))}), "
                "but the step ran no compiled code in the window")
    return None


def render_text(report: dict) -> str:
    out: list[str] = []
    steps = report.get("steps", [])
    per = present.per(report)
    out.append(present.headline(report))
    distortion = present.distortion_text(report)
    if distortion:
        out.append(distortion)
    out.append(f"measured on: {printable(present.machine_label(report.get('machine', {})))}")
    compiled = render_torch_compile(report)
    if compiled:
        out.append(compiled)
    definition = present.step_definition_text(report)
    if definition:
        out.append(f"the step: {printable(definition)}")
    contents = report.get("step_contents")
    if contents:
        out.append(f"the step contains: {printable(contents['summary'])} ({printable(contents['kind'])})")
    values = [s["ms"] for s in steps]
    if not values:
        pass
    elif len(values) <= MAX_STEPS_SHOWN:
        out.append("steps (ms): " + ", ".join(f"{v:.3f}" for v in values))
    else:
        shown = ", ".join(f"{v:.3f}" for v in values[:MAX_STEPS_SHOWN])
        out.append(f"steps (ms): {shown}, ... ({len(values)} steps; min {min(values):.3f}, max {max(values):.3f})")
    startup = present.startup_text(report.get("startup"))
    if startup:
        out.append(startup)
    out.extend(render_ranks(report))
    out.extend(render_nodes(report))
    out.append(printable(present.gpu_text(report.get("gpu"))))

    root = report.get("source_root")
    lines = report.get("lines") or []
    out.extend(render_time_split(report))
    out.append("")
    if lines:
        out.append(f"per line, {present.per_words(report)} (wall = union of intervals; n/o = not observed):")
        header = f"{'file:line':<40} {'prec':<8} {'wall ms':>9} {'self ms':>9} {'gpu ms':>9} {'bwd ms':>9} {'bwd gpu':>9} {'kern':>5} {'sync ms':>8}"
        out.append(header)
        holders = False
        for row in lines[:MAX_ROWS]:
            where = printable(f"{_short(row['file'], root)}:{row['line']}")
            if _holds_lines(row):
                where, holders = where[-39:] + "*", True
            out.append(
                f"{where[-40:]:<40} {row['precision']:<8} {row['wall_ms']:>9.3f} {present.self_ms(row):>9.3f} "
                f"{_fmt_ms(row['gpu_ms']):>9} {_fmt_ms(row['backward_ms']):>9} {_fmt_ms(row.get('backward_gpu_ms')):>9} {row['kernels']:>5} "
                f"{row['sync_ms']:>8.3f}"
            )
        if len(lines) > MAX_ROWS:
            out.append(f"... {len(lines) - MAX_ROWS} more lines (see --json)")
        if holders:
            out.append("* holds other timed lines (a with/for/if block, or the step function's def line): its wall "
                       "includes theirs; its self time is its own")
        def_line = present.def_line_text(report)
        if def_line:
            out.append(printable(def_line))
        costly = [row for row in lines[:MAX_ROWS] if (row.get("profiler_ms_estimate") or 0) > 0]
        if costly:
            top = max(costly, key=lambda row: row["profiler_ms_estimate"])
            amount = ("where most of the line's time may be the profiler's (the estimate reaches its whole wall time)"
                      if present.estimate_at_cap(top) else f"~{present.ms_short(top['profiler_ms_estimate'])} ms per {per}")
            out.append(f"the profiler's own cost, an estimate per line from its operators and kernels (--json: "
                       f"profiler_ms_estimate): most at {_short(top['file'], root)}:{top['line']}, {amount}")
    else:
        out.append("no per-line figures")
    out.extend(render_compiled_code(report))
    out.extend(render_op_details(report))
    regions = report.get("regions") or []
    if regions:
        out.append("")
        has_own = any(r.get("own_ms") is not None for r in regions)
        if has_own:  # a region that wraps other work (an optimizer's step around its closure) by what it does
            out.append(f"regions, {present.per_words(report)} (own = wall without the lines, regions and backward "
                       "inside it), by own time:")
            regions = sorted(regions, key=lambda r: (-(r.get("own_ms") or 0.0), -r["wall_ms"], r["label"]))
        else:
            out.append(f"regions, {present.per_words(report)}:")
        for r in regions[:MAX_ROWS]:
            own = f"own {r['own_ms']:>9.3f} ms   " if has_own else ""
            out.append(f"  {printable(_region_name(r, root), 50):<50} {own}wall {r['wall_ms']:>9.3f} ms   "
                       f"gpu {_fmt_ms(r['gpu_ms']):>9} ms")
    findings = report.get("findings") or []
    if findings:
        out.append("")
        out.append("findings:")
        for f in findings:
            where = f" ({printable(_short(f.get('file'), root))}:{f.get('line')})" if f.get("file") else ""
            out.append(f"  [{f['kind']}]{where} {printable(f['observation'])}")
            out.append(f"      hypothesis: {printable(f['hypothesis'])}")
            out.append(f"      next check: {printable(f['next_check'])}")
    notes = report.get("notes") or []
    if notes:
        out.append("")
        out.append("not observed / limits:")
        for n in notes:
            out.append(f"  - {printable(n)}")
    return "\n".join(out) + "\n"


def _holds_lines(row: dict) -> bool:
    """A line whose wall time is mostly other timed lines nested in it (its self time is under half)."""
    return row.get("precision") == "exact" and row["wall_ms"] > 0 and row["cpu_self_ms"] < 0.5 * row["wall_ms"]


def render_time_split(report: dict) -> list[str]:
    """Where the step's time goes by whose code runs (the report's `time_split`): each part with its ms
    and share; nothing without it."""
    rows = present.time_split_rows(report)
    if not rows:
        return []
    basis = present.basis_words(report)
    out = ["", f"whose code the time runs in, {present.per_words(report)} (each moment once; shares of {basis}):"]
    width = min(90, max(len(printable(name)) for name, _, _ in rows))
    for name, ms, share in rows:
        text = printable(name)
        text = text if len(text) <= width else text[:width - 1] + "…"
        out.append(f"  {text:<{width}} {ms:>9.3f} ms {present.share_percent(share) if share is not None else '':>5}")
    return out


# -- compiled code (torch.compile) ----------------------------------------------------------------
def render_compiled_code(report: dict) -> list[str]:
    """How much of the compiled graphs' work reached their lines, and which lines share fused kernels
    (nothing when the window ran no compiled graph)."""
    record = _as_dict(report.get("compiled_code"))
    if not record.get("graphs_called"):
        return []
    per = present.per(report)
    out = [""]
    if record.get("source"):
        text = (f"compiled code ({record['source']}, torch {record.get('torch') or '?'}): "
                f"{record.get('kernel_calls_attributed_per_step', 0):g} of {record.get('kernel_calls_per_step', 0):g} "
                f"generated kernel calls per {per} on their lines")
        if record.get("replayed_kernels_per_step"):
            text += (f"; {record.get('replayed_kernels_attributed_per_step', 0):g} of "
                     f"{record['replayed_kernels_per_step']:g} kernels replayed from CUDA graphs")
        out.append(text + " (precision `compiled`; the calling line keeps the whole graph too)")
    else:
        out.append(f"compiled code: {record['graphs_called']} compiled graph(s) ran without provenance records: "
                   "their kernels stay on the calling line")
    root = report.get("source_root")
    for row in (report.get("lines") or [])[:MAX_ROWS]:
        fused = present.fused_words(row)
        if fused:
            out.append(f"  {_short(row['file'], root)}:{row['line']} {fused}: shared "
                       f"{_fmt_ms(_as_dict(row.get('compiled')).get('shared_gpu_ms') if row.get('gpu_ms') is not None else _as_dict(row.get('compiled')).get('shared_ms'))} ms "
                       "shown on each (not added up)")
    return out


# -- inputs and memory per line (--shapes / --memory) ---------------------------------------------
MAX_DETAIL_LINES = 8
MAX_OP_TEXT = 90
# input types that are not tensors: their (empty) dims say nothing about the op's size
def _calls_text(calls: float) -> str:
    return f"×{calls:g}"


def render_op_details(report: dict) -> list[str]:
    """Inputs and memory of the top lines, when the trace recorded them (nothing otherwise).

    For each of the first `MAX_DETAIL_LINES` rows of the per-line table that has something to show:
    its outermost ops with the shapes of their tensor inputs, calls and time per step
    (`aten::linear [64, 768], [512, 768], [512] ×1  0.730 ms`), and the memory allocated per step
    while it ran with the peak level seen meanwhile. Lines with `shapes`/`alloc_bytes` null (not
    recorded) show nothing; a recorded 0 is shown.
    """
    lines = report.get("lines") or []
    has_shapes = any(row.get("shapes") is not None for row in lines)
    has_memory = any(row.get("alloc_bytes") is not None for row in lines)
    if not (has_shapes or has_memory):
        return []
    per = present.per(report)
    legend = []
    if has_shapes:
        legend.append(f"op [tensor input shapes] ×calls, ms per {per}")
    if has_memory:
        device = next((row.get("memory_device") for row in lines if row.get("memory_device")), None)
        legend.append(f"{device + ' ' if device else ''}memory allocated per {per} while the line ran, peak level")
    out = ["", f"inputs and memory of the top lines ({'; '.join(legend)}):"]
    root = report.get("source_root")
    shown = [row for row in lines if row.get("shapes") or row.get("alloc_bytes") is not None][:MAX_DETAIL_LINES]
    width = max((len(_op_text(op)) for row in shown for op in row.get("shapes") or []), default=0)
    for row in shown:
        where = printable(f"{_short(row['file'], root)}:{row['line']}")
        memory = ""
        if row.get("alloc_bytes") is not None:
            memory = f"alloc {_bytes_text(row['alloc_bytes'])}, peak {_bytes_text(row.get('peak_bytes'))}"
        out.append(f"  {where[-40:]:<40} {memory}".rstrip())
        for op in row.get("shapes") or []:
            out.append(f"      {_op_text(op):<{width}} {op['ms']:>9.3f} ms")
    return out


def _op_text(op: dict) -> str:
    inputs = present.input_shapes_text(op.get("shapes"), op.get("types"))
    text = " ".join(part for part in (printable(op["op"]), inputs, _calls_text(op["calls"])) if part)
    return text if len(text) <= MAX_OP_TEXT else text[:MAX_OP_TEXT - 3] + "..."


def _region_name(region: dict, root: str | None) -> str:
    return present.region_name(region["label"], region.get("file"), region.get("line"), root)
