"""A try in words: the figures beside a ratio are the ones the ratio is of (medians, or means where a
side's passes are bursty), on the CLI and in the editor's Markdown alike."""

from __future__ import annotations

from stepscope.measurement.compare import compare
from stepscope.trying.present import editor_markdown, headline, try_text

BASELINE = [60.0 + (i % 3) for i in range(14)]
WORKERS = [15.0, 11.0, 33.0, 34.0, 150.0, 28.0, 38.0, 136.0, 15.0, 33.0, 149.0, 55.0, 163.0, 188.0]
AHEAD = [5.0 + (i % 2) / 10 for i in range(14)]


def side(raw: list[float]) -> dict:
    ordered = sorted(raw)
    return {"median_ms": (ordered[6] + ordered[7]) / 2, "mean_ms": sum(raw) / len(raw), "passes": len(raw)}


def entry(name: str, raw: list[float]) -> dict:
    comparison = compare([BASELINE], [raw]).as_dict()
    return {"name": name, "title": f"the {name} change", "run": f"run-{name}", **side(raw), **comparison,
            "saves": 1.0 - comparison["ratio"], "values_match": True, "results_changed": False,
            "values_check": {"match": True, "compared": 14, "max_relative_difference": 0.0, "tolerance": 1e-4},
            "improvement": comparison["verdict"] == "faster", "applicable": True,
            "change": {"diff": "--- a/t.py\n+++ b/t.py\n", "stats": {"added": 1, "removed": 1}}}


def document() -> dict:
    tries = [entry("workers-2", WORKERS), entry("batch-ahead", AHEAD)]
    return {"script": "train.py", "step": {"line": 69}, "options": {"runs": 1, "warmup": 2, "passes": 14},
            "baseline": {"run": "run-base", **side(BASELINE)}, "tries": tries, "best": "batch-ahead",
            "machine": {"device": "CPU only", "host": "ci"}, "notes": []}


def test_bursty_passes_are_said_by_their_means_and_steady_ones_by_their_medians():
    doc = document()
    workers, ahead = doc["tries"]
    assert workers["method"]["statistic"] == "mean" and ahead["method"]["statistic"] == "median"
    text = try_text(doc)
    # the workers' median (33.5 ms) would read as twice as fast; its mean is the loop's pace, slower
    assert f"{workers['mean_ms']:.1f} ms/step (mean): ratio {workers['ratio']:.3f}" in text
    assert workers["ratio"] > 1 and "33.5 ms/step" not in text
    assert "the ratio is of the means" in text
    assert f"{ahead['median_ms']:.2f} ms/step: ratio" in text
    assert "saves" in headline({**ahead, "baseline_median_ms": doc["baseline"]["median_ms"]})
    markdown = editor_markdown(doc)
    assert "(means)" in markdown and "the ratio is of the means" in markdown
