"""The try document: the workspace as it is against each change tried, and which change is best.

    doc = try_document(source, baseline, [(change, measured), ...], options)

`baseline` is the measure document of the workspace as it is; each `measured` is the measure
document of one change's side with its comparison against the baseline merged in (ratio, ci95,
verdict, verdict_detail, margin, values_match, values_check: `measure --against`'s fields). Pure:
documents in, a document out.

Invariants:
- A change whose values differ from the baseline's beyond the tolerance (`values_match` False) has
  `results_changed` true and is never an `improvement`, whatever its speed: choosing it is the
  user's explicit choice.
- `improvement`: verdict `faster` and the results not changed. `best` names the improvement with
  the lowest ratio, or is None; an experiment (`applicable` False) can be best, and says so.
- `saves` is 1 - ratio, the share of the baseline's median step the change saves (negative: it
  costs), never a figure of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from .change import Change

DOC_VERSION = 1
_COMPARISON = ("ratio", "ci95", "verdict", "verdict_detail", "margin", "processes_to_decide", "method",
               "values_match", "values_check", "differences")


def change_summary(change: Change) -> dict[str, Any]:
    """What the document says of a change: its title, origin, diff and files (by digest, not text)."""
    doc = change.as_dict()
    doc["files"] = [{"path": f.path, "before_sha256": f.before_sha256, "created": f.before is None}
                    for f in change.files]
    return doc


def try_entry(name: str, change: Change, measured: dict[str, Any]) -> dict[str, Any]:
    results_changed = measured.get("values_match") is False
    entry = {
        "name": name,
        "title": change.title,
        "run": Path(measured["run_dir"]).name,
        "run_dir": measured["run_dir"],
        "median_ms": measured.get("median_ms"),
        "mean_ms": measured.get("mean_ms"),
        "iqr_ms": measured.get("iqr_ms"),
        "noisy": measured.get("noisy"),
        "passes": len(measured.get("raw_ms") or []),
        "processes": len(measured.get("runs") or []),
        **{key: measured.get(key) for key in _COMPARISON if key in measured},
        "saves": (1.0 - measured["ratio"]) if isinstance(measured.get("ratio"), (int, float)) else None,
        "results_changed": results_changed,
        "improvement": measured.get("verdict") == "faster" and not results_changed,
        "applicable": change.applicable,
        "change": change_summary(change),
    }
    return entry


def try_document(source: dict[str, Any], baseline: dict[str, Any],
                 tried: Sequence[tuple[str, Change, dict[str, Any]]], options: dict[str, Any]) -> dict[str, Any]:
    entries = [try_entry(name, change, measured) for name, change, measured in tried]
    improvements = [e for e in entries if e["improvement"]]
    best = min(improvements, key=lambda e: e["ratio"])["name"] if improvements else None
    scope = baseline.get("scope") or {}
    return {
        "version": DOC_VERSION,
        "kind": "try",
        "source": source,
        "script": scope.get("script"),
        "step": scope.get("step"),
        "value": scope.get("value"),
        "machine": baseline.get("machine"),
        "options": options,
        "baseline": {
            "run": Path(baseline["run_dir"]).name, "run_dir": baseline["run_dir"],
            "median_ms": baseline.get("median_ms"), "mean_ms": baseline.get("mean_ms"), "iqr_ms": baseline.get("iqr_ms"), "noisy": baseline.get("noisy"),
            "passes": len(baseline.get("raw_ms") or []), "processes": len(baseline.get("runs") or []),
            "values": baseline.get("values"),
        },
        "tries": entries,
        "best": best,
        "notes": list(baseline.get("notes") or []),
    }


def entry_named(doc: dict[str, Any], name: str | None) -> dict[str, Any] | None:
    """The tried change `name` of a try document (None: the best, else the only one)."""
    tries = doc.get("tries") or []
    if name is not None:
        return next((e for e in tries if e.get("name") == name), None)
    if doc.get("best") is not None:
        return entry_named(doc, doc["best"])
    return tries[0] if len(tries) == 1 else None
