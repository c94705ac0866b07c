"""Sharing a trace safely: find and replace secrets, private paths, host and user names.

- `detect`: pure detectors over one string (`find_hits`), with typed spans.
- `redactor`: one decision per distinct string, consistent numbered placeholders (`Redactor`);
  `would_redact(strings)` for an editor view that marks what sharing would change.
- `stream`: the byte level: the JSON text in chunks, triggers, the rewrite, the atomic output.
- `trace_file`: a trace file in, a redacted copy or a check out (`redact_trace`, `check_trace`,
  `redact_beside` for "write the copy beside the trace").
- `report`: text and `--json` of a result; never a secret, only masked forms and placeholders.

Imports: stdlib, orjson, zlib-ng, `trace` (the reader), `rules.labels` (SS301's notion of a
private name). See docs/redact.md.
"""

from .redactor import Redactor, would_redact
from .trace_file import Result, check_trace, redact_beside, redact_trace

__all__ = ["Redactor", "Result", "check_trace", "redact_beside", "redact_trace", "would_redact"]
