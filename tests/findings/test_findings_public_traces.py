"""Findings on real traces made by others (shared/traces/public2, with its PROVENANCE.md): each case
where the per-step figures were right and the findings were not.

The corpus is found through tests/corpus.py (`STEPSCOPE_TEST_TRACES` points elsewhere); without it
every case here is skipped, saying where it looked.
"""

from __future__ import annotations

import pytest

from tests.analysis.invariants import violations
from tests.corpus import ABSENT_REASON, PRESENT, PUBLIC2
from stepscope.analysis.render import render_text
from stepscope.analysis.report import analyze

pytestmark = pytest.mark.skipif(not (PRESENT and PUBLIC2.is_dir()), reason=ABSENT_REASON)


def report_of(name: str) -> dict:
    report = analyze([PUBLIC2 / name])
    assert violations(report) == []
    return report


def kinds(report: dict) -> list[str]:
    return [f["kind"] for f in report["findings"]]


def only(report: dict, kind: str) -> dict:
    (f,) = [f for f in report["findings"] if f["kind"] == kind]
    return f


def test_a_host_blocked_in_a_device_to_host_copy_is_a_wait_not_a_dominant_copy() -> None:
    report = report_of("hta_negative_queue_rank0.json.gz")
    assert "dominant-op" not in kinds(report)
    f = only(report, "sync-in-step")
    assert f["severity"] == "warning" and f["figures"]["sync_ms"] > 140  # ~146 ms a step in the pageable copy
    assert "device-to-host copy" in f["observation"] and f["figures"]["kinds"].get("read")


def test_item_blocking_every_step_is_a_sync_in_step() -> None:
    f = only(report_of("hta_trace_diff_test.json.gz"), "sync-in-step")
    assert f["figures"]["steps"] == 6 and f["figures"]["sync_ms"] > 30
    assert "device-to-host copy" in f["observation"]


@pytest.mark.parametrize(("name", "wrapper"), [
    ("tl_mi300_resnet_act_ckpt.json.gz", "record_param_comms"),  # an NCCL all-reduce, its wait included
    ("tl_xdit_sd3.5_profile.json.gz", "Torch-Compiled Region"),
])
def test_wrappers_and_collectives_are_never_dominant_operators(name: str, wrapper: str) -> None:
    report = report_of(name)
    assert not any(f["kind"] == "dominant-op" and wrapper in f["figures"]["op"] for f in report["findings"])
    ops = {o["name"]: o["role"] for o in report["evidence"]["ops"]}
    assert any(n.startswith(wrapper) and role in ("collective", "wrapper") for n, role in ops.items())


@pytest.mark.parametrize("name", ["deepseek_train.json.gz", "kineto_rn50_nw4_2021-06.pt.trace.json.gz",
                                  "ascend_npu_trace_view.json"])
def test_training_is_seen_from_backward_and_optimizer_operators_without_source_lines(name: str) -> None:
    report = report_of(name)
    assert report["lines"] == []  # no line could be named: the operators say what the step does
    contents = report["step_contents"]
    assert contents["kind"] == "training" and contents["backward"]


@pytest.mark.parametrize(("name", "seen"), [("ascend_npu_trace_view.json", "process 'Ascend Hardware'"),
                                            ("ibm_spyre_sample_trace.json", "non-CUDA category")])
def test_another_accelerator_s_events_are_said_seen_and_not_analysed(name: str, seen: str) -> None:
    report = report_of(name)
    reason = report["gpu"]["reason"]
    assert "CPU-only" not in reason and "seen, but not analysed" in reason and seen in reason
    assert "CPU-only" not in render_text(report)


def test_one_answer_for_the_rank_the_others_wait_for() -> None:
    report = report_of("param_dlrm_8rank")
    assert report["slowest_rank"] == 7 and report["rank_wait"]["rank"] == 7
    assert only(report, "rank-imbalance")["figures"]["waited_for"] == 7
    text = render_text(report)
    marked = [row for row in text.splitlines() if "<-" in row]
    assert len(marked) == 1 and marked[0].split()[0] == "7" and "waited for" in marked[0]
    assert "the slowest rank is rank 1" not in text


def test_findings_that_need_no_steps_run_on_the_window_of_a_trace_without_step_markers() -> None:
    resnet = report_of("param_resnet_kineto.json.gz")
    f = only(resnet, "input-bound")  # the DataLoader holds half the window while the GPU idles
    assert "per window" in f["observation"] and "no step markers" in f["observation"]
    assert f["figures"]["per"] == "window"
    decode = report_of("tl_sglang_qwen3_decode.json.gz")
    f = only(decode, "sync-in-step")  # 463 ms blocked in one device-to-host copy
    assert f["figures"]["sync_ms"] > 450 and "in the window" in f["observation"]
    assert "small-launches" not in kinds(decode) and "repeated-copy" not in kinds(decode)  # those need steps
