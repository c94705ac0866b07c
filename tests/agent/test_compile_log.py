"""torch.compile's records of a run (agent/compile_log.py) from a real torch: graph breaks with the line
torch names, compilations and recompilations with their reasons, each with the step it happened in.
Dynamo with the `eager` backend (no C++ compiler needed); the program runs in its own interpreter."""

from __future__ import annotations

import gzip
import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stepscope.agent import bootstrap, compile_log

AGENT = Path(bootstrap.__file__).resolve().parent
pytestmark = pytest.mark.torch

PROGRAM = """\
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("boot", {boot!r})
boot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(boot)
boot.load_agent()
compile_log = importlib.import_module(boot.PACKAGE + ".compile_log")
import torch

step = [None, "before"]
log = compile_log.install(lambda: tuple(step))


@torch.compile(backend="eager")
def scaled(x):
    y = x * 2
    print("a print breaks the graph")
    return y + 1


for i, rows in enumerate([4, 4, 4, 6]):
    step[:] = [i, "active" if i >= 2 else "warmup"]
    scaled(torch.randn(rows, 3))
compile_log.uninstall(log)
scaled(torch.randn(9, 3))  # after uninstall: not recorded
print(json.dumps(log.record({{"provenance": "test"}})))
"""


def test_graph_breaks_and_recompilations_are_recorded_with_their_line_and_step(tmp_path: Path):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM.format(boot=str(AGENT / "bootstrap.py")))
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    record = json.loads(r.stdout.strip().splitlines()[-1])
    assert record["enabled"] == {"provenance": "test"} and record["records_skipped"] == 0
    breaks = record["graph_breaks"]
    assert {(Path(b["file"]).name, b["line"]) for b in breaks} == {("prog.py", 16)}  # the print
    assert breaks[0]["step"] == 0 and breaks[0]["phase"] == "warmup"
    # the recompilation in step 3 traced the function again, and met the print again
    assert breaks[-1]["step"] == 3 and breaks[-1]["phase"] == "active"
    first = [c for c in record["compiles"] if c["function"] == "scaled"]
    assert first[0]["step"] == 0 and first[0]["reasons"] == []
    recompiles = [c for c in record["compiles"] if c["reasons"]]
    assert recompiles and all(c["step"] == 3 and c["phase"] == "active" for c in recompiles)
    assert any("size mismatch" in reason for c in recompiles for reason in c["reasons"])
    assert not [c for c in record["compiles"] if c["step"] is not None and c["step"] > 3]


def test_enable_turns_on_provenance_only_where_the_program_did_not_choose(monkeypatch: pytest.MonkeyPatch):
    from stepscope.agent import compile_log

    env = {"INDUCTOR_PROVENANCE": "0"}
    said = compile_log.enable(env)
    assert env == {"INDUCTOR_PROVENANCE": "0", "TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE": "1"}
    assert said == {"provenance": "set by the program's environment (INDUCTOR_PROVENANCE=0)",
                    "cpp_kernel_profile": "on for this run"}


H200_TORCH_211_LOG = Path(__file__).resolve().parents[1] / "data" / "compiled" / "h200_torch211_fallback" / "torch_trace.log.gz"


def replay_structured_log(path: Path) -> None:
    """Send a TORCH_TRACE log's records to torch's structured-trace logger as torch sent them (each
    record: a header line ending in its JSON metadata, then its payload's lines, each after a tab)."""
    logger = logging.getLogger(compile_log.TRACE_LOGGER)
    records: list[tuple[dict, list[str]]] = []
    for line in gzip.open(path, "rt").read().splitlines():
        if line.startswith("\t"):
            records[-1][1].append(line[1:])
        elif line.strip():
            records.append((json.loads(line.split("] ", 1)[1]), []))
    for metadata, payload in records:
        logger.debug("", extra={"metadata": metadata, "payload": "\n".join(payload) if payload else None})


def test_torch_211s_records_of_a_function_that_fell_back_to_eager_are_read():
    """The compile log of torch 2.11 on the H200 (trimmed to the records this module reads), from a run
    whose labels Dynamo could not enter (before they were kept out of its way): each compiled forward
    broke at its first statement and ran eager. Both breaks are read with the line torch names."""
    log = compile_log.install(lambda: (0, "wait"))
    try:
        replay_structured_log(H200_TORCH_211_LOG)
    finally:
        compile_log.uninstall(log)
    record = log.record({"provenance": "test"})
    assert record is not None and record["records_skipped"] == 0
    assert [(Path(b["file"]).name, b["line"]) for b in record["graph_breaks"]] == [("compiled_mlp.py", 31),
                                                                                  ("compiled_mlp.py", 17)]
    assert all(b["reason"].startswith("Failed to handle graph break gracefully. Skipping the function and falling "
                                      "back to eager") and b["detail"] == "Unsupported context manager"
               for b in record["graph_breaks"])
    assert [(c["function"], Path(c["file"]).name, c["line"]) for c in record["compiles"]] == [
        ("forward", "compiled_mlp.py", 30), ("forward", "compiled_mlp.py", 16)]
    assert record["graphs"] == []  # nothing was compiled, so Inductor recorded no kernel
