"""The trace panel served alone, as the extension host serves it (its page, CSP and nonce), in a real
headless Chromium: fed a report and a timeline from a real analysis, it shows them, sorts and filters,
opens lines, zooms, pans and selects; trace strings made to attack it execute nothing and break
nothing. Screenshots land in test-results/panel/ (look at them).
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from stepscope.analysis import present
from stepscope.analysis.links import build_links
from stepscope.analysis.report import analyze
from stepscope.analysis.steps import find_steps
from stepscope.analysis.timeline import MIN_CAP, build_spans, summarize
from stepscope.analysis.panel import timeline_document
from stepscope.trace import read_trace

from ..analysis.kineto_synth import MAIN, Synth, run_folder
from .conftest import BUILT_TESTS, CHROMIUM, PLAYWRIGHT_CORE, REPO, RESULTS

pytestmark = pytest.mark.browser

DRIVER = Path(__file__).with_name("driver.mjs")
HARNESS = Path(__file__).with_name("harness.js")

HOSTILE = [
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=2">',
    "A" * 10_240,
    "\u202eyp.live\u202c kernel_\u202e",
    "Z\u0337\u0322\u031ba\u0336l\u0335g\u0335o 🔥🚀 \u200f\u200e עברית العربية",
    "line\nbreak\ttab",
    "\"'><svg onload=window.__pwned=3>",
]


SECRET = "jane.doe@example.com"
COMPILED_RUN = REPO / "tests" / "data" / "compiled" / "h200_mlp_compiled"


def training_trace(names: list[str] | None = None) -> Synth:
    """Four 2 ms steps: regions on lines of two files, operators launching kernels and copies, a host
    sync, and an autograd thread; `names` (hostile strings) name operators, kernels and regions."""
    names = names or []
    s = Synth()
    for k in range(4):
        base = k * 2000
        s.step(k + 1, base, 2000)
        s.region("ss:f0:10:next", base, 300)
        s.region("ss:f0:12", base + 300, 600)
        s.op(names[0] if names else "aten::linear", base + 310, 200)
        s.op("aten::addmm", base + 320, 150)
        s.launch(base + 330, base + 600, 500, name=names[1] if len(names) > 1 else "sm90_xmma_gemm_f32f32_tn")
        s.launch(base + 480, base + 1100, 40, kind="gpu_memcpy", nbytes=1 << 20)
        s.region("ss:f1:7", base + 950, 500)
        s.op(names[2] if len(names) > 2 else "aten::relu", base + 960, 100)
        s.launch(base + 970, base + 1200, 300, name=names[3] if len(names) > 3 else "void at::native::relu_kernel<float>()")
        s.region(names[4] if len(names) > 4 else "Optimizer.step#SGD.step", base + 1500, 300)
        s.sync(base + 1820, 120)
        s.op(names[5] if len(names) > 5 else "aten::add", base + 1000, 200, tid=200)
        s.launch(base + 1010, base + 1600, 100, tid=200, stream=8, name=names[6] if len(names) > 6 else "add_kernel")
    if names:
        s.metadata["traceName"] = names[0]
        s.events.append({"ph": "M", "name": "thread_name", "pid": 100, "tid": MAIN, "args": {"name": names[4]}})
    return s


def cpu_trace() -> Synth:
    """Four 2 ms steps of a CPU-only run: a batch read, then `aten::copy_` three times a step, twice
    on train_cpu.py:35 and once on model.py:7."""
    s = Synth(devices=[])
    for k in range(4):
        base = k * 2000
        s.step(k + 1, base, 2000)
        s.region("ss:f0:10:next", base, 300)
        s.region("ss:f0:35", base + 300, 600)
        s.op("aten::copy_", base + 310, 200)
        s.op("aten::copy_", base + 520, 100)
        s.region("ss:f1:7", base + 950, 500)
        s.op("aten::copy_", base + 960, 100)
    return s


def memshapes_trace() -> Synth:
    """Four 2 ms steps of a CPU run that recorded input shapes and host memory: line 35 calls
    `aten::linear` on two input shapes and allocates 1 MiB a step, line 7 `aten::relu` (no allocation)
    and `aten::add` with a scalar input."""
    s = Synth(devices=[])
    for k in range(4):
        base = k * 2000
        s.step(k + 1, base, 2000)
        s.region("ss:f0:35", base + 100, 600)
        s.op("aten::linear", base + 110, 200, dims=[[256, 512], [1024, 512], [1024]])
        s.memory(base + 150, 1 << 20, (k + 1) << 20)
        s.op("aten::linear", base + 320, 100, dims=[[256, 1024], [1024, 1024], [1024]])
        s.region("ss:f1:7", base + 800, 300)
        s.op("aten::relu", base + 810, 50, dims=[[256, 1024]])
        s.op("aten::add", base + 870, 20, dims=[[256, 1024], []], types=["float", "Scalar"])
    return s


def state(tmp: Path, synth: Synth, *, files: dict[str, str], run_id: str, title: str, cap: int | None = None) -> dict:
    run = run_folder(tmp, synth, files=files)
    timelines: dict = {}
    report = analyze([run], timelines=timelines)
    timeline = json.loads(timelines[run / "trace.json"])
    if cap is not None:
        trace = read_trace(run / "trace.json")
        links = build_links(trace)
        timeline = timeline_document(trace, links, find_steps(trace, links), per="step", file_table=None,
                                     source_root=None, cap=cap)
    return {"runId": run_id, "title": title, "report": report, "timeline": timeline, "measure": None, "stale": False}


MEASURE = {
    "raw_ms": [2.01, 2.03, 1.98, 2.10, 2.02, 2.05, 1.99, 2.04, 2.00, 2.07], "warmup_ms": [9.5, 2.6, 2.2],
    "median_ms": 2.025, "iqr_ms": 0.05, "p10_ms": 1.99, "p90_ms": 2.07, "min_ms": 1.98, "max_ms": 2.10,
    "samples_per_s": 15800.0, "noisy": False, "machine": {"device": "CPU only", "host": "ci"}, "ratio": 0.93,
    "ci95": [0.90, 0.96], "verdict": "faster", "compare_raw_ms": [2.2, 2.15, 2.18, 2.21, 2.17],
    # the server's words for it (stepscope/measure): the margin it was called against
    "verdict_words": "faster (beyond the 1% margin)",
}


# a measure run of two processes compared with a recorded run: what `stepscope/measure` answers
MEASURE_RUNS = {
    **MEASURE, "raw_ms": [2.01, 2.03, 1.98, 2.10, 2.02, 2.05], "warmup_ms": [9.5, 2.6, 7.0, 2.4],
    "median_ms": 2.025, "mean_ms": 2.03, "scope": {"batch_size": 32},
    "runs": [{"raw_ms": [2.01, 2.03, 1.98], "warmup_ms": [9.5, 2.6]}, {"raw_ms": [2.10, 2.02, 2.05], "warmup_ms": [7.0, 2.4]}],
    "variation": {"run_medians_ms": [2.01, 2.05], "run_to_run_pct": 2.0, "pass_to_pass_pct": 2.5},
    "compare_label": "run 20261201T101500Z-train-1a2b", "baseline": {"median_ms": 2.18}, "values_match": True,
    # a try run (`stepscope try`): the change it measured, a hostile line in its diff shown as text
    "tried": {"title": "DataLoader with 2 workers",
              "words": "DataLoader with 2 workers: faster (beyond the 1% margin), saves 7% of the step (2.18 → 2.02 ms); "
                       "values unchanged (6 passes compared)",
              "diff": "--- a/train.py\n+++ b/train.py\n@@ -3 +3 @@\n-loader = DataLoader(data)\n"
                      "+loader = DataLoader(data, num_workers=2)  # <img src=x onerror=alert(1)>\n"},
}


def handler_measure() -> dict:
    """A --function step whose calls are fed in bursts, as the server gives it to the panel: the
    measure document (measurement.result) with the server's words for the call and the pace."""
    from stepscope.lsp.measuring import panel_words
    from stepscope.measurement.result import measurement

    raw = [4.1, 45.2, 4.3, 44.8, 4.0, 46.1, 4.4, 45.5, 4.2]
    doc = measurement([{"raw_ms": raw, "warmup_ms": [120.0, 30.0], "call_ms": [3.0] * len(raw), "clock": "host"}],
                      machine={"device": "CPU only", "host": "ci"},
                      scope={"script": "serve.py", "step": {"function": "handle"}, "batch_size": None})
    return {**doc, **panel_words(doc)}


def statements_doc() -> dict:
    """Two profile runs of a file that gained two lines above its loop and had one statement changed
    (one made to attack the page), compared as the server compares them (analysis/run_compare.py)."""
    from stepscope.analysis.run_compare import RunLines, compare_statements

    before = "import torch\nfor x in data:\n    y = model(x)\n    " + HOSTILE[0] + "\n    opt.step()\n"
    after = before.replace("import torch\n", "import torch\n# one\n# two\n").replace(HOSTILE[0], HOSTILE[1])
    line = {"file": "/ws/train.py", "precision": "exact", "cpu_self_ms": 0.1, "cpu_total_ms": 0.1, "gpu_ms": None,
            "backward_ms": None, "kernels": 0, "sync_ms": 0.0}
    a = {"ms_per_step": 12.5, "steps": [{}] * 4, "machine": {"device": "CPU only", "host": "ci"},
         "lines": [{**line, "line": 3, "wall_ms": 9.0}, {**line, "line": 4, "wall_ms": 1.5}, {**line, "line": 5, "wall_ms": 2.0}]}
    b = {"ms_per_step": 20.0, "steps": [{}] * 4, "machine": {"device": "CPU only", "host": "ci"},
         "lines": [{**line, "line": 5, "wall_ms": 16.0}, {**line, "line": 6, "wall_ms": 0.5}, {**line, "line": 7, "wall_ms": 2.5}]}
    return compare_statements(RunLines("20261201T101500Z-train-aaaa", a, {"train.py": before}, "/ws"),
                              RunLines("20261201T111500Z-train-bbbb", b, {"train.py": after}, "/ws"))


@pytest.fixture(scope="module")
def seen(panel_build: str) -> dict:
    """Every scenario, run once in one browser: what the driver saw."""
    missing = [str(p) for p in (PLAYWRIGHT_CORE, CHROMIUM) if not p.exists()]
    if missing:
        pytest.skip("browser tools are missing (" + ", ".join(missing) + "): run tools/setup-tools.sh")
    work = Path(tempfile.mkdtemp(prefix="panel-"))
    scenarios = []
    expected: dict = {}

    main = state(work / "main", training_trace(), files={"f0": "train.py", "f1": "model/net.py"},
                 run_id="20261201T101500Z-train-1a2b", title="train.py:10 — 4 steps")
    main["report"]["unprofiled"] = {"ms_per_step": 1.6, "passes": 5, "iqr_ms": 0.02, "raw_ms": [1.59, 1.6, 1.6, 1.61, 1.62]}
    main["report"]["distortion"] = 1.25
    main["report"]["distortion_words"] = present.distortion_text(main["report"])  # as stepscope/report adds them
    main["measure"] = MEASURE
    doc = main["timeline"]
    spans = doc["spans"]
    kernel_cat = doc["categories"].index("kernel")
    kernels = [i for i, c in enumerate(spans["category"]) if c == kernel_cat and spans["line"][i] >= 0]
    click = max(kernels, key=lambda i: spans["dur_us"][i])
    # the search: the clicked kernel's name, in other letters' case
    search = doc["names"][spans["name"][click]].swapcase()
    start, dur = spans["start_us"][click], spans["dur_us"][click]
    expected["main"] = {"doc": doc, "report": main["report"], "click": click, "search": search}
    for theme in ("dark", "light"):
        path = work / f"main-{theme}.json"
        path.write_text(json.dumps(main))
        scenarios.append({"name": f"main-{theme}", "kind": "main", "theme": theme, "state": str(path),
                          "filter": "model/net", "clickSpan": click, "search": search,
                          "clickRange": [start - 20 * dur, start + 21 * dur]})

    files = {"f0": "train.py", "f1": "<script>alert(1)</script>/\u202egnp.py"}
    hostile = state(work / "hostile", training_trace(HOSTILE), files=files, run_id="r-hostile",
                    title=HOSTILE[0] + HOSTILE[2])
    report = hostile["report"]
    report["findings"].append({"kind": HOSTILE[1], "file": "/ws/" + HOSTILE[0], "line": 3, "observation": HOSTILE[2],
                               "hypothesis": HOSTILE[4] + "\u0000", "next_check": HOSTILE[5], "severity": "warning"})
    report["notes"].append(HOSTILE[6])
    report["machine"]["device"] = HOSTILE[1]
    names = hostile["timeline"]["names"]
    first_of = {}
    for i, n in enumerate(hostile["timeline"]["spans"]["name"]):
        for k, h in enumerate(HOSTILE):
            if h[:30] in names[n]:
                first_of.setdefault(k, i)
    hover = sorted(first_of.values())
    for theme in ("dark", "light"):
        path = work / f"hostile-{theme}.json"
        path.write_text(json.dumps(hostile))
        scenarios.append({"name": f"hostile-{theme}", "kind": "hostile", "theme": theme, "state": str(path),
                          "hoverSpans": hover[:12]})

    names = ["aten::linear", "sm90_xmma_gemm_f32f32_tn", "aten::relu", "relu_kernel", SECRET, "aten::add", "add_kernel"]
    marked = state(work / "redact", training_trace(names), files={"f0": "train.py", "f1": "model/net.py"},
                   run_id="20261201T101500Z-train-5e5e", title="train.py:10 — secrets")
    doc = marked["timeline"]
    secret_span = next(i for i, n in enumerate(doc["spans"]["name"]) if doc["names"][n] == SECRET)
    expected["redact"] = {"doc": doc}
    (work / "redact.json").write_text(json.dumps(marked))
    scenarios.append({"name": "redact", "kind": "redact", "theme": "dark", "state": str(work / "redact.json"),
                      "hoverSpan": secret_span})

    busy = Synth()
    busy.step(1, 0, 60_000)
    busy.region("ss:f0:3", 10, 59_900)
    t = 20
    for _ in range(1500):
        busy.op("aten::mul", t, 2)
        busy.launch(t, t + 5, 2)
        t += 35
    reduced = state(work / "reduced", busy, files={"f0": "train.py"}, run_id="r-reduced", title="busy", cap=MIN_CAP)
    trace = read_trace(work / "reduced" / "run" / "trace.json")
    links = build_links(trace)
    table = build_spans(trace, links, find_steps(trace, links))
    fine = summarize(table, 10_000.0, 14_000.0, cap=MIN_CAP)
    assert reduced["timeline"]["reduced"] and not fine["reduced"]
    (work / "reduced.json").write_text(json.dumps(reduced))
    (work / "fine.json").write_text(json.dumps(fine))
    scenarios.append({"name": "reduced", "kind": "reduced", "theme": "dark", "state": str(work / "reduced.json"),
                      "range": str(work / "fine.json"), "zoomTo": [11_000.0, 12_000.0]})

    alone = {"runId": "20261201T101700Z-train-9c9c", "title": "train.py, the loop at line 10 · measured",
             "report": None, "timeline": None, "stale": False, "measure": MEASURE_RUNS}
    for theme in ("dark", "light"):
        path = work / f"measure-{theme}.json"
        path.write_text(json.dumps(alone))
        scenarios.append({"name": f"measure-{theme}", "kind": "measure", "theme": theme, "state": str(path)})
    handler = {**alone, "title": "serve.py, handle() · measured", "measure": handler_measure()}
    (work / "measure-handler.json").write_text(json.dumps(handler))
    scenarios.append({"name": "measure-handler", "kind": "measure", "theme": "dark",
                      "state": str(work / "measure-handler.json")})

    # two profile runs compared statement by statement, as stepscope/compareRuns gives them to the panel
    compared = {"runId": "20261201T111500Z-train-bbbb", "title": "run A against run B, statement by statement",
                "report": None, "timeline": None, "measure": None, "stale": False, "comparison": statements_doc()}
    for theme in ("dark", "light"):
        path = work / f"comparison-{theme}.json"
        path.write_text(json.dumps(compared))
        scenarios.append({"name": f"comparison-{theme}", "kind": "comparison", "theme": theme, "state": str(path)})

    # a recorded torch.compile run on the H200, as the server gives it to the panel
    timelines: dict = {}
    report = analyze([COMPILED_RUN], timelines=timelines)
    (timeline,) = timelines.values()
    compiled = {"runId": "20261201T120000Z-compiled_mlp-0c0c", "title": "compiled_mlp.py — compiled", "report": report,
                "timeline": json.loads(timeline), "measure": None, "stale": False}
    expected["compiled"] = {"report": report}
    (work / "compiled.json").write_text(json.dumps(compiled))
    scenarios.append({"name": "compiled", "kind": "compiled", "theme": "dark", "state": str(work / "compiled.json")})

    recorded = state(work / "memshapes", memshapes_trace(), files={"f0": "train_cpu.py", "f1": "model.py"},
                     run_id="r-memshapes", title="train_cpu.py — shapes and memory")
    expected["memshapes"] = {"report": recorded["report"], "doc": recorded["timeline"]}
    (work / "memshapes.json").write_text(json.dumps(recorded))
    scenarios.append({"name": "memshapes", "kind": "memshapes", "theme": "dark", "state": str(work / "memshapes.json")})

    cpu = state(work / "cpu", cpu_trace(), files={"f0": "train_cpu.py", "f1": "model.py"}, run_id="r-cpu",
                title="train_cpu.py — CPU only")
    (work / "cpu.json").write_text(json.dumps(cpu))
    scenarios.append({"name": "cpu", "kind": "cpu", "theme": "dark", "state": str(work / "cpu.json")})

    broken = copy.deepcopy(main)
    broken["timeline"] = {"schema_version": 99}
    (work / "broken.json").write_text(json.dumps(broken))
    scenarios.append({"name": "broken", "kind": "broken", "theme": "dark", "state": str(work / "broken.json")})

    RESULTS.mkdir(parents=True, exist_ok=True)
    config = {"playwrightCore": str(PLAYWRIGHT_CORE), "chromium": str(CHROMIUM), "htmlModule": str(BUILT_TESTS / "html.mjs"),
              "dist": str(REPO / "panel" / "dist"), "harness": str(HARNESS), "screenshots": str(RESULTS),
              "out": str(work / "seen.json"), "scenarios": scenarios}
    (work / "config.json").write_text(json.dumps(config))
    run = subprocess.run([panel_build, str(DRIVER), str(work / "config.json")], cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    out = json.loads((work / "seen.json").read_text())
    for name, result in out["results"].items():
        assert "failed" not in result, f"{name}: {result.get('failed')}"
    return {**out, "expected": expected}


THEMES = ("dark", "light")


def fid_of(report: dict, path: str) -> str:
    return "f1" if path.endswith("model/net.py") else "f0"


@pytest.mark.parametrize("theme", THEMES)
def test_the_panel_loads_its_state_without_error(seen: dict, theme: str) -> None:
    r = seen["results"][f"main-{theme}"]
    assert r["banner"] is None
    assert r["firstPosted"] == {"type": "ready"}  # the handshake: the host answers with the state
    assert r["errors"] == [] and r["console"] == []
    assert all(url.startswith(seen["origin"]) for url in r["requests"]), r["requests"]  # no remote resource


def test_overview_shows_the_headline_breakdown_findings_and_measures(seen: dict) -> None:
    r = seen["results"]["main-dark"]
    text = r["overviewText"]
    assert "2.00 ms per step" in text and "median of 4 active steps" in text
    # timed without the profiler too: that figure leads, the profiled one (which the lines are of) named under it
    assert re.search(r"[\d.]+ ms per step without the profiler", text) and "profiled: 2.00 ms per step" in text
    assert text.index("per step without the profiler") < text.index("profiled: 2.00 ms per step")
    assert "Where each step's time went" in text and "GPU busy" in text
    # the profiler's distortion, when present, in the server's words
    assert "Outside the profiler" in text and "the profiler made the step 1.25x slower (distortion 1.25)" in text
    assert "Measured without the profiler" in text and "0.930×" in text and "faster" in text
    assert "Start-up" in text
    # each bar adds up to its step, never above it
    assert len(r["bars"]) == 5  # the mean, then four steps
    for bar in r["bars"]:
        assert 99.0 <= bar["segmentsPercent"] <= 100.0 + 1e-6, bar
    report = seen["expected"]["main"]["report"]
    if report["findings"]:
        f = report["findings"][0]
        assert r["findingPosted"] == {"type": "openSource", "fileId": fid_of(report, f["file"]), "line": f["line"]}


def test_a_function_steps_measure_shows_its_call_and_says_when_the_median_is_not_the_pace(seen: dict) -> None:
    r = seen["results"]["measure-handler"]
    assert r["banner"] is None and r["errors"] == [] and r["console"] == []
    text = r["overviewText"]
    words = handler_measure()
    assert words["call_words"].startswith("3.00 ms per call, start to return") and words["call_words"] in text
    assert words["pace_words"].startswith("the mean (") and words["pace_words"] in text
    assert "the loop's pace over many steps is the mean, not the median" in text


@pytest.mark.parametrize("theme", THEMES)
def test_a_measure_run_shows_its_distribution_and_its_comparison(seen: dict, theme: str) -> None:
    r = seen["results"][f"measure-{theme}"]
    assert r["banner"] is None and r["errors"] == [] and r["console"] == []
    assert r["shareDisabled"] is True  # a measure run has no trace to share
    assert r["tabs"] == ["Overview"]  # nor a timeline, lines, operators, kernels or steps to show
    text = r["overviewText"]
    assert "No report for this run" not in text  # a measure run has none, and needs none
    for words in ("Measured without the profiler", "2.02 ms per step", "p10 / p90", "1.99 ms / 2.07 ms",
                  "min / max", "1.98 ms / 2.10 ms", "15,800 at batch 32",
                  "6 measured in 2 processes; 4 warm-up apart, in no figure",
                  "2.0% between the processes' medians (2.01 ms, 2.05 ms), beside 2.5% pass to pass",
                  "Steady: the IQR is within 10% of the median", "Measured on CPU only, host ci",
                  "Warm-up passes beyond the axis, at its edge: 9.50 ms, 2.60 ms, 7.00 ms, 2.40 ms",
                  "/ run 20261201T101500Z-train-1a2b (2.18 ms): 0.930× median, 95% interval 0.900 – 0.960: faster "
                  "(beyond the 1% margin)"):
        assert words in text, words
    # a try run: the change it measured, its verdict in the server's words, its diff line by line, as text
    assert "The change tried: DataLoader with 2 workers" in text
    assert MEASURE_RUNS["tried"]["words"] in text
    assert "+loader = DataLoader(data, num_workers=2)  # <img src=x onerror=alert(1)>" in text
    strip = r["strip"]
    # every pass is a dot: measured ones on a row per process, warm-ups apart, the baseline's below
    assert sorted(strip["measured"]) == sorted(MEASURE_RUNS["raw_ms"])
    assert sorted(strip["warm"]) == sorted(MEASURE_RUNS["warmup_ms"])
    assert sorted(strip["before"]) == sorted(MEASURE_RUNS["compare_raw_ms"])
    assert strip["rows"][:4] == ["warm-up", "process 1", "process 2", "baseline"]
    assert strip["histBars"] > 0 and strip["histBefore"] > 0 and strip["width"] > 300
    assert "6 measured passes, 4 warm-up passes shown apart, and the baseline's 5 passes" in strip["label"]
    for pair in r["contrast"]:
        assert pair["ratio"] >= 4.5, pair


@pytest.mark.parametrize("theme", THEMES)
def test_two_runs_compared_statement_by_statement_are_a_view_of_the_panel(seen: dict, theme: str) -> None:
    r = seen["results"][f"comparison-{theme}"]
    assert r["banner"] is None and r["errors"] == [] and r["console"] == []
    assert r["tabs"] == ["Overview"] and r["shareDisabled"] is True
    text = r["overviewText"]
    for words in ("Two runs, statement by statement",
                  "A · run 20261201T101500Z-train-aaaa · 12.5 ms per step profiled · 4 steps · CPU only, host ci",
                  "B · run 20261201T111500Z-train-bbbb · 20.0 ms per step profiled",
                  "matched by their code, so one that moved keeps its row", "two profiled runs are not a measurement"):
        assert words in text, words
    # the heavy statement beside itself across the move (3 then, 5 now), costliest first
    assert r["statements"] == ["y = model(x)", "opt.step()"]
    assert r["placesA"] == ["train.py:3", "train.py:5"] and r["placesB"] == ["train.py:5", "train.py:7"]
    assert r["sortedByStatement"] in (["opt.step()", "y = model(x)"], ["y = model(x)", "opt.step()"])
    # the changed statement in each run's code only: its text, hostile as it is, shown as text
    assert len(r["onlyA"]) == 1 and r["onlyA"][0].startswith(HOSTILE[0]) and "train.py:4 · 1.50 ms" in r["onlyA"][0]
    assert len(r["onlyB"]) == 1 and r["onlyB"][0].startswith(HOSTILE[1]) and "train.py:6 · 500 µs" in r["onlyB"][0]
    dom = r["dom"]
    assert dom["pwned"] is None and dom["scripts"] == 2 and dom["images"] == 0 and dom["handlers"] == 0
    assert dom["violations"] == [] and dom["pageWidth"] <= dom["viewport"] + 1
    assert all(url.startswith(seen["origin"]) for url in r["requests"])
    for pair in r["contrast"]:
        assert pair["ratio"] >= 4.5, pair


def test_tables_show_every_row(seen: dict) -> None:
    r = seen["results"]["main-dark"]
    doc = seen["expected"]["main"]["doc"]
    report = seen["expected"]["main"]["report"]
    assert r["rows"] == {"lines": len(report["lines"]), "operators": len(doc["operators"]["rows"]),
                         "kernels": len(doc["kernels"]["rows"]), "steps": 4}
    assert r["rows"]["lines"] == 3 and r["rows"]["kernels"] == 3


def ms(text: str) -> float:
    value, unit = text.split()
    return float(value) * {"ms": 1.0, "µs": 1e-3, "s": 1000.0, "ns": 1e-6}[unit]


def test_sorting_and_filtering_the_lines(seen: dict) -> None:
    r = seen["results"]["main-dark"]
    walls = [ms(v) for v in r["wallDefault"]]
    assert walls == sorted(walls, reverse=True)
    assert [ms(v) for v in r["wallAscending"]] == sorted(walls)
    assert r["wallSortState"] == "ascending"
    lines = [int(v) for v in r["lineSorted"]]
    assert lines == sorted(lines, reverse=True)
    report = seen["expected"]["main"]["report"]
    assert sorted(int(v) for v in r["filtered"]) == sorted(x["line"] for x in report["lines"] if x["file"].endswith("model/net.py"))
    assert r["filterStatus"].startswith(f"{len(r['filtered'])} of {len(report['lines'])} rows")
    assert r["filteredNone"] == 0


def test_a_row_opens_its_line_by_click_and_by_keyboard(seen: dict) -> None:
    r = seen["results"]["main-dark"]
    report = seen["expected"]["main"]["report"]
    by_line = {x["line"]: x for x in report["lines"]}
    top = by_line[int(r["clickedRow"])]
    assert r["rowPosted"] == {"type": "openSource", "fileId": fid_of(report, top["file"]), "line": top["line"]}
    second = by_line[int(r["keyboardRow"])]
    assert r["keyboardPosted"] == {"type": "openSource", "fileId": fid_of(report, second["file"]), "line": second["line"]}


def test_zoom_pan_and_select_on_the_timeline(seen: dict) -> None:
    r = seen["results"]["main-dark"]
    doc = seen["expected"]["main"]["doc"]
    step = doc["steps"][1]
    assert r["stepView"] == pytest.approx([step["start_us"], step["completion_us"]])  # a step row shows that step
    t0, t1 = r["viewStart"]
    assert (t0, t1) == pytest.approx((0.0, doc["window"]["duration_us"]))
    z0, z1 = r["viewZoomKey"]
    assert z1 - z0 == pytest.approx((t1 - t0) / 2)
    p0, p1 = r["viewPanKey"]
    assert p0 > z0 and p1 - p0 == pytest.approx(z1 - z0)
    w0, w1 = r["viewWheel"]
    assert w1 - w0 < p1 - p0  # ctrl+wheel zoomed in around the pointer
    d0, d1 = r["viewDrag"]
    assert d0 > w0 and d1 - d0 == pytest.approx(w1 - w0)  # dragging left moves later in time
    assert "Selection:" in r["selection"] and "host busy" in r["selection"] and "GPU busy" in r["selection"]
    assert "do not add up" in r["selection"]


def test_hovering_and_clicking_a_span_show_and_open_its_line(seen: dict) -> None:
    r = seen["results"]["main-dark"]
    doc = seen["expected"]["main"]["doc"]
    i = seen["expected"]["main"]["click"]
    line = doc["spans"]["line"][i]
    fid, number = doc["lines"]["file"][line], doc["lines"]["line"][line]
    assert r["spanPoint"] is not None
    assert doc["names"][doc["spans"]["name"][i]] in r["tooltip"] and f"{doc['files'][fid]}:{number}" in r["tooltip"]
    assert "kernel ·" in r["tooltip"]
    assert r["spanPosted"] == {"type": "openSource", "fileId": fid, "line": number}
    # from the keyboard: a row, a span, Enter opens its line (or says it has none)
    assert r["announced"]
    opened = [m for m in r["keyboardSpanPosted"] if m["type"] == "openSource"]
    assert opened or "no source line" in r["announced"]


def span_label(doc: dict, i: int) -> str:
    """What the panel reads for a span (TimelineModel.label): a line region as its line, else its name."""
    name = doc["names"][doc["spans"]["name"][i]]
    if name == "ss:optimizer-closure":
        return "optimizer closure (the code optimizer.step ran)"
    m = re.match(r"^ss:[A-Za-z0-9_]+:(\d+)(:next)?$", name)
    if not m:
        return name
    k = doc["spans"]["line"][i]
    where = f"{doc['files'].get(doc['lines']['file'][k], doc['lines']['file'][k])}:{doc['lines']['line'][k]}" if k >= 0 else f"line {m[1]}"
    return where + (" (batch read)" if m[2] else "")


def search_matches(doc: dict, query: str) -> list[int]:
    """The spans whose name or label holds `query`, case-insensitively, by start."""
    q = query.strip().lower()
    spans = doc["spans"]
    hits = [i for i in range(len(spans["start_us"]))
            if q in doc["names"][spans["name"][i]].lower() or q in span_label(doc, i).lower()]
    return sorted(hits, key=lambda i: (spans["start_us"][i], i))


def test_searching_highlights_the_spans_named_so_and_enter_goes_to_them(seen: dict) -> None:
    r = seen["results"]["main-dark"]
    doc = seen["expected"]["main"]["doc"]
    s = r["search"]
    order = search_matches(doc, seen["expected"]["main"]["search"])
    n = len(order)
    assert n >= 2
    assert s["status"] == f"{n} matches"
    assert s["typedView"] == pytest.approx(r["keys"]["sPointer"])  # the letters typed in the box moved nothing
    # the match painted in its legend colour, dimmed when the search matches something else, as before once cleared
    rgb = lambda text: [int(x) for x in re.findall(r"\d+", text)]  # noqa: E731
    kernel = rgb(next(e for e in r["legend"] if e["category"] == "kernel")["color"])
    assert rgb(s["pixelMatch"]) == kernel == rgb(s["pixelPlain"])  # in the legend's colour, as without a search
    assert sum(rgb(s["pixelDimmed"])) < sum(kernel) / 2  # the others dimmed towards the dark background
    assert s["noneStatus"] == "No match"
    # Enter from the middle of the view, Enter, Shift+Enter: centred at the same zoom, focused, announced
    spans = doc["spans"]
    lo, hi = doc["range"]["start_us"], doc["range"]["end_us"]
    v0, v1 = s["typedView"]
    w = v1 - v0
    first = next((k for k, i in enumerate(order) if spans["start_us"][i] >= (v0 + v1) / 2), 0)
    for jump, at in zip(s["jumps"], [first, (first + 1) % n, first]):
        i = order[at]
        centre = spans["start_us"][i] + spans["dur_us"][i] / 2
        t0 = min(max(lo, centre - w / 2), hi - w)
        assert jump["view"] == pytest.approx([t0, t0 + w]), jump["key"]
        assert jump["status"] == f"{at + 1} of {n} matches"
        assert span_label(doc, i)[:60] in jump["announced"]
    assert s["focusStayed"] is True  # going to a match opens no line: the box keeps the keys
    assert s["cleared"] == {"value": "", "status": ""}  # Escape


def test_a_line_is_found_by_the_words_it_is_shown_with(seen: dict) -> None:
    doc = seen["expected"]["main"]["doc"]
    regions = [i for i in search_matches(doc, "NET.PY:") if doc["names"][doc["spans"]["name"][i]].startswith("ss:")]
    assert regions  # a line region's name is ss:…; it is shown, and found, as model/net.py:N
    r = seen["results"]["main-dark"]
    assert r["lineSearch"] == f"{len(search_matches(doc, 'NET.PY:'))} matches"


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_the_legend_says_what_each_colour_of_the_timeline_means(seen: dict, theme: str) -> None:
    r = seen["results"][f"main-{theme}"]
    doc = seen["expected"]["main"]["doc"]
    present = set(doc["spans"]["category"])
    assert [e["category"] for e in r["legend"]] == [c for k, c in enumerate(doc["categories"]) if k in present]
    words = {e["category"]: e["text"] for e in r["legend"]}
    assert words["kernel"] == "kernel" and words["region"] == "line region" and words["operator"] == "operator"
    assert len({e["color"] for e in r["legend"]}) == len(r["legend"])  # no two categories alike
    other = seen["results"]["main-light" if theme == "dark" else "main-dark"]["legend"]
    assert [e["color"] for e in r["legend"]] != [e["color"] for e in other]  # in the theme's palette


def test_w_s_a_d_zoom_and_pan_and_the_visible_span_is_shown(seen: dict) -> None:
    k = seen["results"]["main-dark"]["keys"]
    t0, t1 = k["whole"]
    w = t1 - t0
    assert k["w"] == pytest.approx([t0 + w / 4, t1 - w / 4])  # W: in, around the centre (pointer away)
    assert k["d"] == pytest.approx([k["w"][0] + 0.1 * w, k["w"][1] + 0.1 * w])  # D: a fifth of the view later
    assert k["a"] == pytest.approx(k["w"])  # A: back
    p0, p1 = k["wPointer"]
    assert p1 - p0 == pytest.approx(w / 4)
    assert p0 > k["a"][0] + 0.33 * (w / 2)  # around the pointer, right of the centre
    assert k["sPointer"] == pytest.approx(k["a"])  # S around the same point undoes it
    whole = re.fullmatch(r"showing (.+) of (.+)", k["wholeLevel"])
    zoomed = re.fullmatch(r"showing (.+) of (.+)", k["wLevel"])
    assert whole and zoomed and whole[1] == whole[2] == zoomed[2] and zoomed[1] != zoomed[2]


def test_the_content_security_policy_blocks_injected_scripts(seen: dict) -> None:
    r = seen["results"]["main-dark"]
    assert r["injected"]["ran"] is False
    assert any(v.startswith("script-src") for v in r["injected"]["violations"])


@pytest.mark.parametrize("theme", THEMES)
def test_text_contrast_is_at_least_4_5_to_1(seen: dict, theme: str) -> None:
    pairs = seen["results"][f"main-{theme}"]["contrast"]
    assert len({p["selector"] for p in pairs}) >= 12
    low = [p for p in pairs if p["ratio"] < 4.5]
    assert low == [], low


@pytest.mark.parametrize("theme", THEMES)
def test_hostile_strings_execute_nothing_and_break_no_layout(seen: dict, theme: str) -> None:
    r = seen["results"][f"hostile-{theme}"]
    assert r["dom"]["pwned"] is None
    assert r["dom"]["scripts"] == 2  # the harness's and the panel's, nothing injected
    assert r["dom"]["images"] == 0 and r["dom"]["iframes"] == 0 and r["dom"]["handlers"] == 0
    assert r["dom"]["violations"] == []  # nothing even tried to load
    assert r["errors"] == [] and r["console"] == []
    assert all(url.startswith(seen["origin"]) for url in r["requests"])
    assert r["layout"]["pageWidth"] <= r["layout"]["viewport"] + 1  # no horizontal overflow of the page
    assert r["layout"]["widest"] < 700  # the 10 kB name wraps or is cut, it does not stretch its column
    assert any(name.startswith("<script>") for name in r["operatorNames"])  # shown as text
    assert r["tooltips"] and all(not t["hidden"] and t["width"] <= 530 for t in r["tooltips"])
    assert any("<img src=x" in t["text"] for t in r["tooltips"])


def test_a_reduced_timeline_asks_for_a_finer_level_when_zoomed_in(seen: dict) -> None:
    r = seen["results"]["reduced"]
    assert "spans in view" in r["status"]
    req = r["request"]
    assert req["type"] == "requestRange" and req["runId"] == "r-reduced" and req["maxSpans"] >= 1000
    assert req["startUs"] <= 11_000.0 and req["endUs"] >= 12_000.0
    assert "finer level" in r["statusFine"]


def test_a_broken_state_or_message_is_refused_with_its_reason(seen: dict) -> None:
    r = seen["results"]["broken"]
    assert "timeline schema version 99" in r["banner"]
    assert "No timeline for this run" in r["timelineText"]
    assert "unknown message type" in r["bannerAfter"] and r["pwned"] is None
    assert any(m["type"] == "log" and m["level"] == "error" for m in r["posted"])
    assert r["errors"] == []


def test_strings_sharing_would_change_are_marked_by_kind_and_share_asks_the_host(seen: dict) -> None:
    r = seen["results"]["redact"]
    doc = seen["expected"]["redact"]["doc"]
    # the server marked the label and the thread named with an address; no name of work
    assert doc["redactable"][SECRET] == ["email"]
    assert not {"aten::linear", "aten::relu", "relu_kernel", "add_kernel"} & set(doc["redactable"])
    assert r["hoverPoint"], "the labelled span is not in view"
    tip = r["tooltip"].splitlines()
    assert "⚑ name would be redacted as email" in tip and "⚑ thread would be redacted as email" in tip, tip
    # the replacement never reaches the page; the secret itself is shown (it is the user's own trace)
    assert "<email" not in r["text"] and "redacted as" not in r["text"].replace(r["tooltip"], "")
    assert r["shareBefore"] is False  # enabled once a run is shown
    assert r["sharePosted"] == {"type": "shareTrace", "runId": "20261201T101500Z-train-5e5e"}
    assert r["perfettoPosted"] == {"type": "openInPerfetto", "runId": "20261201T101500Z-train-5e5e"}
    assert not r["errors"]


def test_a_compiled_run_shows_what_each_lines_kernels_are_fused_with(seen: dict) -> None:
    r = seen["results"]["compiled"]
    report = seen["expected"]["compiled"]["report"]
    assert r["header"] == "Fused with" and not r["errors"]
    fused = dict(zip((int(v) for v in r["lines"]), r["fused"]))
    # Block.forward's fused lines name each other as the hover and the text report do
    assert fused[17] == "lines 20–21" and fused[21] == "lines 17, 20, 33"
    assert fused[18] == ""  # its matmul is its own kernel
    shared = {x["line"] for x in report["lines"] if (x.get("compiled") or {}).get("fused_with")}
    assert {n for n, text in fused.items() if text} == shared


def test_a_cpu_only_run_shows_no_column_that_could_only_be_empty_and_cuts_no_place(seen: dict) -> None:
    r = seen["results"]["cpu"]
    assert r["errors"] == []
    assert r["lineColumns"] == ["file", "line", "wall", "self", "backward", "syncs"]
    assert "GPU activity was not recorded in this trace" in r["linesNote"]
    # no GPU column, and no shapes column that would say "not recorded" on every row: the note says how
    assert r["operatorColumns"] == ["name", "calls", "self", "total", "where"]
    assert "Input shapes were not recorded: turn on stepscope.profile.shapes (stepscope profile --shapes)" \
        in r["operatorsNote"]
    # the operator's calls are every line's; its line says how many of them are its own
    place = dict(zip(r["operatorNames"], r["operatorPlaces"]))
    assert place["aten::copy_"] == "train_cpu.py:35 (2 of 3 calls)"
    assert r["placeLineBoxes"] and all(n == 1 for n in r["placeLineBoxes"])
    assert not any("GPU" in h for h in r["stepHeaders"]), r["stepHeaders"]
    assert "batch read" in r["stepHeaders"]
    # memory not recorded: no memory column (not a column of zeros), and the note says how to record it
    assert "Memory was not recorded: turn on stepscope.profile.memory (stepscope profile --memory)" in r["linesNote"]
    assert r["operatorGrouping"] is False  # no shapes: nothing to group by


def test_a_run_that_recorded_memory_and_shapes_shows_them_in_the_hovers_words(seen: dict) -> None:
    r = seen["results"]["memshapes"]
    report = seen["expected"]["memshapes"]["report"]
    assert r["errors"] == []
    assert r["lineColumns"] == ["file", "line", "wall", "self", "backward", "syncs", "allocated", "peak"]
    assert "Memory was not recorded" not in r["linesNote"] and "frees not subtracted" in r["linesNote"]
    by_line = {x["line"]: x for x in report["lines"]}
    allocated = dict(zip((int(v) for v in r["lines"]), r["allocated"]))
    peak = dict(zip((int(v) for v in r["lines"]), r["peak"]))
    # one figure, one writing: the panel's cells are the hover's words (present.bytes_text)
    assert allocated == {n: present.bytes_text(x["alloc_bytes"]) for n, x in by_line.items()}
    assert peak == {n: present.bytes_text(x["peak_bytes"]) for n, x in by_line.items()}
    assert allocated[35] == "1.00 MiB" and allocated[7] == "0 B"  # recorded: 0 is a figure here
    assert r["allocatedSorted"][0] == "1.00 MiB"  # sorting by memory: the heaviest line first
    # shapes as lists of dims, never the JSON the trace recorded
    shapes = dict(zip(r["operatorNames"], r["operatorShapes"]))
    assert shapes["aten::relu"] == "[256, 1024] (100% of calls)"
    assert shapes["aten::add"] == "[256, 1024] (100% of calls)"  # the scalar is no tensor input
    assert shapes["aten::linear"] in ("[256, 512], [1024, 512], [1024] (50% of calls)",
                                      "[256, 1024], [1024, 1024], [1024] (50% of calls)")
    assert '"float"' not in r["text"] and "[[" not in r["text"]
    # grouped by operator and input shapes: one row each, with its calls
    assert r["groupedColumns"] == ["name", "inputs", "calls", "self", "total", "where"]
    rows = sorted(zip(r["groupedNames"], r["groupedInputs"], r["groupedCalls"]))
    assert rows == [("aten::add", "[256, 1024]", "1"), ("aten::linear", "[256, 1024], [1024, 1024], [1024]", "1"),
                    ("aten::linear", "[256, 512], [1024, 512], [1024]", "1"), ("aten::relu", "[256, 1024]", "1")]
    assert r["regroupedColumns"][:2] == ["name", "calls"]  # back to one row per operator
