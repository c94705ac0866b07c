"""The variants a finding can try, worked out from its file's text: the demo's input-bound finding,
a per-step read-back, a constant built every step, and findings that have nothing mechanical."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from stepscope.trying.change import apply_edits
from stepscope.trying.variants import describe_variants, finding_variants, worker_settings

REPO = Path(__file__).resolve().parents[2]
DEMO = (REPO / "examples" / "train_cpu.py").read_text()
LOOP = next(i for i, line in enumerate(DEMO.splitlines(), 1) if "for x, y in loader:" in line)


def applied(text: str, variant) -> str:
    out = apply_edits(text, variant.edits)
    ast.parse(out)
    return out


def test_the_demo_s_input_bound_finding_can_read_its_batches_ahead_or_use_workers():
    found = finding_variants({"kind": "input-bound", "line": LOOP}, DEMO, step_line=LOOP, device="cpu", steps=12,
                             cpus=2)
    assert [v.name for v in found.variants] == ["batch-ahead", "workers-2"] and found.reason is None
    ahead, workers = found.variants
    text = applied(DEMO, ahead)
    assert "batches_ahead = [batch for _, batch in zip(range(12), loader)]" in text
    assert "    for x, y in batches_ahead:\n" in text
    assert not ahead.applicable and "experiment" in ahead.why_not  # it answers a question; it is no change to keep
    text = applied(DEMO, workers)
    assert "shuffle=False, num_workers=2, persistent_workers=True)" in text and workers.applicable


def test_more_cores_try_more_workers_and_a_cuda_run_pins_memory():
    assert worker_settings(2) == [(2, None)] and worker_settings(32) == [(2, None), (8, 4)]
    found = finding_variants({"kind": "input-bound", "line": LOOP}, DEMO, device="cuda", cpus=16)
    text = applied(DEMO, found.variants[-1])
    assert "num_workers=8, persistent_workers=True, prefetch_factor=4, pin_memory=True" in text


LOADERS = '''from torch.utils.data import DataLoader
import torch

def train(data):
    loader = torch.utils.data.DataLoader(data, batch_size=8, num_workers=1)
    for i, (x, y) in enumerate(loader):
        step(x, y)
    for x in DataLoader(data, batch_size=8, **options):
        step(x)
    for x in DataLoader(data, batch_size=8, num_workers=16):
        step(x)
'''


def test_the_loader_is_found_through_enumerate_and_left_alone_where_its_settings_are_unknown():
    lines = LOADERS.splitlines()
    at = {text.strip(): i for i, text in enumerate(lines, 1)}
    found = finding_variants({"kind": "input-bound", "line": at["for i, (x, y) in enumerate(loader):"]}, LOADERS)
    workers = next(v for v in found.variants if v.name == "workers-2")
    assert "DataLoader(data, batch_size=8, num_workers=2, persistent_workers=True)" in applied(LOADERS, workers)
    # **options may set num_workers: only the batches read ahead are tried
    found = finding_variants({"kind": "input-bound", "line": at["for x in DataLoader(data, batch_size=8, **options):"]},
                             LOADERS)
    assert [v.name for v in found.variants] == ["batch-ahead"]
    # 16 workers already: fewer are no variant
    found = finding_variants({"kind": "input-bound", "line": at["for x in DataLoader(data, batch_size=8, num_workers=16):"]},
                             LOADERS, cpus=64)
    assert [v.name for v in found.variants] == ["batch-ahead"]


def test_a_per_step_read_back_tries_the_rule_s_quick_fix():
    line = next(i for i, text in enumerate(DEMO.splitlines(), 1) if "running += loss.item()" in text)
    found = finding_variants({"kind": "sync-in-step", "line": line, "file": "train_cpu.py"}, DEMO)
    (fix,) = found.variants
    assert fix.name == "SS101-fix" and "running += loss.detach().double()" in applied(DEMO, fix)
    # a read-back the step uses has no fix: said, not guessed
    used = DEMO.replace("running += loss.item()  # synchronises every step",
                        "value = loss.item()\n        if value > 9:\n            break")
    line = next(i for i, text in enumerate(used.splitlines(), 1) if "value = loss.item()" in text)
    found = finding_variants({"kind": "sync-in-step", "line": line, "file": "train_cpu.py"}, used)
    assert found.variants == [] and "no quick fix of SS101" in found.reason


CONSTANT = '''import torch

def train(model, loader, optimizer):
    for x in loader:
        scale = torch.tensor([0.5, 2.0]).cuda()
        loss = (model(x) * scale).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
'''


def test_a_constant_built_every_step_tries_building_it_once():
    found = finding_variants({"kind": "repeated-copy", "line": 5, "file": "t.py"}, CONSTANT)
    (hoist,) = found.variants
    text = applied(CONSTANT, hoist)
    assert text.index("const_tensor = torch.tensor([0.5, 2.0]).cuda()") < text.index("for x in loader:")


def test_dominant_op_settings_exist_on_cuda_only():
    found = finding_variants({"kind": "dominant-op", "line": 6, "figures": {"op": "aten::addmm"}}, CONSTANT,
                             step_line=4, device="cuda")
    conv = finding_variants({"kind": "dominant-op", "line": 6, "figures": {"op": "aten::cudnn_convolution"}},
                            CONSTANT, step_line=4, device="cuda")
    assert [v.name for v in conv.variants] == ["cudnn-benchmark"]
    (tf32,) = found.variants
    assert tf32.name == "tf32-matmul" and "allow_tf32 = True" in applied(CONSTANT, tf32)
    found = finding_variants({"kind": "dominant-op", "line": 6, "figures": {"op": "aten::addmm"}}, CONSTANT,
                             step_line=4, device="cpu")
    assert found.variants == [] and "CUDA only" in found.reason


@pytest.mark.parametrize("kind", ["profiled-faster", "small-launches", "startup-cost", "some-new-kind"])
def test_findings_without_a_mechanical_change_say_so(kind):
    found = finding_variants({"kind": kind, "line": 3}, DEMO)
    assert found.variants == [] and found.reason


def test_a_report_s_findings_list_their_variants_or_why_there_is_none(tmp_path: Path):
    script = tmp_path / "train_cpu.py"
    script.write_text(DEMO)
    report = {"scenario": {"step": {"file": str(script), "line": LOOP}, "machine": {"cpu_count": 2}},
              "findings": [{"kind": "input-bound", "file": str(script), "line": LOOP},
                           {"kind": "profiled-faster", "file": str(script), "line": LOOP},
                           {"kind": "input-bound", "file": str(tmp_path / "gone.py"), "line": 3}]}
    describe_variants(report)
    first, second, third = report["findings"]
    assert [v["name"] for v in first["variants"]] == ["batch-ahead", "workers-2"] and first["variants_reason"] is None
    assert first["variants"][0] == {"name": "batch-ahead", "title": "Read the batches before the loop (an experiment)",
                                    "description": first["variants"][0]["description"], "applicable": False}
    assert second["variants"] == [] and "warm-up" in second["variants_reason"]
    assert third["variants"] == [] and "not available" in third["variants_reason"]


UPLOAD = '''import torch
from torch.utils.data import DataLoader

def train(model, data, optimizer):
    loader = DataLoader(data, batch_size=64, num_workers=4)
    for x, y in loader:
        x, y = x.to("cuda"), y.cuda()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
'''


def test_a_wait_on_a_pageable_upload_tries_pinned_memory_and_a_copy_that_does_not_wait():
    found = finding_variants({"kind": "sync-in-step", "line": 7, "file": "t.py"}, UPLOAD, device="cuda")
    pinned = found.variants[0]
    assert pinned.name == "pinned-upload"
    text = applied(UPLOAD, pinned)
    assert "DataLoader(data, batch_size=64, num_workers=4, pin_memory=True)" in text
    assert 'x, y = x.to("cuda", non_blocking=True), y.cuda(non_blocking=True)' in text
    # on the CPU there is no upload to pin
    assert all(v.name != "pinned-upload" for v in finding_variants({"kind": "sync-in-step", "line": 7, "file": "t.py"},
                                                                     UPLOAD, device="cpu").variants)
