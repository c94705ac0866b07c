"""A try in words: the one wording of its verdicts for the CLI, the editor and the panel.

Pure functions of the try document (result.py). Figures and verdicts are worded by
`measurement.present` (the same ratio, interval, margin and values line as `measure --against`);
what is said here is what a try adds: what was tried, how much of the step it saves, whether the
results changed, and which change is best.
"""

from __future__ import annotations

from typing import Any

from ..measurement.present import compared_figure, machine_label, method_line, ms, percent, ratio, step_label, \
    values_line, verdict_words


def speed_words(entry: dict[str, Any]) -> str:
    """How much of the step a change saves or costs, where the verdict calls a difference: `saves 38% of
    the step (58.1 → 36.0 ms)`; otherwise the two figures compared (medians, or means where the
    comparison was of the means)."""
    saves = entry.get("saves")
    key = "mean_ms" if (entry.get("method") or {}).get("statistic") == "mean" else "median_ms"
    figures = (f"{ms(entry.get('baseline_' + key))} → {ms(entry.get(key))} ms"
               + (" (means)" if key == "mean_ms" else ""))
    if entry.get("verdict") == "faster" and saves is not None:
        return f"saves {percent(saves)} of the step ({figures})"
    if entry.get("verdict") == "slower" and saves is not None:
        return f"costs {percent(-saves)} more per step ({figures})"
    return figures


def change_words(entry: dict[str, Any]) -> str:
    """The verdict, what it saves, whether the results stayed: `faster (beyond the 1% margin), saves 38%
    of the step (58.1 → 36.0 ms); values unchanged (30 passes compared)`."""
    return f"{verdict_words(entry)}, {speed_words(entry)}; {results_words(entry)}"


def results_words(entry: dict[str, Any]) -> str:
    check = entry.get("values_check") or {}
    if entry.get("results_changed"):
        difference = check.get("max_relative_difference")
        by = f" by up to {difference:.2g} (relative)" if isinstance(difference, (int, float)) else ""
        return (f"the results CHANGED (the values differ from pass {check.get('first_difference')} on{by}): not an "
                "improvement unless you accept other results")
    if entry.get("values_match") is True:
        return f"values unchanged ({check.get('compared')} passes compared)"
    return "values not compared (no value read in the step: name one with --value)"


def headline(entry: dict[str, Any]) -> str:
    """One line: `DataLoader with 2 workers: faster (beyond the 1% margin), saves 38% of the step ...`."""
    return f"{entry.get('title')}: {change_words(entry)}"


def beside_baseline(entry: dict[str, Any], baseline: dict[str, Any] | None) -> dict[str, Any]:
    """A tried change's entry with the baseline's figures beside its own, as `speed_words` reads them."""
    base = baseline or {}
    return {**entry, "baseline_median_ms": base.get("median_ms"), "baseline_mean_ms": base.get("mean_ms")}


def _with_baseline(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [beside_baseline(entry, doc.get("baseline")) for entry in doc.get("tries") or []]


def best_words(doc: dict[str, Any]) -> str:
    best = next((e for e in _with_baseline(doc) if e.get("name") == doc.get("best")), None)
    if best is None:
        changed = [e for e in doc.get("tries") or [] if e.get("results_changed")]
        if changed and all(e.get("verdict") == "faster" for e in changed) and len(changed) == len(doc["tries"]):
            return "none is an improvement: every faster change altered the results"
        return "none is faster with the same results"
    text = f"{best['name']} ({best['title']}): {speed_words(best)}; {results_words(best)}"
    if not best.get("applicable"):
        text += f"; {best['change'].get('why_not')}"
    return text


def try_text(doc: dict[str, Any]) -> str:
    """The CLI text of a try (the `try --json` document)."""
    step = doc.get("step") or {}
    base = doc.get("baseline") or {}
    options = doc.get("options") or {}
    out = [f"try at {step_label(doc.get('script'), step.get('line'), step.get('function'))}"
           + (f" (`{step['header']}`)" if step.get("header") else "")
           + f": {options.get('runs')} process(es) a side, interleaved, {options.get('warmup')} warm-up + "
             f"{options.get('passes')} timed passes each",
           f"  baseline  the workspace as it is: {ms(base.get('median_ms'))} ms/step (median of {base.get('passes')} "
           f"passes), run {base.get('run')}"]
    for entry in _with_baseline(doc):
        out.append("")
        out.append(f"  {entry['name']}  {entry['title']}  (run {entry['run']})")
        low, high = entry["ci95"]
        out.append(f"    {compared_figure(entry, entry.get('method'))}: ratio {ratio(entry['ratio'])} (95% interval {ratio(low)}–"
                   f"{ratio(high)}): {verdict_words(entry)}"
                   + (f"; {speed_words(entry)}" if entry.get("verdict") in ("faster", "slower") else ""))
        out.append(f"    {values_line(entry.get('values_check'))}")
        if not entry.get("applicable"):
            out.append(f"    note: {entry['change'].get('why_not')}")
        for difference in entry.get("differences") or []:
            out.append(f"    compared although the change made them differ in the {difference}")
    first = (doc.get("tries") or [{}])[0]
    out.append("")
    out.append(f"  method   {method_line(first.get('method') or {})}")
    out.append(f"  machine  {machine_label(doc.get('machine'))}")
    for note in doc.get("notes") or []:
        out.append(f"  note     {note}")
    out.append("")
    out.append(f"best: {best_words(doc)}")
    for entry in doc.get("tries") or []:
        out.append("")
        out.append(f"change {entry['name']} ({entry['change']['stats']['added']} added, "
                   f"{entry['change']['stats']['removed']} removed):")
        out.append(entry["change"]["diff"].rstrip("\n"))
    return "\n".join(out) + "\n"


def editor_summary(doc: dict[str, Any]) -> str:
    """A try in one line for the editor's notification."""
    entries = _with_baseline(doc)
    if len(entries) == 1:
        return headline(entries[0])
    return f"{len(entries)} variants tried; best: {best_words(doc)}"


def editor_markdown(doc: dict[str, Any]) -> str:
    """A try for the editor's result view, in Markdown: each change's verdict, its values, its diff."""
    def cell(text: Any) -> str:
        return str(text).replace("|", "\\|").replace("`", "'")

    step = doc.get("step") or {}
    base = doc.get("baseline") or {}
    rows = [f"# Stepscope: try at {cell(step_label(doc.get('script'), step.get('line'), step.get('function')))}", "",
            f"Baseline, the workspace as it is: **{ms(base.get('median_ms'))} ms/step** (median of "
            f"{base.get('passes')} passes, run {cell(base.get('run'))}), on {cell(machine_label(doc.get('machine')))}.",
            ""]
    for entry in _with_baseline(doc):
        low, high = entry["ci95"]
        rows += [f"## {cell(entry['title'])} ({cell(entry['name'])})", "",
                 f"**{cell(verdict_words(entry))}**, {cell(speed_words(entry))}: ratio {ratio(entry['ratio'])} "
                 f"(95% interval {ratio(low)}–{ratio(high)}); {cell(results_words(entry))}", "",
                 f"- {cell(values_line(entry.get('values_check')))}",
                 f"- method: {cell(method_line(entry.get('method') or {}))}"]
        if not entry.get("applicable"):
            rows.append(f"- {cell(entry['change'].get('why_not'))}")
        rows += ["", "```diff", entry["change"]["diff"].rstrip("\n").replace("```", "'''"), "```", ""]
    if len(doc.get("tries") or []) > 1:
        rows.append(f"Best: {cell(best_words(doc))}")
    return "\n".join(rows) + "\n"
