"""SS301: profiler and NVTX labels must not carry an e-mail, a secret, a private path or input.

A label ends up in the trace, and traces get shared. Literal labels are searched for e-mail
addresses, well-known token formats and home-directory paths; interpolated labels are reported when
what they interpolate reads like input content or private data (a prompt, a file name, an
environment variable, the user name). `f"step_{i}"` is fine.
"""

from __future__ import annotations

import ast
import re
from typing import Iterator

from ..source.loops import terminal_name
from .context import ModuleContext
from .model import Diagnostic, make_diagnostic

_LABEL_CALLS = frozenset({"record_function", "range_push", "mark", "annotate", "nvtx_range",
                          "range_start", "push_range"})
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
_SECRET = re.compile(
    r"(sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|hf_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"
    r"|(?:api[_-]?key|token|secret|password|passwd)\s*[=:]\s*\S+)",
    re.IGNORECASE,
)
_PRIVATE_PATH = re.compile(r"(/home/[^/\s]+|/Users/[^/\s]+|[A-Za-z]:\\Users\\|~/|/root/)")
# Words that, as a whole part of a name (`user_prompt`, `filePath`, `data`), say the value is input
# content or private data. Parts, not substrings: `dataset`, `profile_name`, `max_tokens` and
# `context_len` name configuration, not content.
_PRIVATE_WORDS = frozenset({
    "prompt", "prompts", "text", "texts", "query", "queries", "request", "input", "inputs",
    "email", "user", "username", "password", "passwd", "secret", "token", "apikey", "api",
    "path", "file", "filename", "fname", "url", "home", "cwd", "environ", "getenv", "getuser",
    "sentence", "caption", "message", "content", "sample", "batch", "data",
})
# A last part that makes the name a count or an index of such things (`batch_idx`, `input_ids`).
_COUNTER_PARTS = frozenset({"idx", "index", "id", "ids", "size", "len", "num", "count", "no",
                            "step", "shape", "length", "dim", "offset", "offsets", "rank", "nr"})
_NAME_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def private_name(name: str) -> bool:
    """True when `name` reads like input content or private data (not a count of it)."""
    parts = [p.lower() for p in _NAME_PARTS.findall(name)]
    if not parts or parts[-1] in _COUNTER_PARTS or parts[0] in ("num", "n"):
        return False
    return any(p in _PRIVATE_WORDS for p in parts)


def _label_arg(call: ast.Call, ctx: ModuleContext) -> ast.expr | None:
    name = terminal_name(call.func)
    if name not in _LABEL_CALLS and not (name == "range" and "nvtx" in (ctx.dotted(call.func) or "")):
        return None
    dotted = ctx.dotted(call.func) or ""
    if name == "record_function" or "nvtx" in dotted or "profiler" in dotted:
        if call.args:
            return call.args[0]
        for kw in call.keywords:
            if kw.arg in ("name", "msg", "message"):
                return kw.value
    return None


def _literal_problem(text: str) -> str | None:
    if _EMAIL.search(text):
        return "an e-mail address"
    if _SECRET.search(text):
        return "what looks like a token or key"
    if _PRIVATE_PATH.search(text):
        return "a home-directory path"
    return None


def _interpolated(label: ast.expr) -> list[ast.expr]:
    if isinstance(label, ast.JoinedStr):
        return [v.value for v in label.values if isinstance(v, ast.FormattedValue)]
    if isinstance(label, ast.BinOp) and isinstance(label.op, (ast.Add, ast.Mod)):
        return [p for p in (label.left, label.right) if not isinstance(p, ast.Constant)]
    if isinstance(label, ast.Call) and isinstance(label.func, ast.Attribute) \
            and label.func.attr == "format":
        return [*label.args, *(k.value for k in label.keywords)]
    if isinstance(label, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
        return [label]
    return []


def _private_reference(expr: ast.expr) -> str | None:
    for node in ast.walk(expr):
        name = None
        if isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Attribute):
            name = node.attr
        if name and private_name(name):
            return name
    return None


def check_ss301(ctx: ModuleContext, path: str) -> Iterator[Diagnostic]:
    for call, _scope in ctx.calls:
        label = _label_arg(call, ctx)
        if label is None:
            continue
        literal_parts = [v.value for v in ast.walk(label)
                         if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        problem = next((p for p in map(_literal_problem, literal_parts) if p), None)
        if problem is None:
            for expr in _interpolated(label):
                name = _private_reference(expr)
                if name:
                    problem = f"interpolated `{name}` (input content or private data)"
                    break
        if problem:
            yield make_diagnostic(
                "SS301",
                f"this label contains {problem}; labels are stored in the trace that gets "
                f"shared: name the step (\"train_step\", \"h2d_copy\") and nothing else",
                path, ctx.span(label))
