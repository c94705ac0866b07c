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
