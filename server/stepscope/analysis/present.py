"""Every figure of a report in words: the one place that decides how a figure is rounded and said.

The CLI text (render.py), and in the editor the inline label of a line, its hover, the status bar
and the run summary (lsp/), all take their strings from here, so one figure reads the same on every
surface, and changing how a figure is defined or worded is an edit in one place. Pure functions of
a report (or one of its parts, see model.py); no I/O, no state.

Definitions said here once (docs/figures.md says them to users):
- ms/step, the headline (status bar, run summary, first line of the text), is the report's
  `ms_per_step`: the median of the active steps' elapsed times (steps.py). A report without step
  markers has none; its figures are per window.
- every other figure "per step" (a line's wall, self, GPU, backward and sync time, a region's, an
  operator's, a finding's) is a total over the active window divided by its steps: a figure of the
  mean step. The steps tile the window, so the mean step is the window's length over its steps
  (`window.mean_step_ms`); a union of intervals inside the window never exceeds it.
- a share (`share_of`) is a figure over that mean step (`share_basis`), or over the window for a
  report without steps, so no share of a figure that lies inside the window can exceed 100%, and
  shares of lines that do not nest add up to at most 100%. Where a share is shown, its basis is
  named ("of the mean step"). The heat of an inline label is the line's share.
- by construction here, whatever a figure holds: every share any surface says (`share_percent`,
  `bounded_share`; the findings' too) lies in 0..100%, and a line's CPU self time is said as at most
  its wall time (`self_ms`). The analysis clips every interval to the window, so these bounds only
  ever hold back a figure of time that was not the window's (tests/analysis/invariants.py checks the
  figures themselves).
- the machine a figure came from is `machine_label`: device, host and rank when known, and whether
  the description came from the run's record or from the trace.
- the profiler's distortion is profiled ms/step over the median of the steps timed without the
  profiler after the window, in the same process (`distortion_text`): a median over a median, so
  both are said as ms/step, and not as the profiler's cost where the two sides' step times overlap;
  a line's share of it is an estimate, never more than the line's wall time, and always said so
  (`profiler_cost_text`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..agent.protocol import CLOSURE_LABEL, parse_label
from ..textsafe import NAME_LIMIT, printable
from .distortion import window_overlap
from .line_calls import call_duration

NOT_OBSERVED = "n/o"  # a figure whose events were not observed (never shown as 0)


# -- numbers ----------------------------------------------------------------------------------------
def ms_table(ms: float | None) -> str:
    """Milliseconds in the CLI's tables: three decimals, `n/o` when not observed."""
    return NOT_OBSERVED if ms is None else f"{ms:.3f}"


def ms_short(ms: float) -> str:
    """Milliseconds in the editor: three significant figures or so (`0.42`, `12.3`, `148`)."""
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    return f"{ms:.2f}"


def share_basis(report: dict[str, Any]) -> float | None:
    """What a share is a share of, in ms: the mean active step (`window.mean_step_ms`; for a report
    written without it, the mean of its steps), or the window for a report without steps."""
    window = report.get("window") or {}
    if report.get("ms_per_step") is None:
        return window.get("ms") or None
    mean = window.get("mean_step_ms")
    if mean is None:
        steps = [s.get("ms") for s in report.get("steps") or [] if isinstance(s.get("ms"), (int, float))]
        mean = sum(steps) / len(steps) if steps else None
    return mean or None


def basis_words(report: dict[str, Any]) -> str:
    """`the mean step`, or `the window` for a report without steps: what shares are of; `the profiled
    mean step` where the headline is the step without the profiler (`unprofiled_ms`)."""
    if report.get("ms_per_step") is None:
        return "the window"
    return "the mean step" if unprofiled_ms(report) is None else "the profiled mean step"


def share_of(ms: float | None, report: dict[str, Any]) -> float | None:
    """The share of the mean step (or of the window) that `ms`, a per-step (per-window) figure, is;
    None when either is unknown."""
    basis = share_basis(report)
    if ms is None or not basis:
        return None
    return bounded_share(ms / basis)


def bounded_share(share: float) -> float:
    """A share as every surface says it: within 0..1 (a figure is of time inside the window, which
    its basis is the whole of)."""
    return min(1.0, max(0.0, share))


def self_ms(line: dict[str, Any]) -> float:
    """A line's CPU self time as every surface says it: never more than its wall time (its self
    intervals lie inside its wall intervals)."""
    return min(line["cpu_self_ms"], line["wall_ms"])


def busiest_share(line: dict[str, Any], report: dict[str, Any]) -> float | None:
    """The larger of the line's CPU wall and its GPU time as a share of the mean step (`share_of`):
    a line whose kernels are replayed from a CUDA graph has no CPU time of its own, yet may keep the
    GPU busy for a tenth of the step. None when no share can be taken."""
    shares = [s for s in (share_of(line.get("wall_ms"), report), share_of(line.get("gpu_ms"), report))
              if s is not None]
    return max(shares) if shares else None


def worth_a_label(line: dict[str, Any], report: dict[str, Any], min_share: float) -> bool:
    """Whether a line gets an inline label: its CPU wall or its GPU time is at least `min_share` of
    the mean step (or of the window; `busiest_share`). Lines below it are noise at a glance; their
    hover still has the figures. Where no share can be taken, every line."""
    share = busiest_share(line, report)
    return share is None or share >= min_share


def share_percent(share: float) -> str:
    """`24%`: a share, bounded to 0..100% (`bounded_share`)."""
    return f"{100 * bounded_share(share):.0f}%"


def bytes_text(n: int | None) -> str:
    """Bytes as every surface says them: binary units with two decimals (`4.00 MiB`, `512 B`), `n/o`
    when not recorded (never 0)."""
    if n is None:
        return NOT_OBSERVED
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


# -- inputs and memory (--shapes / --memory) -------------------------------------------------------
#: argument types torch records for inputs that are not tensors (their dims are recorded empty)
NOT_TENSOR_TYPES = frozenset({"", "Scalar", "ScalarList", "GenericList", "None", "Device", "Layout", "ScalarType",
                              "MemoryFormat", "String"})
#: the mark of an op that had no tensor input (a table cell must say something: not "not recorded")
NO_TENSOR_INPUT = "—"


def dims_text(dims: list) -> str:
    """`[256, 512]`: one tensor's shape (a tensor list's shapes nested: `[[2, 3], [4]]`)."""
    return "[" + ", ".join(dims_text(d) if isinstance(d, list) else str(d) for d in dims) + "]"


def input_shapes_text(dims: list | None, types: list | None) -> str:
    """`[256, 512], [512]`: the shapes of an op's tensor inputs, in order, as every surface writes
    them; a 0-dim tensor is `[]`; scalars, None and other non-tensor arguments are left out (empty
    when the op had no tensor input). `types` is torch's `Input type`; without it, an input with
    no dims is taken as a non-tensor."""
    shown = []
    for i, d in enumerate(dims or []):
        kind = types[i] if types is not None and i < len(types) else None
        if not isinstance(d, list):
            continue
        if d or (kind is not None and kind not in NOT_TENSOR_TYPES):
            shown.append(dims_text(d))
    return ", ".join(shown)


def memory_recorded(report: dict[str, Any]) -> bool:
    """Whether the run recorded memory (`--memory`): a line's `alloc_bytes` is then a number (0
    included), never null."""
    return any(line.get("alloc_bytes") is not None for line in report.get("lines") or [])


def memory_words(line: dict[str, Any], report: dict[str, Any]) -> str | None:
    """`4.00 MiB allocated per step while it ran (frees not subtracted); peak 1.20 GiB of host memory
    in use while it ran`: a line's memory figures (op_details.py defines them), or None where memory
    was not recorded (said nowhere per line: not recorded is not 0)."""
    allocated = line.get("alloc_bytes")
    if allocated is None:
        return None
    device = line.get("memory_device")
    words = f"{bytes_text(allocated)} allocated per {per(report)} while it ran (frees not subtracted)"
    peak = line.get("peak_bytes")
    if peak is not None:
        words += f"; peak {bytes_text(peak)}{' of ' + device + ' memory' if device else ''} in use while it ran"
    return words


def shape_rows(line: dict[str, Any], report: dict[str, Any]) -> list[str]:
    """The hover's `**Input shapes**` list: a line's outermost ops grouped by their tensor inputs'
    shapes (`aten::linear` [64, 768], [512, 768], [512] ×1 · 0.73 ms); nothing when shapes were not
    recorded or the line called no op with recorded inputs."""
    groups = [g for g in line.get("shapes") or [] if isinstance(g, dict)]
    if not groups:
        return []
    unit = per(report)
    rows = ["", f"**Input shapes** (calls per {unit} × time per {unit}, by operator and input shapes):"]
    for group in groups:
        name = str(group.get("op", ""))
        if len(name) > HOVER_NAME_CHARS:
            name = name[:HOVER_NAME_CHARS - 1] + "…"
        inputs = input_shapes_text(group.get("shapes"), group.get("types")) or NO_TENSOR_INPUT
        calls = group.get("calls") or 0
        count = f"{calls:g}" if calls >= 1 else f"{calls:.2f}"
        rows.append(f"- `{md_code(name)}` {md_text(inputs)} ×{count} · {ms_short(group.get('ms') or 0.0)} ms")
    return rows


# -- where and on what ------------------------------------------------------------------------------
def machine_label(machine: dict[str, Any] | None) -> str:
    """`NVIDIA H200, host gpu-3, rank 1, from the scenario`: the machine, on every surface."""
    machine = machine or {}
    parts = [str(machine.get("device") or "unknown device")]
    if machine.get("host"):
        parts.append(f"host {machine['host']}")
    if machine.get("rank") is not None:
        parts.append(f"rank {machine['rank']}")
    parts.append(f"from the {machine.get('source', 'trace')}")
    return ", ".join(parts)


def machine_words(report: dict[str, Any]) -> str:
    """`measured on gpu-3 (NVIDIA H200)`: the machine inside a finding's observation (guide §13)."""
    machine = report.get("machine") or {}
    device = machine.get("device") or "no device named"
    host = machine.get("host")
    if host:
        return f"measured on {host} ({device})"
    if machine.get("devices"):
        return f"measured on {device}"
    return "measured on a machine the trace does not name"


def machine_build(machine: dict[str, Any] | None) -> str | None:
    """`torch 2.13.0+cu130, CUDA 13.0`: the software build the figures came from, when recorded."""
    machine = machine or {}
    parts = []
    if machine.get("torch"):
        parts.append(f"torch {machine['torch']}")
    if machine.get("cuda_build"):
        parts.append(f"CUDA {machine['cuda_build']}")
    elif machine.get("hip_build"):
        parts.append(f"HIP {machine['hip_build']}")
    if machine.get("driver"):
        parts.append(f"driver {machine['driver']}")
    return ", ".join(parts) or None


def where(file: str | None, line: int | None, root: str | None) -> str:
    """`model/net.py:42`: a source line, relative to the report's source root when under it."""
    return f"{short_path(file, root)}:{line}"


def region_name(label: str, file: str | None, line: int | None = None, root: str | None = None) -> str:
    """A region as the reader knows it, on every surface: Stepscope's own (`ss:f0:69`) by the line it
    times (`train.py:69`, the loop header's batch read as `train.py:69 (batch read)`; `line 69` when
    the file is not known), the program's own labels as written. Never Stepscope's raw label."""
    ss = parse_label(label)
    if ss is None:
        return "optimizer closure (the code optimizer.step ran)" if label == CLOSURE_LABEL else label
    place = f"{short_path(file, root)}:{ss.line}" if file else f"line {line if line is not None else ss.line}"
    return place + (" (batch read)" if ss.is_next else "")


def short_path(path: str | None, root: str | None) -> str:
    """`model/net.py` under the root; a file of an installed package from its package folder on
    (`transformers/trainer.py`); else the path as given."""
    if not path:
        return "-"
    parts = Path(path).parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in ("site-packages", "dist-packages"):
            return Path(*parts[i + 1:]).as_posix()
    if root:
        try:
            return Path(path).relative_to(root).as_posix()
        except ValueError:
            pass
    return path


def per(report: dict[str, Any]) -> str:
    """What the figures are per: `step`, or `window` for a trace without step markers."""
    return "window" if report.get("ms_per_step") is None else "step"


def per_words(report: dict[str, Any]) -> str:
    """`per step (mean of 5 active steps)`, or `per window`: what per-line and per-region figures are;
    `per step under the profiler (...)` where the headline is the step without it (`unprofiled_ms`)."""
    if report.get("ms_per_step") is None:
        return "per window"
    steps = len(report.get("steps") or [])
    under = "" if unprofiled_ms(report) is None else " under the profiler"
    return f"per step{under} (mean of {steps} active step{'' if steps == 1 else 's'})"


# -- which step, and whose code its time runs in -----------------------------------------------------
def _count(n: float, one: str, many: str) -> str:
    """`4 calls`, `1 optimizer step`, `0.25 optimizer steps`."""
    return f"{n:g} {one if n == 1 else many}"


def _function_name(definition: dict[str, Any]) -> str:
    """`training_step`: the step function's own name (the last part of its qualified name)."""
    return str(definition.get("function") or "").rsplit(".", 1)[-1]


def step_definition_text(report: dict[str, Any]) -> str | None:
    """Which step the figures are of: `each iteration of the loop at train.py:40`; `each call of
    LitModel.training_step (train.py:14), called by lightning`; `one optimizer step: 4 calls of
    LitModel.training_step (train.py:14, its micro-batches) and the optimizer step after them, called by
    lightning`. None for a trace without the run's records."""
    d = report.get("step_definition")
    if not isinstance(d, dict):
        return None
    root = report.get("source_root")
    place = where(d.get("file"), d.get("line"), root) if d.get("line") is not None else short_path(d.get("file"), root)
    if d.get("kind") == "loop":
        return f"each iteration of the loop at {place}"
    name = f"{d.get('function')} ({place})"
    calls, optimizer = d.get("calls_per_step"), d.get("optimizer_steps_per_step")
    if d.get("unit") == "optimizer step":
        if calls is not None and calls != 1:
            text = (f"one optimizer step: {_count(calls, 'call', 'calls')} (micro-batches) of {name} and the "
                    "optimizer step after them")
        else:
            text = f"one optimizer step: each call of {name} and the optimizer step it makes"
    else:
        text = f"each call of {name}"
        if optimizer == 1:
            text += ", with 1 optimizer step"
        elif optimizer:
            text += f", with {optimizer:g} optimizer steps per call on average"
        if d.get("unit_reason") and "micro-batch" in str(d.get("unit_reason")):
            text += " (each micro-batch, as asked)"
    caller = (d.get("caller") or {}).get("package")
    if caller:
        text += f"; {_function_name(d)} is called by {caller}"
    return text


def def_line_text(report: dict[str, Any]) -> str | None:
    """What the def line of a step function stands for: `train.py:14 (the def line): the 4 calls of
    training_step per step, each from its first statement to its return, what it calls included; the
    step also holds what runs between the calls (lightning's loop and hooks)`. None for a loop step."""
    d = report.get("step_definition")
    if not isinstance(d, dict) or d.get("kind") != "function" or d.get("line") is None:
        return None
    calls = d.get("calls_per_step")
    function = _function_name(d)
    what = (f"the {calls:g} calls of {function} per step, each" if calls is not None and calls != 1
            else f"the call of {function}")
    caller = (d.get("caller") or {}).get("package")
    between = f"the loop and hooks of {caller}" if caller else "the code that calls it"
    return (f"{where(d.get('file'), d.get('line'), report.get('source_root'))} (the def line): {what} from its "
            f"first statement to its return, what it calls included; the step also holds what runs between the "
            f"calls ({between})")


def is_step_def_line(line: dict[str, Any], report: dict[str, Any]) -> bool:
    """Whether `line` is the def line of the step function (its figure is the whole call)."""
    d = report.get("step_definition")
    return (isinstance(d, dict) and d.get("kind") == "function" and line.get("file") == d.get("file")
            and line.get("line") == d.get("line"))


def _region_short(label: str) -> str:
    """`AdamW.step` from `Optimizer.step#AdamW.step`; a DataLoader's region as `DataLoader`."""
    if label.startswith("enumerate(DataLoader)#"):
        return "DataLoader"
    return label.split("#", 1)[-1]


def time_part_name(part: dict[str, Any], report: dict[str, Any]) -> str:
    """A part of the step's time in words: `your code (your lines, what they call, their backward)`,
    `in lightning: its loop and hooks around training_step`, `in torch: the optimizer (AdamW.step),
    its own time` (without the closure it ran)."""
    d = report.get("step_definition") or {}
    function = _function_name(d) if d.get("kind") == "function" else None
    role, package = part.get("role"), part.get("package")
    regions = ", ".join(dict.fromkeys(_region_short(r) for r in part.get("regions") or []))
    if part.get("owner") == "you":
        if role == "lines":
            return "your code (your lines, what they call, their backward)"
        return "your loop, between its lines" if d.get("kind") == "loop" else "your code around the step function"
    if role == "optimizer":
        return f"in {package}: the optimizer ({regions}), its own time"
    if role == "data":
        return f"in {package}: batch read ({regions})"
    if role == "step":
        return f"in {package}: the step's own lines ({function or 'the loop'} in {Path(str(d.get('file'))).name})"
    if role == "caller":
        return f"in {package}: its loop and hooks around {function or 'the step'}"
    if role == "loop":
        return f"in {package}: its loop, between its lines"
    return "outside your lines (no caller recorded)"


def time_split_rows(report: dict[str, Any]) -> list[tuple[str, float, float | None]]:
    """(words, ms, share of the basis) of each part of `time_split`, in the report's order."""
    split = report.get("time_split")
    if not isinstance(split, dict):
        return []
    basis = split.get("basis_ms") or None
    return [(time_part_name(p, report), p["ms"], p["ms"] / basis if basis else None) for p in split.get("parts") or []]


def time_split_summary(report: dict[str, Any]) -> str | None:
    """One line for the status bar's tooltip: `your code 83% · in torch 9% · in lightning 7%`."""
    split = report.get("time_split")
    if not isinstance(split, dict) or not split.get("basis_ms"):
        return None
    shares: dict[str, float] = {}
    for part in split.get("parts") or []:
        name = "your code" if part.get("owner") == "you" else f"in {part.get('package') or 'unknown code'}"
        shares[name] = shares.get(name, 0.0) + part["ms"] / split["basis_ms"]
    return " · ".join(f"{name} {share_percent(share)}" for name, share in shares.items())


# -- the headline -----------------------------------------------------------------------------------
def unprofiled_ms(report: dict[str, Any]) -> float | None:
    """The step without the profiler: the median of the passes the agent timed after the window, in
    the same process; None where nothing was timed so (a trace Stepscope did not record, a loop that
    ended with the window). Wherever it is known it is the headline: the profiled figure is the
    profiler's, said beside it with the distortion."""
    value = (report.get("unprofiled") or {}).get("ms_per_step")
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def headline(report: dict[str, Any]) -> str:
    """`12.345 ms/step (median of 5 active steps; mean 13.012 ms), 512.0 samples/s`, or why there
    is no ms/step; led by the step without the profiler where it is known: `7.34 ms/step without the
    profiler (median of 5 passes after the window, same process); profiled: 11.529 ms/step (...)`."""
    if report.get("ms_per_step") is None:
        window_ms = (report.get("window") or {}).get("ms") or 0.0
        return f"no step markers (ProfilerStep#N): one window of {window_ms:.3f} ms, no ms/step"
    text = f"{report['ms_per_step']:.3f} ms/step (median of {len(report.get('steps', []))} active steps"
    mean = share_basis(report)
    text += f"; mean {mean:.3f} ms)" if mean is not None else ")"
    if report.get("samples_per_s") is not None:
        text += f", {report['samples_per_s']:.1f} samples/s"
    real = unprofiled_ms(report)
    if real is None:
        return text
    passes = (report.get("unprofiled") or {}).get("passes")
    return (f"{ms_short(real)} ms/step without the profiler (median of {passes} passes after the window, same "
            f"process); profiled: {text}")


def distortion_text(report: dict[str, Any]) -> str | None:
    """`without the profiler: 18.2 ms/step (median of 5 passes, IQR 0.40 ms, same process): the
    profiler made the step 2.20x slower`; why it is unknown for a Stepscope run; None for a trace
    Stepscope did not record (nothing was timed without the profiler)."""
    unprofiled = report.get("unprofiled")
    if unprofiled and report.get("distortion") is not None:
        d = report["distortion"]
        effect = f"the profiler made the step {d:.2f}x slower" if d >= 1 else \
            f"the profiled step read {1 / d:.2f}x faster than without the profiler"
        overlap = window_overlap([s["ms"] for s in report.get("steps") or []], unprofiled)
        if any(f.get("kind") == "profiled-faster" for f in report.get("findings") or []):
            effect = (f"the profiled steps ran {1 / d:.2f}x faster than the loop's own pace: the window's figures are "
                      "not its steady state (see the profiled-faster finding)")
        elif overlap is not None:
            (w_low, w_high), (u_low, u_high) = overlap
            means = ""
            if share_basis(report) is not None and unprofiled.get("mean_ms") is not None:
                means = f"; means {ms_short(share_basis(report))} and {ms_short(unprofiled['mean_ms'])} ms"
            effect = (f"the step times on both sides overlap (middle half {ms_short(w_low)}–{ms_short(w_high)} ms in "
                      f"the window, {ms_short(u_low)}–{ms_short(u_high)} ms after it{means}), so the ratio of the "
                      "medians is the steps' own variation, not the profiler's cost; `stepscope measure` times the "
                      "step's pace over many passes")
        return (f"without the profiler: {ms_short(unprofiled['ms_per_step'])} ms/step (median of "
                f"{unprofiled['passes']} passes after the window, IQR {ms_short(unprofiled['iqr_ms'])} ms, same "
                f"process): {effect} (distortion {d:.2f})")
    if unprofiled:  # timed, but no ratio: the profiled median step is 0 ms (a step's GPU work ran past the next)
        return (f"without the profiler: {ms_short(unprofiled['ms_per_step'])} ms/step (median of "
                f"{unprofiled['passes']} passes after the window, IQR {ms_short(unprofiled['iqr_ms'])} ms, same "
                "process); no distortion: the profiled median step is 0 ms")
    if ((report.get("scenario") or {}).get("step") or {}).get("file") and report.get("ms_per_step") is not None:
        return ("without the profiler: not timed (the loop ended with the window): the profiler's distortion is "
                "unknown; `stepscope measure` times the step without it")
    return None


def estimate_at_cap(line: dict[str, Any]) -> bool:
    """Whether a line's profiler-cost estimate reached its cap, the line's whole wall time: then it
    estimates nothing (the line's share of the difference is at least all of the line), and no
    surface says it as a number."""
    estimate, wall = line.get("profiler_ms_estimate"), line.get("wall_ms")
    return estimate is not None and wall is not None and estimate >= 0.995 * wall


def profiler_cost_text(line: dict[str, Any]) -> str | None:
    """A line's estimated share of the profiler's cost, said as an estimate; nothing where it would
    read 0.00 ms (a figure that says nothing is left out, not printed as zero); words, not a number,
    where the estimate reached the line's whole wall time (`estimate_at_cap`)."""
    estimate = line.get("profiler_ms_estimate")
    if estimate is None or estimate < 0.005:
        return None
    if estimate_at_cap(line):
        return ("most of this line's time may be the profiler's own cost (its share of the measured difference, "
                "from its operators and kernels, reaches the line's whole wall time: no estimate can be given)")
    return f"~{ms_short(estimate)} ms of it is the profiler's own cost (an estimate from its operators and kernels)"


def call_rows(line: dict[str, Any], report: dict[str, Any]) -> list[str]:
    """A line called more than once a step: its median call beside its mean (line_calls.py), and
    the few slow calls that carry its mean, where they do."""
    median_ms, count = line.get("median_call_ms"), line.get("count")
    if median_ms is None or not count:
        return []
    rows = [f"per call: median {call_duration(median_ms)}, mean {call_duration(line['wall_ms'] / count)} "
            f"({count:g} calls per {per(report)})"]
    few = line.get("few_calls")
    if few:
        rows.append(f"{few['calls']} of its {few['of']} calls in the window carry {round(100 * few['share'])}% of its "
                    "time: the figure is a few slow calls, not the line's usual cost")
    return rows


def startup_text(startup: dict[str, Any] | None) -> str | None:
    """The start-up line of the text report, or None when the run did not record it."""
    startup = startup or {}
    if startup.get("to_first_step_ms") is None:
        return None
    first = ", ".join(f"{v:.1f}" for v in startup.get("first_steps_ms") or [])
    return (f"start-up (separate from the window): {startup['to_first_step_ms']:.1f} ms to the first step"
            + (f"; first steps {first} ms" if first else ""))


def clocks_text(clocks: dict[str, Any]) -> str:
    """How the ranks' clocks compare (clocks.py), in one line."""
    hosts = clocks.get("hosts") or []
    if clocks.get("method") == "one host":
        check = clocks.get("check")
        said = f"one host ({hosts[0]['host'] or 'unnamed'}), one clock: nothing to align"
        if check:
            said += (f"; its ranks' {check['collectives']} shared collectives "
                     + ("agree with that" if check["holds"] else "do not line up (see the notes)"))
        return said
    aligned = [h for h in hosts if h.get("bound_us") is not None]
    if clocks.get("method") == "collectives":
        widest = max((h["bound_us"][1] - h["bound_us"][0] for h in aligned), default=0.0)
        return (f"{len(hosts)} clocks aligned to rank {clocks['reference_rank']}'s from shared "
                f"{'GPU' if clocks.get('by') == 'gpu' else 'host'} collectives (each offset bounded to an interval at "
                f"most {widest:.1f} µs wide; see the notes)")
    return f"{len(hosts)} clocks, {len(aligned) + 1} aligned: times are not compared across the others (see the notes)"


def gpu_text(gpu: dict[str, Any] | None) -> str:
    gpu = gpu or {}
    return "GPU: observed" if gpu.get("observed") else f"GPU: not observed ({gpu.get('reason')})"


def run_summary(report: dict[str, Any]) -> str:
    """`31.2 ms/step without the profiler (51.4 profiled) on CPU only, host vm, from the scenario`, or
    `51.4 ms/step profiled on ...` where the step was not timed without the profiler: one run in one
    line."""
    machine = machine_label(report.get("machine"))
    ms = report.get("ms_per_step")
    if ms is None:
        return f"no steady step measured on {machine}"
    real = unprofiled_ms(report)
    if real is None:
        return f"{ms_short(ms)} ms/step profiled on {machine}"
    return f"{ms_short(real)} ms/step without the profiler ({ms_short(ms)} profiled) on {machine}"


def status_text(report: dict[str, Any]) -> str:
    """The status bar's figure: `31.2 ms/step (51.4 profiled)`, led by the step without the profiler
    where it is known; `51.4 ms/step profiled` otherwise."""
    ms = report.get("ms_per_step")
    if ms is None:
        return "no ms/step"
    real = unprofiled_ms(report)
    return f"{ms_short(ms)} ms/step profiled" if real is None else f"{ms_short(real)} ms/step ({ms_short(ms)} profiled)"


def status_tooltip(report: dict[str, Any], run_id: str | None = None) -> str:
    """The status bar's tooltip, in Markdown: the run summary, the build, the run."""
    parts = [md_text(run_summary(report))]
    build = machine_build(report.get("machine"))
    if build:
        parts.append(md_text(build))
    steps = len(report.get("steps") or [])
    mean = share_basis(report)
    if report.get("ms_per_step") is not None:
        parts.append(f"median of {steps} active step{'' if steps == 1 else 's'}"
                     + (f"; per-line figures and shares are of the profiled mean step, {ms_short(mean)} ms" if mean
                        else ""))
    distortion = distortion_text(report)
    if distortion:
        parts.append(md_text(distortion))
    step = step_definition_text(report)
    if step:
        parts.append(md_text(f"the step: {step}"))
    split = time_split_summary(report)
    if split:
        parts.append(md_text(f"where its time goes: {split}"))
    if run_id:
        parts.append(f"run `{md_code(run_id)}`")
    return "\n\n".join(parts)


# -- one line ---------------------------------------------------------------------------------------
def line_label(line: dict[str, Any], report: dict[str, Any]) -> str:
    """The inline label after a line: `12.3 ms/step · 24% · GPU 8.10 ms · bwd 3.20 ms` (the share
    is of the mean step; `ms/window` for a report without steps), and for a line whose compiled
    kernels it shares with others: `· fused with lines 16–17`."""
    label = f"{ms_short(line['wall_ms'])} ms/{per(report)}"
    share = share_of(line["wall_ms"], report)
    if share is not None:
        label += f" · {share_percent(share)}"
    gpu = line.get("gpu_ms")
    if gpu is not None and gpu > 0:
        label += f" · GPU {ms_short(gpu)} ms"
    if line.get("backward_ms"):
        label += f" · bwd {ms_short(line['backward_ms'])} ms"
    fused = fused_words(line)
    if fused:
        label += f" · {fused}"
    return label


def heat(line: dict[str, Any], report: dict[str, Any]) -> float:
    """How hot the inline label is painted: the larger of the line's CPU wall and GPU time as a share
    of the mean step (`busiest_share`), in 0..1 (a report from before the mean step was recorded may
    hold a share a little above 1: painted as 1). Clients label the lines whose heat reaches
    their threshold, as `worth_a_label` does."""
    share = busiest_share(line, report)
    return 0.0 if share is None else min(1.0, share)


_PRECISION_WORDS = {
    "exact": None,
    "compiled": "the kernels torch.compile generated from this statement (Inductor's provenance records)",
    "call": "the statement that called its operators (from the trace's call stacks)",
    "function": "the function's def line (from Python stack frames): not necessarily this statement",
}


def _line_numbers(numbers: list[int]) -> str:
    """`31–33, 40`: sorted line numbers with runs joined."""
    numbers = sorted(set(numbers))
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def fused_words(line: dict[str, Any], key: str = "fused_with") -> str | None:
    """"fused with lines 14–15" (and `model.py:8` for lines of other files) for a line whose compiled
    kernels also came from other lines; None when none did."""
    fused = [f for f in ((line.get("compiled") or {}).get(key) or []) if isinstance(f, dict)]
    if not fused:
        return None
    same = [f["line"] for f in fused if f.get("file") == line.get("file")]
    other = [f"{Path(str(f.get('file'))).name}:{f.get('line')}" for f in fused if f.get("file") != line.get("file")]
    parts = []
    if same:
        parts.append(f"line{'s' if len(same) > 1 else ''} {_line_numbers(same)}")
    parts.extend(other)
    return "fused with " + ", ".join(parts)


def compiled_rows(line: dict[str, Any]) -> list[str]:
    """The hover's words on what a line got from compiled graphs: its kernels, and the part shared
    with other lines (shown on each of them, never added up)."""
    compiled = line.get("compiled")
    if not isinstance(compiled, dict):
        return []
    rows = []
    kernels = compiled.get("kernels") or []
    if kernels:
        rows.append(f"- compiled kernels: {', '.join(md_code(k) for k in kernels[:4])}"
                    f"{' …' if len(kernels) > 4 else ''}")
    fused = fused_words(line)
    if fused:
        gpu = compiled.get("shared_gpu_ms")
        part = f"{ms_short(gpu)} ms of its GPU time" if gpu else f"{ms_short(compiled.get('shared_ms') or 0.0)} ms"
        rows.append(f"- {md_text(fused)}: {part} is in kernels shared with them, shown on each line (not added up)")
    backward_kernels = compiled.get("backward_kernels") or []
    backward = fused_words(line, "backward_fused_with")
    if backward_kernels:
        rows.append(f"- backward kernels: {', '.join(md_code(k) for k in backward_kernels[:4])}"
                    f"{' …' if len(backward_kernels) > 4 else ''}{f'; {md_text(backward)}' if backward else ''}")
    elif backward:
        rows.append(f"- backward: {md_text(backward)}")
    return rows


def line_hover(line: dict[str, Any], report: dict[str, Any], run_id: str | None = None, *,
               panel_link: str | None = None, notes: tuple[str, ...] = ()) -> str:
    """The hover of a timed line, in Markdown: its figures per step, what it ran (operators,
    kernels, copies, waits, backward), the run and the machine, the share's basis, and a link into
    the trace panel (`panel_link`: a command URI the client handles) when given. `notes` are plain
    sentences shown first in italics (the figures are from an earlier run, lines changed since)."""
    unit = per(report)
    rows = [f"**Stepscope** · per {unit}", ""]
    rows += [f"*{md_text(note)}*" for note in notes]
    if notes:
        rows.append("")
    rows.append(f"- wall: {ms_short(line['wall_ms'])} ms")
    share = share_of(line["wall_ms"], report)
    if share is not None:
        if unit == "step":
            steps = len(report.get("steps") or [])
            real = unprofiled_ms(report)
            headline_words = (f"the median, {ms_short(report['ms_per_step'])} ms/step, is the headline" if real is None
                              else f"without the profiler the step takes {ms_short(real)} ms, the headline")
            rows.append(f"- share of the mean step: {share_percent(share)} of {ms_short(share_basis(report))} ms "
                        f"(mean of {steps} active step{'' if steps == 1 else 's'}, profiled; {headline_words})")
        else:
            rows.append(f"- share of the window: {share_percent(share)} of {ms_short(share_basis(report))} ms")
    rows.append(f"- CPU self: {ms_short(self_ms(line))} ms")
    rows.extend(f"- {md_text(row)}" for row in call_rows(line, report))
    gpu = line.get("gpu_ms")
    rows.append(f"- GPU: {'not observed' if gpu is None else ms_short(gpu) + ' ms'}")
    backward = [f"{ms_short(line['backward_ms'])} ms"] if line.get("backward_ms") else []
    if line.get("backward_gpu_ms"):  # all of it when the backward graph is replayed from a CUDA graph
        backward.append(f"GPU {ms_short(line['backward_gpu_ms'])} ms")
    if backward:
        rows.append(f"- backward: {', '.join(backward)} (autograd's work for this line)")
    if line.get("kernels"):
        rows.append(f"- kernels: {line['kernels']}")
    copies = [f"{_COPY_WORDS.get(direction, direction)} {c['count']} ({bytes_text(c['bytes'])})"
              for direction, c in (line.get("copies") or {}).items() if c.get("count")]
    if copies:
        rows.append(f"- copies: {', '.join(copies)}")
    if line.get("sync_ms"):
        rows.append(f"- waits on the device: {ms_short(line['sync_ms'])} ms")
    memory = memory_words(line, report)
    if memory:
        rows.append(f"- memory: {memory}")
    cost = profiler_cost_text(line)
    if cost:
        rows.append(f"- {md_text(cost)}")
    rows.extend(compiled_rows(line))
    precision = _PRECISION_WORDS.get(line.get("precision"))
    if precision:
        rows.append(f"- line: {precision}")
    if is_step_def_line(line, report):
        rows.append(f"- {md_text(def_line_text(report) or '')}")
    rows += _named_rows("Operators it called", "outermost calls", line.get("top_ops"), unit)
    kernels = line.get("top_kernels")
    if kernels is None and gpu is None:
        pass  # GPU not observed: said above, no kernel list to give
    else:
        rows += _named_rows("Kernels it launched", "launches", kernels, unit)
    rows += shape_rows(line, report)
    rows.append("")
    if panel_link:
        rows.append(f"[Open in the trace panel]({panel_link})")
        rows.append("")
    source = f"run `{md_code(run_id)}` · " if run_id else ""
    rows.append(f"{source}{md_text(machine_label(report.get('machine')))}")
    return "\n".join(rows)


_COPY_WORDS = {"h2d": "host→device", "d2h": "device→host", "d2d": "device→device"}
#: longest name a hover shows (kernel names run to kB); the panel has the whole name
HOVER_NAME_CHARS = 90


def _named_rows(title: str, counted: str, entries: list[dict[str, Any]] | None, unit: str) -> list[str]:
    """`**Operators it called** (outermost calls per step, time per step)` and one row per name."""
    if not entries:
        return []
    rows = ["", f"**{title}** ({counted} per {unit} × time per {unit}):"]
    for entry in entries:
        name = str(entry.get("name", ""))
        if len(name) > HOVER_NAME_CHARS:
            name = name[:HOVER_NAME_CHARS - 1] + "…"
        calls = entry.get("calls") or 0
        count = f"{calls:g}" if calls >= 1 else f"{calls:.2f}"
        rows.append(f"- `{md_code(name)}` ×{count} · {ms_short(entry.get('ms') or 0.0)} ms")
    return rows


# -- findings in the editor ------------------------------------------------------------------------
FINDINGS_DOC = "https://github.com/stepscope/stepscope/blob/main/docs/findings.md"

#: CLI words in a finding's text, and how the editor says them (the editor has settings, not flags)
_EDITOR_WORDS = (
    ("profile again with --shapes", "profile again with the `stepscope.profile.shapes` setting on"),
    ("profile again with --stack", "profile again with the `stepscope.profile.stack` setting on"),
    ("profile again with --memory", "profile again with the `stepscope.profile.memory` setting on"),
    ("profile again with GPU collection on (without --cpu-only)", "profile again with GPU collection on"),
    ("in ranks[] of the --json report", "in ranks[] of the run's report"),
    ("(pass --source-root, the folder the program ran from)", "(the folder the program ran from)"),
    ("lower --wait/--warmup", "lower the `stepscope.profile.wait` or `stepscope.profile.warmup` setting"),
    ("rerun with --cpu-only for a CPU-only trace",
     "for a CPU-only trace, profile from a terminal with `stepscope profile --cpu-only`"),
    ("(use --active 5 or more)", "(set `stepscope.profile.active` to 5 or more)"),
    ("point --line at the loop that calls the one you mean", "put the cursor in the loop that calls the one you mean"),
    # the measure command has no editor form: the editor says where to type it
    ("Check the step without the profiler: `stepscope measure",
     "Check the step without the profiler, from a terminal: `stepscope measure"),
    ("with `stepscope measure --against`", "from a terminal with `stepscope measure --against`"),
    ("--shapes", "the `stepscope.profile.shapes` setting"),
    ("--stack", "the `stepscope.profile.stack` setting"),
    ("--memory", "the `stepscope.profile.memory` setting"),
    ("--all-lines", "the `stepscope.profile.allLines` setting"),
    ("--depth", "the `stepscope.profile.depth` setting"),
    ("--active", "the `stepscope.profile.active` setting"),
    ("--warmup", "the `stepscope.profile.warmup` setting"),
    ("--nproc", "the `stepscope.profile.nproc` setting"),
    ("--timeout", "the `stepscope.profile.timeout` setting"),
    ("--cpu-only", "GPU collection off"),
    ("--source-root", "the workspace folder as the source root"),
)


def finding_doc_url(kind: str) -> str:
    """Where a finding kind is explained (docs/findings.md has a heading per kind)."""
    anchor = "".join(c for c in kind.lower() if c.isalnum() or c in "-_")
    return f"{FINDINGS_DOC}#{anchor}"


def for_surface(text: str, surface: str) -> str:
    """A sentence (of a finding, or a run's one-line reason) as `surface` ("cli" or "editor") says
    it: the editor names its settings where the CLI names flags."""
    if surface != "editor":
        return text
    for cli, editor in _EDITOR_WORDS:
        text = text.replace(cli, editor)
    return text


def finding_message(finding: dict[str, Any], report: dict[str, Any], root: str | None, *,
                    surface: str = "editor") -> str:
    """A finding as the Problems view shows it: observation, hypothesis, next check, in plain text.
    The run's machine and the workspace's absolute path are said elsewhere on that surface (the
    hover, the status bar), so the message does not repeat them: paths under `root` are relative,
    and the observation's `measured on …` aside is left out."""
    observation = str(finding.get("observation", ""))
    aside = machine_words(report)
    for form in (f"; {aside}", f", {aside}", f" ({aside})", f" {aside}"):
        observation = observation.replace(form, "")
    parts = [observation.strip(),
             f"Hypothesis: {str(finding.get('hypothesis', '')).strip()}",
             f"Next check: {str(finding.get('next_check', '')).strip()}"]
    text = "\n".join(for_surface(p, surface) for p in parts if p and not p.endswith(": "))
    if root:
        text = text.replace(str(root).rstrip("/") + "/", "")
    return text


# -- runs side by side -----------------------------------------------------------------------------
def _side_place(side: dict[str, Any] | None, root: str | None) -> str:
    return "–" if side is None else where(side.get("file"), side.get("line"), root)


def _side_ms(side: dict[str, Any] | None) -> float | None:
    return None if side is None else side.get("wall_ms")


def _change(entry: dict[str, Any]) -> tuple[str, str]:
    change, ratio = entry.get("change_ms"), entry.get("ratio")
    return (f"{change:+.3f}" if change is not None else "–", f"{ratio:.2f}×" if ratio is not None else "–")


def _both_and_one_sided(doc: dict[str, Any]) -> tuple[list[dict], list[dict], list[dict]]:
    """The statements of a run comparison (analysis/run_compare.py) in both runs' code, in A's only, in B's only."""
    entries = doc.get("lines") or []
    return ([e for e in entries if e.get("a") and e.get("b")], [e for e in entries if e.get("a") and not e.get("b")],
            [e for e in entries if e.get("b") and not e.get("a")])


def _matched_words(doc: dict[str, Any]) -> str:
    by_number = any(e.get("match") == "number" for e in doc.get("lines") or [])
    return ("statements matched by their code, so one that moved keeps its row" + (
        "; those of files whose code a run measured is not known, by line number" if by_number else ""))


def compare_runs(doc: dict[str, Any], root: str | None) -> str:
    """Two profile runs statement by statement (a run comparison, analysis/run_compare.py), in
    Markdown: each run's ms/step and machine, then every statement either run measured, with its
    place and wall time per step in each, the change and the ratio; then the statements present in
    one run's code only."""
    a, b = doc["a"], doc["b"]
    rows = [f"# Stepscope: run {md_text(a['run'])} against run {md_text(b['run'])}", ""]
    rows.append("| | A | B |")
    rows.append("|---|---|---|")
    rows.append(f"| run | `{md_code(a['run'])}` | `{md_code(b['run'])}` |")
    rows.append(f"| ms/step | {_ms_or_none(a.get('ms_per_step'))} | {_ms_or_none(b.get('ms_per_step'))} |")
    if a.get("unprofiled_ms_per_step") is not None or b.get("unprofiled_ms_per_step") is not None:
        rows.append(f"| without the profiler | {_ms_or_none(a.get('unprofiled_ms_per_step'))} | "
                    f"{_ms_or_none(b.get('unprofiled_ms_per_step'))} |")
    rows.append(f"| machine | {md_text(a.get('machine'))} | {md_text(b.get('machine'))} |")
    rows.append(f"| steps | {a.get('steps')} | {b.get('steps')} |")
    rows.append("")
    both, only_a, only_b = _both_and_one_sided(doc)
    rows.append(f"Wall time per {a.get('per') or 'step'} of each statement (ms), costliest first; {_matched_words(doc)}:")
    rows.append("")
    rows.append("| statement | A | B | A ms | B ms | B − A | B ÷ A |")
    rows.append("|---|---|---|---:|---:|---:|---:|")
    for e in both:
        change, ratio = _change(e)
        rows.append(f"| `{md_code(e.get('text') or '?')}` | `{md_code(_side_place(e['a'], root))}` | "
                    f"`{md_code(_side_place(e['b'], root))}` | {_ms_or_none(_side_ms(e['a']))} | "
                    f"{_ms_or_none(_side_ms(e['b']))} | {change} | {ratio} |")
    for title, entries, key in (("Only in A's code (changed or removed since)", only_a, "a"),
                                ("Only in B's code (new, or changed since A)", only_b, "b")):
        if not entries:
            continue
        rows += ["", f"{title}:", "", "| statement | line | ms |", "|---|---|---:|"]
        for e in entries:
            rows.append(f"| `{md_code(e.get('text') or '?')}` | `{md_code(_side_place(e[key], root))}` | "
                        f"{_ms_or_none(_side_ms(e[key]))} |")
    rows += ["", "– : not measured in that run (not reached, or not in its code)."]
    rows += [f"- {md_text(note)}" for note in doc.get("notes") or []]
    return "\n".join(rows)


def compare_runs_text(doc: dict[str, Any], root: str | None) -> str:
    """The CLI's text of the same comparison (`stepscope runs compare` of two profile runs)."""
    out = []
    for key in ("a", "b"):
        side = doc[key]
        unprofiled = side.get("unprofiled_ms_per_step")
        out.append(f"{key.upper()}  {side['run']}  {_ms_or_none(side.get('ms_per_step'))} ms/{side.get('per') or 'step'} "
                   "profiled" + (f", {ms_table(unprofiled)} without the profiler" if unprofiled is not None else "")
                   + f", {side.get('steps')} steps, {side.get('machine')}")
    both, only_a, only_b = _both_and_one_sided(doc)
    out.append("")
    out.append(f"statements, wall ms per {doc['a'].get('per') or 'step'}, costliest first ({_matched_words(doc)}):")
    out.append(f"  {'A':<28} {'B':<28} {'A ms':>9} {'B ms':>9} {'B − A':>9} {'B ÷ A':>7}  statement")
    for e in both:
        change, ratio = _change(e)
        out.append(f"  {printable(_side_place(e['a'], root))[-28:]:<28} {printable(_side_place(e['b'], root))[-28:]:<28} "
                   f"{_ms_or_none(_side_ms(e['a'])):>9} {_ms_or_none(_side_ms(e['b'])):>9} {change:>9} {ratio:>7}  "
                   f"{printable(e.get('text') or '?', NAME_LIMIT)}")
    for title, entries, key in (("only in A's code (changed or removed since)", only_a, "a"),
                                ("only in B's code (new, or changed since A)", only_b, "b")):
        if entries:
            out.append(f"{title}:")
            out.extend(f"  {printable(_side_place(e[key], root))[-28:]:<28} {_ms_or_none(_side_ms(e[key])):>9}  "
                       f"{printable(e.get('text') or '?', NAME_LIMIT)}" for e in entries)
    out.append("– : not measured in that run (not reached, or not in its code)")
    out.extend(f"note: {printable(note)}" for note in doc.get("notes") or [])
    return "\n".join(out) + "\n"


def _ms_or_none(ms: float | None) -> str:
    return "–" if ms is None else ms_table(ms)


# -- Markdown ---------------------------------------------------------------------------------------
_MD_SPECIAL = set("\\`*_{}[]()<>#+-.!|~")


def md_text(text: str) -> str:
    """`text` shown as itself in Markdown (names from a trace or a host are never markup)."""
    return "".join("\\" + c if c in _MD_SPECIAL else c for c in str(text).replace("\n", " "))


def md_code(text: str) -> str:
    """`text` inside a code span."""
    return str(text).replace("`", "'").replace("\n", " ")
