"""The measure document from the processes' timings."""

from __future__ import annotations

import pytest

from stepscope.measurement.result import measurement

SCOPE = {"kind": "measure", "script": "train.py", "batch_size": 32, "warmup": 2, "value": None}


def test_figures_are_over_every_measured_pass_and_never_the_warm_up():
    doc = measurement([
        {"warmup_ms": [400.0, 30.0], "raw_ms": [10.0, 11.0, 12.0], "values": [2.0, 1.9, 1.8], "clock": "host"},
        {"warmup_ms": [380.0, 31.0], "raw_ms": [13.0, 14.0, 15.0], "values": [2.0, 1.9, 1.8], "clock": "host"},
    ], machine={"host": "box"}, scope=SCOPE)
    assert doc["raw_ms"] == [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]
    assert doc["warmup_ms"] == [400.0, 30.0, 380.0, 31.0]
    assert doc["median_ms"] == 12.5 and doc["max_ms"] == 15.0  # the 400 ms first pass is not in it
    assert doc["samples_per_s"] == pytest.approx(32 * 1000 / 12.5)
    assert [r["median_ms"] for r in doc["runs"]] == [11.0, 14.0]
    assert doc["variation"]["run_to_run_pct"] == pytest.approx(100 * 3 / 12.5)
    assert doc["values"] == [2.0, 1.9, 1.8] and doc["values_consistent"] is True and doc["value"] == "loss"
    assert doc["clock"] == "host"


def test_processes_that_computed_different_values_are_flagged():
    doc = measurement([{"raw_ms": [1.0], "values": [2.0]}, {"raw_ms": [1.0], "values": [2.5]}],
                      machine={}, scope={**SCOPE, "batch_size": None})
    assert doc["values_consistent"] is False
    assert doc["samples_per_s"] is None


def test_a_process_without_measured_passes_is_refused():
    with pytest.raises(ValueError):
        measurement([{"raw_ms": [1.0]}, {"raw_ms": []}], machine={}, scope=SCOPE)


def test_a_process_without_values_leaves_consistency_unknown_not_false():
    doc = measurement([{"raw_ms": [1.0], "values": [2.0]}, {"raw_ms": [1.0], "values": None}],
                      machine={}, scope=SCOPE)
    assert doc["values_consistent"] is None


def test_a_function_steps_calls_are_summarised_apart_from_the_time_between_them():
    doc = measurement([
        {"raw_ms": [40.0, 42.0, 38.0], "call_ms": [10.0, 12.0, None]},  # the third call never returned in its step
        {"raw_ms": [41.0, 39.0], "call_ms": [11.0, 9.0]},
    ], machine={}, scope=SCOPE)
    call = doc["call"]
    assert call["raw_ms"] == [10.0, 12.0, 11.0, 9.0] and call["passes"] == 4
    assert call["median_ms"] == 10.5 and call["mean_ms"] == 10.5
    # the calls' total over the total of the same passes' steps: never above 1
    assert call["share_of_step"] == pytest.approx(42.0 / (40.0 + 42.0 + 41.0 + 39.0))
    assert doc["median_ms"] == 40.0  # ms/step is still call start to call start, over every pass


def test_a_loops_step_has_no_call_figure():
    assert measurement([{"raw_ms": [1.0, 2.0]}], machine={}, scope=SCOPE)["call"] is None
