"""Pictures of the editor on a run recorded on another machine (the GPU cases of docs/compiled.md).

    .venv/bin/python tools/editor_screens.py RUNS_DIR RUN --sources benchmarks/gpu_cases \\
        --file compiled_mlp.py --line 20 --hover "h = self.down(h)" --expect "fused with" \\
        --out docs/images --prefix compiled-mlp

builds a workspace in a temporary folder: the sources, and a copy of the run folder RUNS_DIR/RUN in
its `.stepscope/runs/` with the capture machine's root replaced by the workspace's in files.json,
spec.json and scenario.json (compile.json keeps its paths: the analysis finds them through the file
table by suffix). The copy is analysed again with this repository's `stepscope analyze` (its
report.json and timeline.json are replaced by current ones; the original folder is only read), the
history is rebuilt (`stepscope runs rebuild`), and then the built .vsix in code-server shows the run
from the runs view (tests/vscode/driver.cjs, scenario "openRun"): the file's inline figures, the hover
of the given line, the trace panel opened from it. The pictures are written as OUT/PREFIX-*.png
(never over an existing file) and what the editor showed is printed as JSON.

Needs the tools of tools/setup-tools.sh (STEPSCOPE_TOOLS) and dist/*.vsix (tools/build-vsix.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.frozen_runs import rebase  # noqa: E402
from tests.vscode.codeserver import CodeServer, require_tools  # noqa: E402

# The pictures the driver takes, and the names they are kept under.
PICTURES = {"run-timings": "lines", "run-hover": "hover", "run-panel-lines": "panel"}


def stepscope(*args: str, cwd: Path | None = None) -> str:
    run = subprocess.run([sys.executable, "-m", "stepscope", *args], cwd=cwd, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"stepscope {' '.join(args)} failed ({run.returncode}): {run.stderr.strip()}")
    return run.stdout


def build_workspace(runs: Path, name: str, sources: Path, ws: Path) -> Path:
    """The workspace `ws` holding `sources`' files and the run `name`, analysed again; its run folder."""
    source = runs / name
    table = json.loads((source / "files.json").read_text())
    old_root = table["root"]
    ws.mkdir(parents=True)
    for rel in table["files"].values():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(sources / rel, ws / rel)
    # the history reads a run's start from its folder's name: the time its spec.json was written
    started = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime((source / "spec.json").stat().st_mtime))
    run = ws / ".stepscope" / "runs" / f"{started}-{name}"
    run.parent.mkdir(parents=True)
    shutil.copytree(source, run, ignore=shutil.ignore_patterns("report.json", "report.txt", "timeline.json"))
    (run / "files.json").write_text(json.dumps({**table, "root": str(ws)}, indent=2))
    for record in ("scenario.json", "spec.json"):
        if (run / record).exists():
            doc = rebase(json.loads((run / record).read_text()), str(source), str(run))
            doc = rebase(rebase(doc, old_root + "/runs/" + name, str(run)), old_root, str(ws))
            (run / record).write_text(json.dumps(doc, indent=2))
    # The editor shows a run's figures on a file unchanged since the run started (spec.json's time).
    start = max((ws / rel).stat().st_mtime_ns for rel in table["files"].values()) + 1_000_000_000
    os.utime(run / "spec.json", ns=(start, start))
    report = stepscope("analyze", str(run), "--json", "--timeline")
    (run / "report.json").write_text(report)
    (run / "report.txt").write_text(stepscope("analyze", str(run)))
    stepscope("runs", "rebuild", "--root", str(ws))
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, help="the folder holding the recorded run folders")
    parser.add_argument("run", help="the run folder's name in RUNS")
    parser.add_argument("--sources", type=Path, required=True, help="the folder holding the run's sources")
    parser.add_argument("--file", required=True, help="the file to open, relative to the workspace")
    parser.add_argument("--line", type=int, required=True, help="the line brought into view")
    parser.add_argument("--hover", required=True, help="the text of the line to hover")
    parser.add_argument("--expect", required=True, help="a text the hover must show")
    parser.add_argument("--out", type=Path, required=True, help="the folder the pictures are written to")
    parser.add_argument("--prefix", required=True, help="the pictures' names start with it")
    args = parser.parse_args()

    targets = {shot: args.out / f"{args.prefix}-{name}.png" for shot, name in PICTURES.items()}
    existing = [str(p) for p in targets.values() if p.exists()]
    if existing:
        raise SystemExit(f"refusing to overwrite {', '.join(existing)}: move them away first")
    require_tools()
    with tempfile.TemporaryDirectory(prefix="stepscope-screens-") as tmp:
        ws = Path(tmp) / "workspace"
        run = build_workspace(args.runs, args.run, args.sources, ws)
        server = CodeServer(root=Path(tmp) / "vscode", workspace=ws, settings={
            "stepscope.interpreter": sys.executable, "workbench.colorTheme": "Default Light Modern",
            "editor.minimap.enabled": False, "breadcrumbs.enabled": False,
        })
        server.start()
        try:
            result = server.drive("openRun", Path(tmp) / "shots", file=args.file, cursorLine=args.line,
                                  squiggle=False, runLabel=args.file, hoverText=args.hover,
                                  hoverExpect=args.expect, viewport={"width": 1280, "height": 800})
        finally:
            server.stop()
        if not result.get("ok"):
            print(json.dumps(result, indent=2), file=sys.stderr)
            print(server.stepscope_log()[-3000:], file=sys.stderr)
            return 1
        args.out.mkdir(parents=True, exist_ok=True)
        for shot, target in targets.items():
            shutil.copy(Path(tmp) / "shots" / f"{shot}.png", target)
        shown = {k: result.get(k) for k in ("runs", "timings", "hover", "hoverLinks", "panelState", "panelLines")}
        print(json.dumps({"run": run.name, **shown, "pictures": [str(p) for p in targets.values()]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
