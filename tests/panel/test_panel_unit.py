"""The panel's own TypeScript: it type-checks (DOM and Node sides) and its unit tests pass under Node."""

from __future__ import annotations

import subprocess

from .conftest import BUILT_TESTS, REPO


def test_panel_type_checks(panel_build: str) -> None:
    tsc = REPO / "node_modules" / "typescript" / "bin" / "tsc"
    for project in ("panel/tsconfig.json", "panel/tsconfig.test.json"):
        run = subprocess.run([panel_build, str(tsc), "-p", project], cwd=REPO, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


def test_panel_unit_tests_pass(panel_build: str) -> None:
    tests = sorted(str(p) for p in BUILT_TESTS.glob("*.test.mjs"))
    assert tests, "no unit test was built"
    run = subprocess.run([panel_build, "--test", "--test-reporter=tap", *tests], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:]
    assert "# fail 0" in run.stdout
    print(run.stdout.splitlines()[-8:])


def test_panel_bundle_has_no_remote_resource_and_no_html_parsing(panel_build: str) -> None:
    js = (REPO / "panel" / "dist" / "panel.js").read_text()
    css = (REPO / "panel" / "dist" / "panel.css").read_text()
    for needle in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert needle not in js, needle
    assert "http://" not in css and "https://" not in css and "@import" not in css
    assert "fetch(" not in js and "XMLHttpRequest" not in js
