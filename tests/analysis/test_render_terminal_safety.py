"""A trace's strings cannot drive the terminal: the text report shows control characters and bidi
overrides as visible escapes, one report line per line, while the JSON keeps every string exact."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from stepscope.textsafe import printable

from .kineto_synth import Synth

HOSTILE = {
    "osc": "\x1b]0;owned\x07title",  # retitles the terminal
    "csi": "\x1b[2J\x1b[Hclear",  # clears the screen
    "cr": "fake\rline",  # overwrites the start of the line
    "lf": "one\n  [dominant-op] a forged finding",  # forges a line of the report
    "bidi": "abc\u202etxt.exe",  # shows text in another order
    "c1": "a\x9b31mb",  # an 8-bit CSI
}


def hostile_trace(tmp_path: Path) -> Path:
    s = Synth(devices=[{"id": 0, "name": "GPU \x1b[31mred\x1b[0m", "totalGlobalMem": 1}])
    s.metadata = {"host_name": "host\rname", "ERROR": ["profiler \x1b]0;x\x07failed\nsecond line"]}
    for n in range(3):
        t = 1000.0 * n
        s.step(n + 1, t, 900)
        for i, name in enumerate(HOSTILE.values()):
            s.region(name, t + 10 + 100 * i, 80)
        s.op("\x1b[5m" + "x" * 300 + "\u2066op", t + 10, 800)  # dominant: most of the step
    return s.write(tmp_path / "hostile.json")


def test_the_text_report_escapes_every_trace_string(tmp_path: Path) -> None:
    path = hostile_trace(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "stepscope", "analyze", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    assert all(line.isprintable() for line in lines), [line for line in lines if not line.isprintable()]
    out = proc.stdout
    assert "GPU \\x1b[31mred\\x1b[0m" in out and "host\\x0dname" in out
    assert "\\x1b]0;owned\\x07title" in out and "abc\\u202etxt.exe" in out and "a\\x9b31mb" in out
    assert "profiler \\x1b]0;x\\x07failed\\x0asecond line" in out
    # a forged line stays inside the region label's line; a long name is cut with an ellipsis
    assert not any(line.startswith("  [dominant-op] a forged") for line in lines)
    assert any(line.startswith("  one\\x0a  [dominant-op] a forged finding ") for line in lines)
    finding = next(line for line in lines if line.startswith("  [dominant-op]"))
    assert finding.startswith("  [dominant-op] \\x1b[5m" + "x" * 75 + "… holds 0.80 ms of CPU self time")


def test_the_json_report_keeps_the_strings_exact(tmp_path: Path) -> None:
    path = hostile_trace(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "stepscope", "analyze", str(path), "--json"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert {r["label"] for r in report["regions"]} >= set(HOSTILE.values())
    assert report["machine"]["device"] == "GPU \x1b[31mred\x1b[0m"
    assert "\x1b" not in proc.stdout  # JSON escapes control characters itself
    dominant = next(f for f in report["findings"] if f["kind"] == "dominant-op")
    assert dominant["figures"]["op"] == "\x1b[5m" + "x" * 300 + "\u2066op"  # whole in the figures


def test_printable_escapes_and_cuts() -> None:
    assert printable("plain ✓ µs") == "plain ✓ µs"
    assert printable("a\x1bb\x7f\x85\u2028\u200d\ud800") == "a\\x1bb\\x7f\\x85\\u2028\\u200d\\ud800"
    assert printable("\U000e0041 tag") == "\\U000e0041 tag"
    assert printable("x" * 10, 4) == "xxx…" and printable("x" * 4, 4) == "xxxx"
    assert printable("\x1b" * 10, 6) == "\\x1b\\…"
