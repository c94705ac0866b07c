"""A measure result in the editor's words (measurement/present.py): one definition of each figure,
the same as the CLI's (no torch)."""

from __future__ import annotations

from stepscope.measurement.present import (comparison_markdown, editor_details, editor_status, editor_summary,
                                          run_summary)

DOC = {
    "raw_ms": [10.0, 10.5, 9.8, 10.2], "warmup_ms": [30.0], "median_ms": 10.1, "iqr_ms": 0.4, "p10_ms": 9.9,
    "p90_ms": 10.4, "min_ms": 9.8, "max_ms": 10.5, "noisy": False, "samples_per_s": 3168.3,
    "machine": {"device": "CPU only", "host": "ci", "torch": "2.13.0"}, "scope": {"batch_size": 32},
    "runs": [{"raw_ms": [10.0, 10.5]}, {"raw_ms": [9.8, 10.2]}], "clock": "host clock",
    "variation": {"run_medians_ms": [10.25, 10.0], "run_to_run_pct": 2.5, "pass_to_pass_pct": 4.0},
}


def test_the_summary_gives_median_spread_processes_and_machine():
    assert editor_summary(DOC) == ("10.1 ms/step without the profiler (median of 4 passes in 2 processes; IQR 0.400 ms, "
                                   "4% of the median) on CPU only on ci, torch 2.13.0")
    assert editor_status(DOC) == "10.1 ms/step measured, IQR 4%"
    assert editor_status({**DOC, "noisy": True}) == "10.1 ms/step measured, IQR 4%, noisy"


def test_the_details_say_percentiles_samples_run_to_run_and_warmups_apart():
    details = editor_details(DOC)
    assert details[:4] == ["p10 9.90, p90 10.4, min 9.80, max 10.5 ms", "3168 samples/s at batch 32",
                           "2.5% run to run, 4.0% pass to pass", "1 warm-up pass apart, in no figure"]
    assert details[-2:] == ["measured on CPU only on ci, torch 2.13.0", "clock: host clock"]
    assert not any("noisy" in d for d in details)
    assert any(d.startswith("noisy:") for d in editor_details({**DOC, "noisy": True}))


def test_a_verdict_is_said_with_its_interval_and_its_margin():
    compared = {**DOC, "ratio": 0.9, "ci95": [0.85, 0.95], "verdict": "faster", "verdict_detail": "faster",
                "margin": 0.01, "method": {"processes": [3, 3], "margin": 0.01}}
    assert editor_summary(compared).endswith("; ratio 0.900 (95% interval 0.850–0.950): faster (beyond the 1% margin)")
    ruled_out = {**compared, "ratio": 1.002, "ci95": [0.995, 1.008], "verdict": "no detectable difference",
                 "verdict_detail": "within margin"}
    assert editor_summary(ruled_out).endswith("(95% interval 0.995–1.008): no difference larger than 1%")
    open_question = {**ruled_out, "ratio": 1.857, "ci95": [0.95, 3.1], "verdict_detail": "inconclusive",
                     "processes_to_decide": 7}
    assert editor_summary(open_question).endswith(
        "(95% interval 0.950–3.100): inconclusive: the interval reaches past ±1% and inside it; about 7 processes a "
        "side (4 more) would likely decide it (--runs 7)")
    # a document written before verdict_detail existed is read from its interval and its method's margin
    old = {**DOC, "ratio": 0.913, "ci95": [0.822, 0.974], "verdict": "no detectable difference",
           "method": {"processes": [1, 1], "margin": 0.05}}
    assert editor_summary(old).endswith(
        "(95% interval 0.822–0.974): inconclusive: the interval reaches past ±5% and inside it; with one process a "
        "side, run-to-run variation is not observed: measure with --runs 3 or more")
    comparison = {"baseline": {"run": "a|b", "kind": "measure", "median_ms": 11.0, "passes": 4, "processes": 2,
                               "machine": DOC["machine"]},
                  "candidate": {"run": "c", "kind": "measure", "median_ms": 10.1, "passes": 4, "processes": 2,
                                "machine": DOC["machine"]},
                  "ratio": 0.918, "ci95": [0.9, 0.93], "verdict": "faster",
                  "method": {"resampling": "bootstrap over processes", "processes": [2, 2], "margin": 0.01,
                             "run_to_run_observed": True},
                  "values_check": None, "differences": ["warm-up passes (5 vs 3)"]}
    text = comparison_markdown(comparison, "a note")
    assert "| ms/step (median) | 11.0 | 10.1 |" in text and "| run | a\\|b | c |" in text
    assert "**faster (beyond the 1% margin)**: candidate / baseline ratio 0.918 (95% interval 0.900–0.930)" in text
    assert "- compared although they differ in warm-up passes (5 vs 3)" in text and text.rstrip().endswith("a note")


def test_the_value_the_step_computed_is_said_first_to_last_with_what_was_not_read():
    from stepscope.measurement.present import measurement_text, step_values

    trained = {**DOC, "value": "loss", "values": [3.0921, 2.9, None, 2.6348], "values_consistent": True}
    assert step_values(trained) == ("loss 3.092 → 2.635 (first → last of 4 passes; 1 not a number or changed "
                                    "in place); the same in every process")
    assert step_values({**trained, "values_consistent": False}).endswith(
        "the step is not deterministic, so a comparison cannot tell whether a change altered the results")
    nothing = {**DOC, "value": "loss", "values": None}
    assert step_values(nothing).startswith("no `loss` read in the step")
    assert "--value EXPR" in step_values(nothing)
    function_step = {**nothing, "value": "return", "scope": {"step": {"function": "handle", "line": 3}}}
    assert step_values(function_step).startswith("no value: the step function returned no number")
    assert "`return` is what each call returned" in step_values(function_step)
    returned = {**trained, "value": "return", "scope": function_step["scope"]}
    assert step_values(returned).startswith("return value 3.092 → 2.635 (first → last of 4 passes")
    assert "  value    loss 3.092 → 2.635" in measurement_text({**trained, "scope": {"script": "t.py", "step": {"line": 9}}})
    assert editor_details(trained)[4] == step_values(trained)


def test_a_function_steps_call_is_said_beside_the_time_between_call_starts():
    from stepscope.measurement.present import call_words, measurement_text

    assert call_words(DOC) is None  # a loop's step
    handler = {**DOC, "call": {"median_ms": 10.2, "p10_ms": 9.8, "p90_ms": 11.0, "share_of_step": 0.26},
               "scope": {"script": "serve.py", "step": {"function": "handle"}}}
    words = call_words(handler)
    assert words == ("10.2 ms per call, start to return (median; p10 9.80, p90 11.0), 26% of the time between call "
                     "starts; the rest runs between calls")
    assert f"  call     {words}" in measurement_text(handler)
    assert f"the call itself: {words}" in editor_details(handler)
    assert not any("call" in line for line in measurement_text(DOC).splitlines())


def test_the_median_is_said_not_to_be_the_pace_only_when_the_mean_is_far_from_it():
    from stepscope.measurement.present import measurement_text, pace_words

    assert pace_words({**DOC, "mean_ms": 10.9}) is None  # within 10% of the 10.1 median
    bursts = {**DOC, "median_ms": 17.53, "mean_ms": 27.06, "scope": {"script": "t.py", "step": {"line": 9}}}
    words = pace_words(bursts)
    assert words == ("the mean (27.1 ms) is 54% above the median: the passes are skewed or alternate (as when "
                     "DataLoader workers deliver in bursts), so the loop's pace over many steps is the mean, not "
                     "the median")
    assert f"  note     {words}" in measurement_text(bursts) and words in editor_details(bursts)
    assert pace_words({**DOC, "median_ms": 10.0, "mean_ms": 8.0}).startswith("the mean (8.00 ms) is 20% below")


def test_a_profile_runs_line_in_the_list_says_when_its_distortion_is_the_steps_own_variation():
    row = {"kind": "profile", "status": "complete", "ms_per_step": 56.1, "unprofiled_ms": 3.02, "distortion": 18.58}
    assert run_summary(row) == "3.02 ms/step without the profiler, 56.1 profiled (18.58x)"
    assert run_summary({**row, "distortion_overlaps": True}) == \
        "3.02 ms/step without the profiler, 56.1 profiled (18.58x, within the steps' own variation)"
    # not timed without the profiler (the loop ended with the window): the profiled figure, said as such
    assert run_summary({"kind": "profile", "status": "complete", "ms_per_step": 56.1}) == "56.1 ms/step profiled"
