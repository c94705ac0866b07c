"""Precision and recall of every static rule on public code, from labels kept in the repository.

The labels (`benchmarks/check_precision_labels.json`) say, for lines of public repositories at a
named commit, whether the problem a rule names is really there: `true` (it is, and it matters
where it is), `false` (it is not, or it does not matter there), `debatable`. They describe the
code, not a finding, so the same labels score any version of the rules:

- a finding on a `true` line is right, on a `false` line wrong; a `debatable` one counts as wrong
  in the strict precision and as right in the lenient one;
- recall is measured on the labelled *candidates*: lines found by a wide search for the construct
  a rule looks at (`--candidates CODE` prints them, see `CANDIDATES`), sampled at random where
  there are many; of those labelled `true`, the share the rule reports.

The repositories are split in sets named in the labels file (docs/rules/README.md says what was
done with each): the rules were developed on `tune`; `held-out`, `confirm` and `fresh` were each
labelled before the rules were changed for anything they showed, so the first score of each is a
figure on code the rules were not developed on.

Run:
    .venv/bin/python benchmarks/check_precision.py CHECKOUT...
    .venv/bin/python benchmarks/check_precision.py --unlabelled SS101 CHECKOUT...
    .venv/bin/python benchmarks/check_precision.py --candidates SS201 CHECKOUT...
A CHECKOUT is a git work tree of one of the labelled repositories, at the labelled commit; its
folder is named `owner+name` (or pass `owner/name=PATH`). Nothing is downloaded and nothing is
written.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import random
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "server"))

from stepscope.rules import RULES, Config, check_files  # noqa: E402

LABELS = Path(__file__).with_name("check_precision_labels.json")
EVERY_RULE = Config(select=("SS",))


@dataclass(frozen=True)
class Checkout:
    repo: str  # owner/name
    path: Path
    commit: str


def checkout_of(arg: str) -> Checkout:
    if "=" in arg:
        repo, _, raw = arg.partition("=")
        path = Path(raw)
    else:
        path = Path(arg)
        repo = path.resolve().name.replace("+", "/", 1)
    if not path.is_dir():
        raise SystemExit(f"check_precision: not a folder: {path}")
    done = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise SystemExit(f"check_precision: not a git work tree: {path}")
    return Checkout(repo, path.resolve(), done.stdout.strip())


def findings(checkout: Checkout) -> tuple[list[tuple[str, int, str, str]], int, int]:
    """(path relative to the checkout, line, code, message) of every finding of every rule,
    the number of files checked and the number that could not be checked."""
    result = check_files([checkout.path], EVERY_RULE)
    out = []
    for d in result.diagnostics:
        if d.cell is not None:
            continue  # notebook cells are left out of the labels (their lines are cell-relative)
        rel = Path(d.path).resolve().relative_to(checkout.path).as_posix()
        out.append((rel, d.line, d.code, d.message))
    return out, result.files_checked, len(result.errors)


# ---- candidates: a wide search for what each rule looks at -------------------------------------
_SYNC_ATTRS = {"item", "cpu", "numpy", "tolist", "synchronize"}
_TENSOR_TESTS = {"isnan", "isinf", "isfinite", "any", "all", "equal", "allclose", "item"}
_TEST_PATH = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*\.py$|_test\.py$")
_FACTORIES = {"tensor", "as_tensor", "ones", "zeros", "full", "arange", "eye", "linspace",
              "FloatTensor", "LongTensor", "Tensor"}


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return _name(node.func)
    return ""


def _loop_kind(loop: ast.AST) -> str:
    """"training" when the loop (nested loops included) calls backward or steps an optimizer,
    "model" when it calls something named like a model, else ""."""
    names = {_name(n.func) for n in ast.walk(loop) if isinstance(n, ast.Call)}
    if any("backward" in n for n in names) or any(
            isinstance(n, ast.Call) and _name(n.func) == "step"
            and re.search(r"optim|opt$|scaler|solver", _name(getattr(n.func, "value", n)))
            for n in ast.walk(loop)):
        return "training"
    if any(re.search(r"model|net$|^net|module|encoder|decoder|generator", n, re.I)
           for n in names):
        return "model"
    return ""


def _loops_of(tree: ast.AST) -> dict[int, str]:
    """line -> kind of the innermost training/model loop around that line."""
    kinds: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
            kind = _loop_kind(node)
            if kind:
                for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                    if kinds.get(line) != "training" or kind == "training":
                        kinds[line] = kind
    return kinds


def _candidates_in(code: str, tree: ast.AST, text: str) -> list[int]:
    lines: set[int] = set()
    if code in ("SS101", "SS103"):
        # Host reads (and tests that may read a tensor) anywhere inside a loop that trains
        # (SS101) or runs something named like a model (SS103), outside test files.
        loops = _loops_of(tree)
        want = "training" if code == "SS101" else "model"
        for node in ast.walk(tree):
            line = getattr(node, "lineno", 0)
            if loops.get(line) != want:
                continue
            if isinstance(node, ast.Call) and (
                    (_name(node.func) in _SYNC_ATTRS and isinstance(node.func, ast.Attribute))
                    or (isinstance(node.func, ast.Name) and node.func.id in (
                        "float", "int", "bool", "print")
                        and any(not isinstance(a, ast.Constant) for a in node.args))):
                lines.add(line)
            elif isinstance(node, (ast.If, ast.While, ast.Assert, ast.IfExp)) and any(
                    (isinstance(n, ast.Call) and _name(n.func) in _TENSOR_TESTS)
                    or (isinstance(n, ast.Compare) and any(
                        re.search(r"loss|grad|norm|acc|out|logit|pred|score", _name(x), re.I)
                        for x in [n.left, *n.comparators]))
                    for n in ast.walk(node.test)):
                lines.add(line)
    elif code == "SS102":
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list):
                syncs = [s for s in body if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
                         and _name(s.value.func) == "synchronize"]
                if len(syncs) >= 2:
                    lines.add(syncs[1].lineno)
    elif code in ("SS201", "SS202"):
        clock = re.compile(r"^(time|perf_counter|perf_counter_ns|monotonic|time_ns|default_timer)$")
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
                if any(isinstance(s, ast.Call) and clock.match(_name(s.func)) for s in (node.left,)) \
                        or (isinstance(node.right, ast.Name)
                            and re.search(r"start|begin|t0|tic|^t\d|time|^st$|end", node.right.id,
                                          re.I)):
                    if code == "SS202" and "time.time()" not in text and "time()" not in text:
                        continue
                    if code == "SS201" and "cuda" not in text:
                        continue
                    lines.add(node.lineno)
    elif code == "SS301":
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _name(node.func) in (
                    "record_function", "range_push", "annotate", "nvtx_range", "push_range") \
                    and node.args and not isinstance(node.args[0], ast.Constant):
                lines.add(node.lineno)
    elif code == "SS401":
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg in (
                    "record_shapes", "with_stack", "profile_memory") \
                    and isinstance(node.value, ast.Constant) and node.value.value is True:
                lines.add(node.value.lineno)
    elif code in ("SS402", "SS404"):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _name(node.func) == "profile" \
                    and "profiler" in text and any(
                        isinstance(n, (ast.For, ast.While)) for n in ast.walk(tree)):
                lines.add(node.lineno)
    elif code == "SS502":  # the iterable of the first `for` inside a `with ...profile(...)`
        for node in ast.walk(tree):
            if isinstance(node, (ast.With, ast.AsyncWith)) and any(
                    "profile" in ast.dump(item.context_expr) for item in node.items):
                loop = next((n for n in ast.walk(node) if isinstance(n, (ast.For, ast.AsyncFor))),
                            None)
                if loop is not None:
                    lines.add(loop.iter.lineno)
    elif code == "SS403":
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "warmup":
                lines.add(node.lineno)
    elif code == "SS405":
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _name(node.func) in (
                    "export_chrome_trace", "export_stacks", "export_memory_timeline") and node.args:
                lines.add(node.args[0].lineno)
    elif code == "SS406":
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "activities":
                lines.add(node.lineno)
    elif code == "SS407":
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and re.match(
                    r"^(cpu|cuda|device|self_cpu|self_cuda|self_device)_time(_total)?$", node.attr):
                lines.add(node.lineno)
    elif code == "SS501":
        loops = _loops_of(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and loops.get(getattr(node, "lineno", 0)) \
                    and _name(node.func) in _FACTORIES and (
                        any(k.arg == "device" for k in node.keywords)):
                lines.add(node.lineno)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("to", "cuda") and loops.get(node.lineno) \
                    and isinstance(node.func.value, ast.Call) \
                    and _name(node.func.value.func) in _FACTORIES | {"view", "reshape"}:
                lines.add(node.lineno)
    return sorted(lines)


def candidates(code: str, checkout: Checkout) -> list[tuple[str, int]]:
    out = []
    result_files = sorted(p for p in checkout.path.rglob("*.py") if ".git" not in p.parts)
    for path in result_files:
        try:
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            continue
        rel = path.relative_to(checkout.path).as_posix()
        if code in ("SS101", "SS103", "SS501") and _TEST_PATH.search(rel):
            continue  # the rules leave tests alone by design; no need to label them
        out.extend((rel, line) for line in _candidates_in(code, tree, text))
    return out


# ---- scoring -----------------------------------------------------------------------------------
def load_labels() -> dict:
    return json.loads(LABELS.read_text(encoding="utf-8"))


def score(doc: dict, checkouts: list[Checkout], show: bool = False) -> None:
    sets = {entry["repo"]: (name, entry["commit"]) for name, entries in doc["sets"].items()
            for entry in entries}
    labels: dict[tuple[str, str, int, str], dict] = {}
    for label in doc["labels"]:
        labels[(label["repo"], label["path"], label["line"], label["rule"])] = label
    by_set: dict[str, dict[str, collections.Counter]] = collections.defaultdict(
        lambda: collections.defaultdict(collections.Counter))
    reported: set[tuple[str, str, int, str]] = set()
    missed: list[str] = []
    wrong: list[str] = []
    repos_run: dict[str, list[str]] = collections.defaultdict(list)
    files = {"checked": 0, "not checked": 0}
    for checkout in checkouts:
        if checkout.repo not in sets:
            print(f"  {checkout.repo}: not in the labels file's sets, skipped")
            continue
        set_name, commit = sets[checkout.repo]
        if commit != checkout.commit:
            print(f"  {checkout.repo}: at {checkout.commit[:12]}, labels are for {commit[:12]}: "
                  f"skipped")
            continue
        repos_run[set_name].append(checkout.repo)
        found, checked, errors = findings(checkout)
        files["checked"] += checked
        files["not checked"] += errors
        for rel, line, code, _message in found:
            key = (checkout.repo, rel, line, code)
            reported.add(key)
            label = labels.get(key)
            verdict = label["verdict"] if label else "unlabelled"
            if show and verdict in ("false", "debatable"):
                wrong.append(f"  {verdict} {code} {checkout.repo} {rel}:{line}: {label['why']}")
            by_set[set_name][code][verdict] += 1
            by_set[set_name][code]["findings"] += 1
    for key, label in labels.items():
        if label.get("sample") != "candidates" or key[0] not in sets:
            continue
        set_name = sets[key[0]][0]
        if key[0] not in repos_run[set_name] or label["verdict"] != "true":
            continue
        counts = by_set[set_name][key[3]]
        counts["recall true"] += 1
        counts["recall found"] += key in reported
        if show and key not in reported:
            missed.append(f"  missed {key[3]} {key[0]} {key[1]}:{key[2]}: {label['why']}")
    print(f"{files['checked']} files checked, {files['not checked']} could not be checked")
    for set_name in sorted(by_set):
        print(f"\n{set_name} ({len(repos_run[set_name])} repositories: "
              f"{', '.join(sorted(repos_run[set_name]))})")
        print(f"  {'rule':6} {'default':7} {'found':>5} {'read':>5} {'true':>5} {'debat':>5} "
              f"{'false':>5} {'strict':>7} {'lenient':>7} {'recall':>12}")
        for code in sorted(by_set[set_name]):
            c = by_set[set_name][code]
            read = c["true"] + c["false"] + c["debatable"]
            strict = f"{c['true'] / read:.0%}" if read else "-"
            lenient = f"{(c['true'] + c['debatable']) / read:.0%}" if read else "-"
            recall = (f"{c['recall found']}/{c['recall true']} "
                      f"{c['recall found'] / c['recall true']:.0%}" if c["recall true"] else "-")
            default = "on" if RULES[code].default_on else "off"
            print(f"  {code:6} {default:7} {c['findings']:>5} {read:>5} {c['true']:>5} "
                  f"{c['debatable']:>5} {c['false']:>5} {strict:>7} {lenient:>7} {recall:>12}")
    if show:
        print("\nfindings labelled false or debatable:")
        print("\n".join(sorted(wrong)) or "  none")
        print("\nlabelled problems the rules do not report:")
        print("\n".join(sorted(missed)) or "  none")


def list_unlabelled(doc: dict, code: str, checkouts: list[Checkout], sample: int | None) -> None:
    labelled = {(x["repo"], x["path"], x["line"], x["rule"]) for x in doc["labels"]}
    rows = []
    for checkout in checkouts:
        for rel, line, found_code, message in findings(checkout)[0]:
            if found_code == code and (checkout.repo, rel, line, code) not in labelled:
                rows.append((checkout, rel, line, message))
    if sample is not None and len(rows) > sample:
        rows = random.Random(21).sample(rows, sample)
    for checkout, rel, line, message in rows:
        text = (checkout.path / rel).read_text(encoding="utf-8", errors="replace").splitlines()
        print(json.dumps({"repo": checkout.repo, "commit": checkout.commit, "path": rel,
                          "line": line, "rule": code}))
        print(f"    {message}")
        print(f"    {text[line - 1].strip() if line <= len(text) else ''}")


def list_candidates(doc: dict, code: str, checkouts: list[Checkout], sample: int | None,
                    include_labelled: bool = False) -> None:
    labelled = {(x["repo"], x["path"], x["line"], x["rule"]) for x in doc["labels"]}
    rows = []
    for checkout in checkouts:
        rows.extend((checkout, rel, line) for rel, line in candidates(code, checkout))
    if sample is not None and len(rows) > sample:
        rows = random.Random(21).sample(rows, sample)
    for checkout, rel, line in rows:
        if (checkout.repo, rel, line, code) in labelled and not include_labelled:
            continue
        text = (checkout.path / rel).read_text(encoding="utf-8", errors="replace").splitlines()
        print(json.dumps({"repo": checkout.repo, "commit": checkout.commit, "path": rel,
                          "line": line, "rule": code}))
        print(f"    {text[line - 1].strip()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkouts", nargs="+", metavar="CHECKOUT")
    ap.add_argument("--unlabelled", metavar="CODE", help="list findings of CODE with no label")
    ap.add_argument("--candidates", metavar="CODE",
                    help="list the wide-search candidates of CODE that have no label")
    ap.add_argument("--include-labelled", action="store_true",
                    help="with --candidates: list the sample's labelled lines too")
    ap.add_argument("--show", action="store_true",
                    help="also list the wrong findings and the missed problems")
    ap.add_argument("--sample", type=int, help="with --unlabelled/--candidates: at most N, "
                                               "drawn at random (fixed seed)")
    args = ap.parse_args()
    doc = load_labels()
    checkouts = [checkout_of(a) for a in args.checkouts]
    if args.unlabelled:
        list_unlabelled(doc, args.unlabelled.upper(), checkouts, args.sample)
    elif args.candidates:
        list_candidates(doc, args.candidates.upper(), checkouts, args.sample,
                        args.include_labelled)
    else:
        score(doc, checkouts, args.show)


if __name__ == "__main__":
    main()
