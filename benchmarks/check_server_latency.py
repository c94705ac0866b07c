"""How long does the language server take to answer an edit with diagnostics?

Starts the real server (`python -m stepscope serve`) and drives it with a real LSP client
(pygls's LanguageClient) over stdio: opens a 5,000-line file, sends single-line incremental
`didChange` edits one at a time (a few characters typed at the end of a line, at lines spread
over the file), and measures from sending each edit to receiving `publishDiagnostics` for that
version. Side by side, in the same run and on the same texts: `check_source` in this process (a
full check, what the server did on every edit before) and a plain `ast.parse`.

Target: p95 of the server's answer <= 100 ms.

Run: `.venv/bin/python benchmarks/check_server_latency.py [--edits 60] [--file real_file.py]
      [--compare-with OTHER/server]`
`--compare-with` also starts a server from another source tree (for example the previous commit:
`git archive HEAD server | tar -x -C /tmp/before`, then `--compare-with /tmp/before/server`) and
prints both. Without `--file` the dense generated file of check_speed.py is used.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "server"))

from check_speed import generate  # noqa: E402

from stepscope.rules import check_source  # noqa: E402
from stepscope.rules.config import load_config  # noqa: E402


def percentiles(ms: list[float]) -> tuple[float, float]:
    ordered = sorted(ms)
    return statistics.median(ordered), ordered[max(0, int(round(0.95 * len(ordered))) - 1)]


def plan_edits(text: str, count: int, seed: int, enter_every: int = 0) -> list[tuple[int, int, str]]:
    """(0-based line, character, inserted text): a few characters typed at the end of a line of
    code, each edit on another line; with `enter_every` N, every Nth edit is Enter instead (a
    new line with the same indentation), so the lines below move."""
    lines = text.split("\n")
    code_lines = [i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith(("#", '"'))]
    rng = random.Random(seed)
    chosen = sorted(rng.sample(code_lines, min(count, len(code_lines))), reverse=True)
    rng.shuffle(chosen)
    plan = []
    for n, i in enumerate(chosen):
        line = lines[i]
        if enter_every and n % enter_every == enter_every - 1:
            plan.append((i, len(line), "\n" + line[: len(line) - len(line.lstrip())]))
        else:
            plan.append((i, len(line), f"  # edit {n}"))
    return plan


def apply_edit(text: str, edit: tuple[int, int, str]) -> str:
    line, col, inserted = edit
    lines = text.split("\n")
    lines[line] = lines[line][:col] + inserted + lines[line][col:]
    return "\n".join(lines)


def shifted(edits: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """The same edits with each one's line moved by the Enter presses sent before it."""
    out = []
    for n, (line, col, inserted) in enumerate(edits):
        moved = sum(1 for earlier, _c, text in edits[:n] if "\n" in text and earlier < line)
        out.append((line + moved, col, inserted))
    return out


async def server_latency(path: Path, text: str, edits: list[tuple[int, int, str]],
                         pythonpath: str | None) -> tuple[list[float], int]:
    client = LanguageClient("stepscope-bench", "1")
    published: dict[int, asyncio.Event] = {}
    counts: dict[int, int] = {}

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        if params.version is not None:
            counts[params.version] = len(params.diagnostics)
            published.setdefault(params.version, asyncio.Event()).set()

    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    await client.start_io(sys.executable, "-m", "stepscope", "serve", env=env)
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(),
        workspace_folders=[types.WorkspaceFolder(uri=path.parent.as_uri(), name="bench")]))
    client.initialized(types.InitializedParams())
    uri = path.as_uri()
    published[1] = asyncio.Event()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=text)))
    await asyncio.wait_for(published[1].wait(), 60)
    times = []
    for n, (line, col, inserted) in enumerate(edits):
        version = n + 2
        published[version] = asyncio.Event()
        at = types.Position(line=line, character=col)
        t0 = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=at, end=at), text=inserted)]))
        await asyncio.wait_for(published[version].wait(), 60)
        times.append((time.perf_counter() - t0) * 1000)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return times, counts.get(len(edits) + 1, -1)


def in_process(path: Path, text: str, edits: list[tuple[int, int, str]]) -> tuple[list[float], list[float], int]:
    config = load_config(path.parent)
    check_ms, parse_ms = [], []
    found = 0
    for edit in edits:
        text = apply_edit(text, edit)
        t0 = time.perf_counter()
        found = len(check_source(text, str(path), config))
        check_ms.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        ast.parse(text)
        parse_ms.append((time.perf_counter() - t0) * 1000)
    return check_ms, parse_ms, found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edits", type=int, default=60)
    ap.add_argument("--lines", type=int, default=5_000)
    ap.add_argument("--file", type=Path, help="a real file to edit instead of the generated one")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--compare-with", type=Path, help="the server/ folder of another source tree")
    ap.add_argument("--enter-every", type=int, default=0,
                    help="every Nth edit presses Enter (adds a line) instead of typing")
    args = ap.parse_args()

    text = args.file.read_text(encoding="utf-8") if args.file else generate(args.lines)
    with tempfile.TemporaryDirectory(prefix="stepscope-latency-") as tmp:
        path = Path(tmp) / (args.file.name if args.file else "big_train.py")
        path.write_text(text, encoding="utf-8")
        edits = shifted(plan_edits(text, args.edits, args.seed, args.enter_every))
        runs = [("server (this tree)", str(REPO / "server"))]
        if args.compare_with:
            runs.append((f"server ({args.compare_with})", str(args.compare_with.resolve())))
        results = {}
        for name, pythonpath in runs:
            results[name] = asyncio.run(server_latency(path, text, edits, pythonpath))
        check_ms, parse_ms, found = in_process(path, text, edits)

    enters = sum(1 for e in edits if "\n" in e[2])
    print(f"{path.name}: {text.count(chr(10))} lines, {len(edits)} single-line edits "
          f"({enters} of them Enter), edit -> publishDiagnostics of that version")
    first = None
    for name, (times, n_diags) in results.items():
        p50, p95 = percentiles(times)
        first = first or p95
        ratio = "" if first == p95 else f"   p95 {p95 / first:.1f}x this tree's"
        print(f"  {name:<28} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms   ({n_diags} diagnostics){ratio}")
    p50, p95 = percentiles(check_ms)
    print(f"  {'check_source, full, in process':<28} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms   ({found} diagnostics)")
    p50, p95 = percentiles(parse_ms)
    print(f"  {'ast.parse, in process':<28} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms")
    print("  target: server p95 <= 100 ms")


if __name__ == "__main__":
    main()
