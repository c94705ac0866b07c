"""Run folders written the way the capture side and the measure command write them (small ones)."""

from __future__ import annotations

from pathlib import Path

from stepscope import jsonio, workspace
from stepscope.agent import protocol
from stepscope.measurement.stats import samples_per_s, summarize

MACHINE = {"host": "box", "cpu": "Xeon", "devices": [], "device": "CPU only", "driver": None,
           "torch": "2.13.0", "cuda_build": None, "hip_build": None, "python": "3.12.3"}


def measure_folder(root: Path, name: str, runs: list[list[float]], *, status: str = "complete",
                   values: list[float] | None = None, header: str = "for x, y in loader:") -> Path:
    folder = root / workspace.STATE_DIR / workspace.RUNS_DIR / name
    folder.mkdir(parents=True)
    script = str(root / "train.py")
    scenario = {"step": {"file": script, "line": 40, "function": None, "kind": "loop", "header": header},
                "program": {"args": []}, "git": {"commit": "abc123", "dirty": True}, "machine": MACHINE,
                "batch_size": 64}
    jsonio.write_json(folder / protocol.SPEC, {"mode": "measure", "scenario": scenario})
    jsonio.write_json(folder / protocol.FILES, {"root": str(root), "files": {"f0": "train.py"}})
    jsonio.write_json(folder / protocol.SCENARIO, scenario)
    if status != "incomplete":
        jsonio.write_json(folder / protocol.STATUS, {"status": status, "exit": 0 if status == "complete" else 3,
                                                      "reason": None})
    if status == "complete":
        raw = [v for r in runs for v in r]
        jsonio.write_json(folder / protocol.MEASURE, {
            "machine": MACHINE,
            "scope": {"kind": "measure", "script": "train.py", "step": {"line": 40, "function": None,
                                                                         "header": header},
                      "args": [], "batch_size": 64, "device": "cpu", "warmup": 2},
            "raw_ms": raw, "warmup_ms": [50.0, 20.0], **summarize(raw).as_dict(),
            "samples_per_s": samples_per_s(summarize(raw).median_ms, 64),
            "values": values,
            "runs": [{"raw_ms": r, "warmup_ms": [50.0, 20.0], "values": values} for r in runs],
        })
    return folder
