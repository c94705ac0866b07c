"""The measure document from the processes' timings."""

from __future__ import annotations

import pytest

from stepscope.measurement.present import measurement_text, ranks_words, step_values
from stepscope.measurement.result import measurement, ranked_measurement

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


def test_a_process_without_ranks_reads_as_before():
    doc = ranked_measurement([{None: {"raw_ms": [1.0, 2.0], "values": [3.0, 2.0]}}], machine={}, scope=SCOPE)
    assert doc == measurement([{"raw_ms": [1.0, 2.0], "values": [3.0, 2.0]}], machine={}, scope=SCOPE)
    assert (doc["ranks"], doc["slowest_rank"], doc["values_rank"], doc["runs"][0]["rank"]) == (None, None, None, None)


RANKED = [
    {0: {"raw_ms": [10.0, 11.0, 12.0], "values": [2.0, 1.9, 1.8]}, 1: {"raw_ms": [13.0, 14.0, 12.0], "values": [2.1, 2.0, 1.9]}},
    {0: {"raw_ms": [15.0, 16.0, 15.5], "values": [2.0, 1.9, 1.8]}, 1: {"raw_ms": [11.0, 12.0, 13.0], "values": [2.1, 2.0, 1.9]}},
]


def test_the_figures_of_ranked_processes_are_each_processs_slowest_rank():
    doc = ranked_measurement(RANKED, machine={}, scope=SCOPE)
    # process 0: rank 1 (median 13) is slower; process 1: rank 0 (15.5)
    assert [run["rank"] for run in doc["runs"]] == [1, 0]
    assert doc["raw_ms"] == [13.0, 14.0, 12.0, 15.0, 16.0, 15.5]
    assert doc["median_ms"] == 14.5 and [run["median_ms"] for run in doc["runs"]] == [13.0, 15.5]
    # every rank's own figures over both processes; the slowest rank is the one with the highest median
    assert [(e["rank"], e["passes"], e["median_ms"], e["run_medians_ms"]) for e in doc["ranks"]] == [
        (0, 6, 13.5, [11.0, 15.5]), (1, 6, 12.5, [13.0, 12.0])]
    assert doc["slowest_rank"] == 0 and [e["slowest"] for e in doc["ranks"]] == [True, False]
    # the values are the lowest rank's in every process, so processes (and runs) compare one rank's
    assert doc["values_rank"] == 0 and doc["values"] == [2.0, 1.9, 1.8] and doc["values_consistent"] is True
    assert [run["values"] for run in doc["runs"]] == [[2.0, 1.9, 1.8], [2.0, 1.9, 1.8]]


def test_ranks_that_tie_name_the_lowest_and_a_rank_without_passes_is_refused():
    doc = ranked_measurement([{1: {"raw_ms": [5.0]}, 0: {"raw_ms": [5.0]}}], machine={}, scope=SCOPE)
    assert doc["runs"][0]["rank"] == 0 and doc["slowest_rank"] == 0
    with pytest.raises(ValueError):
        ranked_measurement([{0: {"raw_ms": [5.0]}, 1: {"raw_ms": []}}], machine={}, scope=SCOPE)
    with pytest.raises(ValueError):
        ranked_measurement([{0: {"raw_ms": [5.0]}, None: {"raw_ms": [5.0]}}], machine={}, scope=SCOPE)


def test_the_text_says_whose_passes_the_figures_are_and_each_ranks_median():
    doc = {**ranked_measurement(RANKED, machine={}, scope={**SCOPE, "step": {"line": 9}}), "run_dir": "/r"}
    text = measurement_text(doc)
    assert text.startswith("train.py:9: 14.5 ms/step without the profiler (median of 6 passes in 2 processes, each "
                           "process's slowest of 2 ranks (ranks 1, 0))\n")
    assert "  ranks    rank 0 13.5, rank 1 12.5 ms (median of each rank's passes); slowest: rank 0, within the " \
           "others' spread (no rank stands out)\n" in text
    assert step_values(doc).startswith("loss of rank 0 2 → 1.8 (first → last of 3 passes)")
    # one rank whose passes lie apart from another's stands out; one slowest rank throughout is named once
    apart = ranked_measurement([{0: {"raw_ms": [10.0, 10.1, 10.2]}, 1: {"raw_ms": [20.0, 20.1, 20.2]}}],
                               machine={}, scope={**SCOPE, "step": {"line": 9}})
    assert ranks_words(apart) == "rank 0 10.1, rank 1 20.1 ms (median of each rank's passes); slowest: rank 1"
    assert "(median of 3 passes of rank 1, the slowest of 2 ranks)" in measurement_text(apart)


def test_many_ranks_name_the_slowest_ones_and_the_fastest():
    doc = ranked_measurement([{r: {"raw_ms": [10.0 + r]} for r in range(12)}], machine={}, scope=SCOPE)
    assert ranks_words(doc) == ("rank 0 10.0, rank 5 15.0, rank 6 16.0, rank 7 17.0, rank 8 18.0, rank 9 19.0, "
                                "rank 10 20.0, rank 11 21.0 ms (4 more ranks in the JSON) (median of each rank's "
                                "passes); slowest: rank 11")
    assert ranks_words(measurement([{"raw_ms": [1.0]}], machine={}, scope=SCOPE)) is None
