"""Detectors: pure functions from one string to the spans of it that must not be shared.

Every detector returns `Hit`s: the span `[start, end)` of the text, the `kind` of placeholder it
becomes, the secret `value` the placeholder stands for (the same value always gets the same
placeholder, so two hosts stay two hosts), and `what` (a few words for the report). A workspace
path is the one hit that is not a placeholder: its root folder is cut (`replacement=""`), leaving
the workspace-relative path.

Kinds: `email`, `token` (keys, tokens, passwords, private-key blocks, long random strings in
labels), `path` (the private folders of a home or user path; the root, library tail and file name
stay, so `/home/jane/proj/train.py` becomes `/<path:1>/train.py`), `host`, `user`, `input`
(content interpolated into a label: prose, data reprs, `prompt: ...`).

Precision rule: a detector fires on a shape that operator, kernel and module names never have
(an `@` with a real top-level domain, a known token prefix, a `home`/`Users` folder, ...).
Detectors that would be noisy on names — random-looking strings and input content — run only on
labels (`find_hits(..., label=True)`): the caller knows which strings are labels.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Iterable

from ..rules.labels import private_name

EMAIL, TOKEN, PATH, HOST, USER, INPUT, WORKSPACE = "email", "token", "path", "host", "user", "input", "workspace"
KINDS = (EMAIL, TOKEN, PATH, HOST, USER, INPUT, WORKSPACE)


@dataclass(frozen=True)
class Hit:
    start: int
    end: int
    kind: str
    value: str  # the secret the placeholder stands for
    what: str  # for the report: "AWS access key", "home path", ...
    replacement: str | None = None  # None: the placeholder of (kind, value)


@dataclass(frozen=True)
class Known:
    """What a trace tells about itself: the user and host names it carries (learned from its
    metadata and home paths), and the workspace root whose paths become relative."""

    users: frozenset[str] = frozenset()
    hosts: frozenset[str] = frozenset()
    workspace: str | None = None
    _pattern: re.Pattern | None = field(default=None, compare=False, repr=False)

    def pattern(self) -> re.Pattern | None:
        """One regex for every known name as a whole word (longest first)."""
        if self._pattern is None and (self.users or self.hosts):
            names = sorted(self.users | self.hosts, key=lambda s: (-len(s), s))
            object.__setattr__(self, "_pattern", re.compile(
                r"(?<![A-Za-z0-9])(?:" + "|".join(map(re.escape, names)) + r")(?![A-Za-z0-9])"))
        return self._pattern


# ---------------------------------------------------------------- e-mail addresses and hosts

# Top-level domains that end a host name. Two-letter country codes that are also source file
# extensions (`.py`, `.cu`, `.cc`, `.sh`, ...) are left out: `fn@module.py` is not an address.
_FILE_EXTENSIONS = frozenset("py cc cu so sh md rs js ts pt mm hs pl rb kt cs fs ml ps el pb gz".split())
_COMMON_TLDS = frozenset("""com net org edu gov mil int io ai co dev app cloud info biz xyz tech site online
email mail me tv internal local lan corp intra home arpa""".split())


def _is_tld(tld: str) -> bool:
    t = tld.lower()
    return t in _COMMON_TLDS or (len(t) == 2 and t.isalpha() and t not in _FILE_EXTENSIONS)


_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_EMAIL = re.compile(r"(?<![\w.+%-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@((?:" + _LABEL + r"\.)+([A-Za-z]{2,24}))(?![\w-]|\.\w)")
_FQDN = re.compile(r"(?<![\w./-])((?:" + _LABEL + r"\.){1,8}([A-Za-z]{2,24}))(?![\w(-]|\.\w)")
# host TLDs are stricter than e-mail TLDs: dotted Python names (`torchvision.io`) look like hosts
_HOST_TLDS = frozenset("""com net org edu gov mil int cloud internal local lan corp intra arpa
us uk de fr jp cn kr in ru ch nl se eu ca au sg""".split())
_SHORT_HOST_TLDS = frozenset("io ai co dev app home".split())  # need three labels: api.openai.io
_IPV4 = re.compile(r"(?<![\w.])((?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3})(?![\w.])")
_CLOUD_HOST = re.compile(r"(?<![\w-])(ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3})(?![\w-])")
_NOT_HOSTS = frozenset({"127.0.0.1", "0.0.0.0", "255.255.255.255", "localhost"})


def emails(text: str) -> list[Hit]:
    return [Hit(m.start(), m.end(), EMAIL, m.group(0), "e-mail address")
            for m in _EMAIL.finditer(text) if _is_tld(m.group(2))]


def hosts(text: str) -> list[Hit]:
    out = []
    for m in _FQDN.finditer(text):
        host, tld = m.group(1), m.group(2).lower()
        labels = host.count(".") + 1
        if tld in _HOST_TLDS or (tld in _SHORT_HOST_TLDS and labels >= 3):
            out.append(Hit(m.start(1), m.end(1), HOST, host, "host name"))
    for m in _IPV4.finditer(text):
        before = text[max(0, m.start() - 8):m.start()].lower()
        if m.group(1) not in _NOT_HOSTS and not re.search(r"(?:v|version|ver)\s*$", before):
            out.append(Hit(m.start(1), m.end(1), HOST, m.group(1), "IP address"))
    for m in _CLOUD_HOST.finditer(text):
        out.append(Hit(m.start(1), m.end(1), HOST, m.group(1), "host name"))
    return out


# ---------------------------------------------------------------- tokens and keys

_B = r"(?<![A-Za-z0-9_])"  # a token starts a word (underscores count: `x_hf_...` is a name)
_TOKEN_FORMATS: list[tuple[str, re.Pattern]] = [(what, re.compile(p)) for what, p in [
    ("private key block", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
                          r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)"),
    ("AWS access key", r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Z0-9])"),
    ("GitHub token", _B + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("GitLab token", _B + r"glpat-[A-Za-z0-9_-]{20,}"),
    ("Hugging Face token", _B + r"hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9])"),
    ("API key (sk-...)", r"(?<![A-Za-z0-9_-])sk-(?:[a-z]+-)*[A-Za-z0-9_-]{20,}"),
    ("Stripe key", _B + r"[spr]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("Slack token", _B + r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    ("Google API key", _B + r"AIza[0-9A-Za-z_-]{35}"),
    ("npm token", _B + r"npm_[A-Za-z0-9]{36}"),
    ("PyPI token", _B + r"pypi-[A-Za-z0-9_-]{50,}"),
    ("JSON Web Token", r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
]]
_BEARER = re.compile(r"(?i:\bbearer)\s+([A-Za-z0-9._~+/-]{16,}=*)")
_URL_CREDENTIALS = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://([^\s/:@]+:[^\s/@]+)@")
# `password=...`, `api_key: ...`, `--token ...`: the value is the secret
_SECRET_WORDS = r"(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|credentials?)"
_ASSIGNED = re.compile(
    r"(?i)(?<![A-Za-z0-9])(?P<key>(?:[A-Za-z0-9]+[_-])*" + _SECRET_WORDS + r")[\"']?\s*[=:]\s*"
    r"(?:\"(?P<dq>[^\"]*)\"|'(?P<sq>[^']*)'|(?P<bare>[^\s,;&'\"\])}]+))")
_FLAG = re.compile(  # `--hf-token VALUE` on a command line
    r"(?i)(?<![\w-])--?(?P<key>(?:[A-Za-z0-9]+-)*" + _SECRET_WORDS + r")\s+"
    r"(?:\"(?P<dq>[^\"]*)\"|'(?P<sq>[^']*)'|(?P<bare>[^\s'\"-][^\s'\"]*))")
_PLACEHOLDER_VALUE = re.compile(r"^(?:<[^>]*>|\*+|x+|\.\.\.|none|null|nil|true|false|\$\{?\w+\}?|%\(?\w+\)?s?)$", re.I)
_WEAK_SECRET_KEYS = ("token", "key", "credential", "credentials")  # a short value is a count or a name


def _assigned_secret(m: re.Match) -> tuple[int, int, str] | None:
    group = "dq" if m.group("dq") is not None else "sq" if m.group("sq") is not None else "bare"
    value = m.group(group)
    if not value or _PLACEHOLDER_VALUE.match(value) or value.lstrip("-+").replace(".", "", 1).isdigit():
        return None
    key = m.group("key").lower()
    if key.endswith(_WEAK_SECRET_KEYS):
        # `max_token: 2048`, `eos_token=</s>`, `sort_key=name`: a token or key is long and mixed
        if len(value) < 8 or not (any(c.isdigit() for c in value) or (value.lower() != value and value.upper() != value)):
            return None
    return m.start(group), m.end(group), value


def tokens(text: str) -> list[Hit]:
    out = []
    for what, pattern in _TOKEN_FORMATS:
        for m in pattern.finditer(text):
            out.append(Hit(m.start(), m.end(), TOKEN, m.group(0), what))
    for m in _BEARER.finditer(text):
        out.append(Hit(m.start(1), m.end(1), TOKEN, m.group(1), "bearer token"))
    for m in _URL_CREDENTIALS.finditer(text):
        out.append(Hit(m.start(1), m.end(1), TOKEN, m.group(1), "credentials in a URL"))
    for m in (*_ASSIGNED.finditer(text), *_FLAG.finditer(text)):
        found = _assigned_secret(m)
        if found:
            out.append(Hit(found[0], found[1], TOKEN, found[2], f"value of `{m.group('key')}`"))
    return out


# A random-looking run in a label: long, mixing cases and digits, in short runs of one class
# (`Xk9fP2qLm8`), where identifiers have words (`MaxPoolGradWithArgmaxV1`: Max Pool Grad ...).
# Hex-only or lowercase-only runs are hashes and generated names (`CompiledFxGraph fp5r5pk7...`,
# `triton_poi_fused_..._12`), never flagged: a hex-only secret in a label is a known miss.
_RUN = re.compile(r"[A-Za-z0-9+/_=-]{20,}")
_CLASS_RUNS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def random_looking(run: str) -> bool:
    core = re.sub(r"[_\-/+.=]", "", run)
    if len(core) < 20 or core.isdigit():
        return False
    if not (any(c.isupper() for c in core) and any(c.islower() for c in core) and any(c.isdigit() for c in core)):
        return False
    if len(_CLASS_RUNS.findall(core)) / len(core) < 0.45:
        return False
    counts: dict[str, int] = {}
    for c in core:
        counts[c] = counts.get(c, 0) + 1
    entropy = -sum(n / len(core) * math.log2(n / len(core)) for n in counts.values())
    return entropy >= 3.5


def random_strings(text: str) -> list[Hit]:
    return [Hit(m.start(), m.end(), TOKEN, m.group(0), "random-looking string in a label")
            for m in _RUN.finditer(text) if random_looking(m.group(0))]


# ---------------------------------------------------------------- paths

_PART = r"[^\s\\/:;,()<>|\"'`*?\[\]{}=]+"
_PATH = re.compile(
    r"(?:(?<=file://)|(?<![\w.~$/\\-]))"
    r"(?P<root>[A-Za-z]:[\\/]|~[A-Za-z0-9._-]*[\\/]|[\\/])"
    r"(?P<dirs>(?:" + _PART + r"(?: " + _PART + r")*[\\/])*)"
    r"(?P<last>" + _PART + r")?")
_HOME_PARTS = frozenset({"home", "Users", "users", "homes", "Documents and Settings"})
_GENERIC_USERS = frozenset({"root", "nobody", "user", "admin", "ubuntu", "runner", "jovyan", "vscode",
                            "ec2-user", "app", "docker", "shared", "public", "Shared", "Public", "Default"})
_PER_USER_DIR = re.compile(r"^torchinductor_(?P<user>.+)$")  # torch.compile's cache: /tmp/torchinductor_<user>


def _library_start(parts: list[str], after: int) -> int | None:
    """Index of the first part of a library tail (`lib/python3.11/site-packages/...`)."""
    for i in range(after, len(parts)):
        p = parts[i]
        if p in ("site-packages", "dist-packages"):
            return i - 2 if i >= 2 and parts[i - 2] in ("lib", "lib64", "Lib") else i - 1 if parts[i - 1] == "Lib" else i
        if p in ("lib", "lib64") and i + 1 < len(parts) and parts[i + 1].startswith("python"):
            return i
    return None


def _private_anchor(root: str, parts: list[str], known: Known) -> tuple[int, str] | None:
    """(index of the last part that identifies the user, what) when the path is private."""
    for i, p in enumerate(parts[:-1]):
        if p in _HOME_PARTS:
            return i + 1, "home path"
    if root == "/" and parts and parts[0] == "root" and len(parts) > 1:
        return 0, "home path"
    if root.startswith("~") and len(parts) > 1:
        return 0, "home path"
    for i, p in enumerate(parts[:-1]):
        m = _PER_USER_DIR.match(p)
        user = m.group("user") if m else None
        if (user and user not in _GENERIC_USERS) or p in known.users or (user and user in known.users):
            return i, "user path"
    return None


def paths(text: str, known: Known = Known()) -> list[Hit]:
    out = []
    ws = known.workspace
    for m in _PATH.finditer(text):
        root, dirs, last = m.group("root"), m.group("dirs"), m.group("last") or ""
        if not dirs and not last:
            continue
        full = m.group(0)
        if ws and (full.startswith(ws) and full[len(ws):len(ws) + 1] in ("/", "\\", "")):
            cut = len(ws) + (1 if len(full) > len(ws) else 0)
            out.append(Hit(m.start(), m.start() + cut, WORKSPACE, ws, "workspace path",
                           replacement="" if len(full) > len(ws) else "."))
            continue
        sep = "\\" if "\\" in root or ("\\" in dirs and "/" not in dirs) else "/"
        parts = [p for p in re.split(r"[\\/]", dirs) if p] + ([last] if last else [])
        anchor = _private_anchor(root, parts, known)
        if anchor is None:
            continue
        keep_from = _library_start(parts, anchor[0] + 1)
        if keep_from is None:
            keep_from = len(parts) - 1 if len(parts) - 1 > anchor[0] else len(parts)
        private = parts[:keep_from]
        if not private:
            continue
        start = m.start("root") + len(root)
        end = start + len(sep.join(private))
        value = root + sep.join(private)
        out.append(Hit(start, end, PATH, value, anchor[1]))
    return out


# ---------------------------------------------------------------- user and host names the trace told us

def known_names(text: str, known: Known) -> list[Hit]:
    pattern = known.pattern()
    if pattern is None:
        return []
    return [Hit(m.start(), m.end(), USER if m.group(0) in known.users else HOST, m.group(0),
                 "user name" if m.group(0) in known.users else "host name")
            for m in pattern.finditer(text)]


# ---------------------------------------------------------------- input content in labels

# Keys whose value is content whatever it looks like, and words that make a key private only
# when the value reads like content (`all2all_data:lengths` names a phase, not data).
_CONTENT_KEYS = frozenset({"prompt", "prompts", "text", "texts", "query", "queries", "question", "answer",
                           "sentence", "caption", "message", "content", "request", "response", "completion",
                           "instruction", "utterance", "document", "input", "inputs", "email"})
_KEYED = re.compile(r"(?<![A-Za-z0-9])(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*[:=]\s*(?P<value>.+)")
_DECORATION = re.compile(r"[\s#\])>|]+$")
_WORD = r"[A-Za-z][A-Za-z'’-]*[,;:]?"
_PROSE = re.compile(r"(?<![\w'’-])" + _WORD + r"(?: " + _WORD + r"){2,}[.?!…]*")
_C_TYPES = frozenset("int long unsigned signed float double bool char const short void size_t auto struct "
                     "true false decltype nullptr".split())
_CODE_NAME = re.compile(r"::|^<(?:built-in|method|function|class|frozen|module|lambda)")  # C++ and Python object names
_REPR = re.compile(r"\b(?:tensor|array|ndarray|Tensor)\((?:\[|-?\d)")


def _content_like(value: str) -> bool:
    words = value.split()
    return (len(words) >= 3 or any(c in value for c in "?!\"'") or
            (len(words) >= 2 and any(c in value for c in ".,")))


def inputs(text: str) -> list[Hit]:
    out = []
    m = _REPR.search(text)
    if m:  # the repr runs to the end of its balanced parentheses (or of the label)
        depth, end = 0, len(text)
        for i in range(text.index("(", m.start()), len(text)):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                end = i + 1
                break
        out.append(Hit(m.start(), end, INPUT, text[m.start():end], "data in a label"))
    for m in _KEYED.finditer(text):
        key, value = m.group("key"), _DECORATION.sub("", m.group("value"))
        if not value or value.replace(".", "", 1).replace(",", "").replace(" ", "").isdigit():
            continue
        parts = [p.lower() for p in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", key)]
        strong = bool(parts) and parts[-1] in _CONTENT_KEYS and (" " in value or _content_like(value))
        weak = private_name(key) and _content_like(value)
        if strong or weak:
            start = m.start("value")
            out.append(Hit(start, start + len(value), INPUT, value, f"content of `{key}` in a label"))
            break
    for m in _PROSE.finditer(text) if not _CODE_NAME.search(text) else ():
        words = m.group(0).split()
        if sum(w.strip(",;:") in _C_TYPES for w in words) * 2 >= len(words):
            continue  # a C++ signature (`unsigned long, int, float`), not prose
        lower = sum(1 for w in words if w[:1].islower() and len(w) > 1)
        if lower >= 2 and (len(words) >= 6 or (len(words) >= 3 and m.group(0)[-1] in ".?!…")):
            out.append(Hit(m.start(), m.end(), INPUT, m.group(0), "prose in a label"))
    return out


# ---------------------------------------------------------------- all of them

_PLACEHOLDER = re.compile(r"<(?:email|token|path|host|user|input):\d+>")


def find_hits(text: str, *, label: bool = False, known: Known = Known()) -> list[Hit]:
    """Every span of `text` to redact, non-overlapping, in order. Where hits overlap the one that
    starts first wins, and of two that start together the longer (a private-key block over the
    tokens inside it, an e-mail address over its host)."""
    if len(text) < 2:
        return []
    hits = [*emails(text), *tokens(text), *paths(text, known), *hosts(text), *known_names(text, known)]
    if label:
        hits += [*random_strings(text), *inputs(text)]
    if not hits:
        return hits
    if "<" in text:  # a placeholder of an earlier redaction is never redacted again
        taken = [(m.start(), m.end()) for m in _PLACEHOLDER.finditer(text)]
        hits = [h for h in hits if not any(h.start < e and s < h.end for s, e in taken)]
    hits.sort(key=lambda h: (h.start, -(h.end - h.start)))
    kept: list[Hit] = []
    for h in hits:
        if h.end > h.start and (not kept or h.start >= kept[-1].end):
            kept.append(h)
    return kept


def redact_text(text: str, hits: Iterable[Hit], placeholder) -> str:
    """`text` with each hit replaced by `placeholder(kind, value)` (or its own replacement)."""
    out, pos = [], 0
    for h in hits:
        out.append(text[pos:h.start])
        out.append(h.replacement if h.replacement is not None else placeholder(h.kind, h.value))
        pos = h.end
    out.append(text[pos:])
    return "".join(out)
