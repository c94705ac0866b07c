"""`stepscope redact TRACE -o OUT | --beside`: a copy of a trace that is safe to share.

E-mail addresses, tokens and keys, home and user paths, host and user names and input content in
labels become typed placeholders (`<email:1>`, `<token:2>`, `/<path:1>/train.py`, `<host:1>`, ...);
paths in the workspace become relative to it. `--check` only reports, and exits 1 when anything
would change. See docs/redact.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", help="a trace file (.json or .json.gz)")
    p.add_argument("-o", "--output", metavar="OUT", help="the redacted copy to write (a new .json or .json.gz file)")
    p.add_argument("--beside", action="store_true",
                   help="write the copy beside the trace: TRACE.redacted.json(.gz), or the next free "
                        "TRACE.redacted-N name (an earlier copy is kept)")
    p.add_argument("--check", action="store_true",
                   help="only report what would change; exit 1 if the trace holds anything to redact")
    p.add_argument("--workspace", metavar="DIR",
                   help="the project folder as the trace names it: its paths become relative "
                        "(default: the root in the run folder's files.json, else none)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON document")


def run(args: argparse.Namespace) -> int:
    from ..errors import FOUND, OK, UsageError
    from ..jsonio import dumps
    from ..redact.report import as_json, as_text
    from ..redact.trace_file import check_trace, redact_beside, redact_trace

    trace = Path(args.trace)
    try:
        if not trace.exists():
            raise UsageError(f"no such file: {trace}")
        if trace.is_dir():
            raise UsageError(f"redact takes one trace file, not a folder: {trace}")
    except PermissionError:
        raise UsageError(f"cannot read {trace}: permission denied") from None
    if args.check and (args.output or args.beside):
        raise UsageError("--check writes nothing: leave out " + ("-o" if args.output else "--beside"))
    if args.output and args.beside:
        raise UsageError("-o and --beside both say where to write the copy: give one")
    if not args.check and not args.output and not args.beside:
        raise UsageError("say where to write the redacted copy (-o OUT or --beside), or use --check")
    workspace = None
    if args.workspace:
        ws = Path(args.workspace)
        if not ws.is_absolute():
            ws = Path.cwd() / ws
        workspace = str(ws)
    if args.check:
        result = check_trace(trace, workspace=workspace)
    elif args.beside:
        result = redact_beside(trace, workspace=workspace)
    else:
        out = Path(args.output)
        if not (out.name.endswith(".json") or out.name.endswith(".json.gz")):
            raise UsageError(f"the output must be a .json or .json.gz file: {out}")
        result = redact_trace(trace, out, workspace=workspace)
    if args.json:
        sys.stdout.buffer.write(dumps(as_json(result, check=args.check)) + b"\n")
    else:
        sys.stdout.write(as_text(result, check=args.check))
    sys.stdout.flush()
    return FOUND if args.check and result.unsafe else OK
