"""Proves that a change left the reports alone: `stepscope analyze` of a base revision and of this
working tree, on every trace given, compared as JSON (ignoring only the keys the report model adds:
`schema_version`, `files`, `file_id`) and as the text the CLI prints (byte for byte).

usage: python tools/compare_reports.py [--base REF] [--ignore-key KEY ...] [PATH ...]

REF (default `main`) is exported with `git archive` into a temporary folder and its compiled
modules are built there, so both sides run their own code with this interpreter. PATH is a trace,
a run folder, or a folder searched for traces (every `*.json` / `*.json.gz`, plus each folder of
per-rank traces as one input); by default ../shared/traces/public, ../shared/traces/public2 (when
present) and tests/data/traces. A trace that both sides refuse with the same one-line reason counts
as the same. `--ignore-key KEY` leaves a key out of the JSON on both sides, wherever it is (`evidence`:
a change to the findings that adds facts to the evidence then shows where the findings themselves,
or anything else, changed). Prints one line per input and a total; exit 1 when any input differs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ADDED_KEYS = {"schema_version", "files", "file_id"}
DEFAULT_INPUTS = [REPO.parent / "shared" / "traces" / "public", REPO.parent / "shared" / "traces" / "public2",
                  REPO / "tests" / "data" / "traces"]
_BOOT = "import sys; sys.path.insert(0, sys.argv.pop(1)); from stepscope.cli import main; raise SystemExit(main())"


def inputs_under(path: Path) -> list[Path]:
    """The analyze inputs a folder holds: each trace file, each run folder (it has files.json) and
    each folder of per-rank traces (named `*rank*`/`worker*`, several traces) as one input too."""
    if path.is_file():
        return [path]
    found: list[Path] = []
    for folder in sorted({p.parent for p in path.rglob("*.json*")} | {path}):
        traces = sorted(p for p in folder.iterdir()
                        if p.is_file() and p.name.endswith((".json", ".json.gz")))
        if (folder / "files.json").is_file():
            found.append(folder)  # a run folder: its traces with its file table and scenario
            continue
        found.extend(traces)
        if len(traces) > 1 and all(("rank" in t.name or t.name.startswith("worker")) for t in traces):
            found.append(folder)
    return found


def export(ref: str, into: Path) -> Path:
    """`ref`'s server code in `into`, with its compiled modules built; returns its `server` folder."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "server", "setup.py", "pyproject.toml",
                              "README.md"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=into,
                           capture_output=True, text=True)
    if build.returncode != 0:
        print(f"compare_reports: the compiled modules of {ref} did not build; it runs its Python reference "
              f"instead ({build.stderr.strip().splitlines()[-1:] or ''})", file=sys.stderr)
    return into / "server"


def analyze(server: Path, path: Path, *, as_json: bool) -> tuple[int, bytes, str]:
    args = [sys.executable, "-c", _BOOT, str(server), "analyze", str(path)] + (["--json"] if as_json else [])
    done = subprocess.run(args, capture_output=True, cwd=REPO)
    return done.returncode, done.stdout, done.stderr.decode(errors="replace").strip()


def without_added(value, ignored: frozenset[str] = frozenset()):
    if isinstance(value, dict):
        return {k: without_added(v, ignored) for k, v in value.items() if k not in ADDED_KEYS | ignored}
    if isinstance(value, list):
        return [without_added(v, ignored) for v in value]
    return value


def first_difference(a, b, where: str = "$") -> str:
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} against {type(b).__name__}"
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{where}: keys {list(a)} against {list(b)}"
        for key in a:
            if a[key] != b[key]:
                return first_difference(a[key], b[key], f"{where}.{key}")
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} items against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{where}[{i}]")
    return f"{where}: {a!r:.80} against {b!r:.80}"


def compare(base: Path, here: Path, path: Path, ignored: frozenset[str] = frozenset()) -> tuple[bool, str]:
    code_a, out_a, err_a = analyze(base, path, as_json=True)
    code_b, out_b, err_b = analyze(here, path, as_json=True)
    if code_a != 0 or code_b != 0:
        same = (code_a, err_a) == (code_b, err_b)
        return same, f"refused by both (exit {code_a}: {err_a[-100:]})" if same else \
            f"exit {code_a} against {code_b}: {err_a[-100:]!r} / {err_b[-100:]!r}"
    # the base may predate the keys the report model added: they are left out on both sides
    a, b = without_added(json.loads(out_a), ignored), without_added(json.loads(out_b), ignored)
    if a != b or list(a) != list(b):
        return False, "JSON differs at " + first_difference(a, b)
    text_a, text_b = analyze(base, path, as_json=False)[1], analyze(here, path, as_json=False)[1]
    if text_a != text_b:
        line = next(i for i, (x, y) in enumerate(zip(text_a.splitlines() + [b""], text_b.splitlines() + [b""]))
                    if x != y)
        return False, f"text differs at line {line + 1}"
    return True, "same JSON (but the added keys" + (f" and {', '.join(sorted(ignored))}" if ignored else "") + \
        ") and the same text"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main", help="git revision to compare with (default: main)")
    parser.add_argument("--ignore-key", action="append", default=[], metavar="KEY",
                        help="leave this key out of both JSON reports, wherever it is (repeat for several)")
    parser.add_argument("paths", nargs="*", type=Path)
    args = parser.parse_args(argv)
    roots = args.paths or [p for p in DEFAULT_INPUTS if p.exists()]
    missing = [p for p in args.paths if not p.exists()]
    if missing:
        parser.error(f"no such file or folder: {missing[0]}")
    inputs = [i for root in roots for i in inputs_under(root.resolve())]
    differ = 0
    with tempfile.TemporaryDirectory(prefix="stepscope-base-") as tmp:
        base = export(args.base, Path(tmp))
        for path in inputs:
            same, said = compare(base, REPO / "server", path, frozenset(args.ignore_key))
            differ += not same
            print(f"{'same' if same else 'DIFFERENT':<9} {path}: {said}", flush=True)
    print(f"{len(inputs) - differ} of {len(inputs)} inputs give the same report with {args.base} and this tree "
          f"(roots: {', '.join(str(r) for r in roots)})")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
