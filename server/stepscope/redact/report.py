"""The report of a redaction or a check, as text and as the `--json` document.

Neither shows a secret: a finding carries its placeholder, a masked form (a token's format prefix,
an address's first letters, the length) and an excerpt of the string as it is written redacted.
"""

from __future__ import annotations

from typing import Any

from .trace_file import Result, counts


def where(f) -> str:
    place = "metadata" if f.event is None else f"event {f.event}"
    return f"{place}, {f.key}" if f.key else place


def as_json(result: Result, *, check: bool) -> dict[str, Any]:
    return {
        "trace": str(result.trace),
        "output": None if result.output is None else str(result.output),
        "check": check,
        "unsafe": result.unsafe,
        "workspace": result.workspace,
        "json_bytes": result.json_bytes,
        "counts": counts(result),
        "occurrences": sum(f.occurrences for f in result.found),
        "secrets": [{"kind": f.kind, "placeholder": f.placeholder, "what": f.what, "masked": f.masked,
                     "strings": f.strings, "occurrences": f.occurrences,
                     "first": {"event": f.event, "key": f.key, "offset": f.offset}, "excerpt": f.excerpt}
                    for f in result.found],
    }


def as_text(result: Result, *, check: bool, limit: int = 50) -> str:
    n = len(result.found)
    occurrences = sum(f.occurrences for f in result.found)
    lines = []
    if check:
        lines.append(f"{result.trace}: " + (
            f"{n} secret{'s' if n != 1 else ''} to redact ({occurrences} occurrence{'s' if occurrences != 1 else ''})"
            if n else "nothing to redact"))
    else:
        lines.append(f"wrote {result.output}: {n} secret{'s' if n != 1 else ''} replaced "
                     f"({occurrences} occurrence{'s' if occurrences != 1 else ''})")
    lines.append(f"workspace: {result.workspace}" if result.workspace else
                 "workspace: none (--workspace DIR makes its paths relative)")
    if n:
        rows = [("kind", "becomes", "what", "count", "first met", "excerpt (redacted)")]
        for f in result.found[:limit]:
            rows.append((f.kind, f.placeholder or "(relative)", f.what, str(f.occurrences), where(f), f.excerpt))
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        for r in rows:
            lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r[:5], widths)) + "  " + r[5])
        if n > limit:
            lines.append(f"  ... and {n - limit} more (--json lists them all)")
    return "\n".join(lines) + "\n"
