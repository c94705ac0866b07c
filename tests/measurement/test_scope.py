"""Two measurements are compared only when they measured the same thing on the same machine."""

from __future__ import annotations

from stepscope.measurement.scope import differences

MACHINE = {"host": "box", "cpu": "Xeon", "devices": ["NVIDIA H200"], "driver": "580.1", "torch": "2.11.0",
           "cuda_build": "13.0", "hip_build": None, "python": "3.12.3", "os": "Linux 6.8"}
SCOPE = {"kind": "measure", "script": "train.py", "step": {"line": 40, "function": None, "header": "for x, y in loader:"},
         "args": ["--steps", "50"], "batch_size": 64, "device": "cuda", "warmup": 5}


def test_the_same_measurement_is_comparable_even_when_the_loop_moved():
    moved = {**SCOPE, "step": {**SCOPE["step"], "line": 47}}  # an edit above the loop
    assert differences(MACHINE, SCOPE, {**MACHINE, "os": "Linux 6.9"}, moved) == []


def test_each_difference_is_named():
    other_machine = {**MACHINE, "torch": "2.12.0", "devices": ["NVIDIA A100"]}
    other = {**SCOPE, "batch_size": 128, "device": "cpu", "warmup": 1, "args": [], "kind": "profile",
             "step": {"line": 12, "function": None, "header": "for batch in eval_loader:"}}
    found = differences(MACHINE, SCOPE, other_machine, other)
    text = " | ".join(found)
    assert "machine (devices [NVIDIA H200] vs [NVIDIA A100]; torch 2.11.0 vs 2.12.0)" in found
    assert "batch size (64 vs 128)" in found
    assert "device (cuda vs cpu)" in found
    assert "warm-up passes (5 vs 1)" in found
    assert "kind of run (measure vs profile)" in found
    assert "program arguments ([--steps, 50] vs none)" in found
    assert "step loop (loop at line 40 `for x, y in loader:` vs loop at line 12 `for batch in eval_loader:`)" in text


def test_a_step_of_several_ranks_and_one_of_a_single_process_differ_whatever_their_launcher():
    two = {**SCOPE, "world_size": 2, "launcher": "torchrun --nproc-per-node 2"}
    assert differences(MACHINE, {**SCOPE, "world_size": 1, "launcher": None}, MACHINE, two) == [
        "processes per step (1 vs 2 ranks)"]
    assert differences(MACHINE, two, MACHINE, {**two, "launcher": "accelerate launch --multi_gpu"}) == []
    assert differences(MACHINE, SCOPE, MACHINE, two) == []  # a run recorded before the world was


def test_a_loop_and_a_function_step_differ():
    fn = {**SCOPE, "step": {"line": 10, "function": "train_step", "header": None}}
    assert differences(MACHINE, SCOPE, MACHINE, fn) == [
        "step (loop at line 40 `for x, y in loader:` vs each call of train_step())"]


def test_what_one_side_did_not_record_is_not_a_difference():
    unknown = {**SCOPE, "batch_size": None, "device": None}
    assert differences(MACHINE, SCOPE, {**MACHINE, "driver": None}, unknown) == []


def test_an_optimizer_step_and_a_micro_batch_of_one_function_differ():
    step = {"line": 10, "function": "LitModel.training_step", "header": None}
    optimizer = {**SCOPE, "step": {**step, "unit": "optimizer step", "calls_per_step": 4.0}}
    micro = {**SCOPE, "step": {**step, "unit": "call", "calls_per_step": 1.0}}
    assert differences(MACHINE, optimizer, MACHINE, micro) == [
        "step (each optimizer step of LitModel.training_step() vs each call of LitModel.training_step())"]
    assert differences(MACHINE, optimizer, MACHINE, {**SCOPE, "step": step}) == []  # recorded before units were
