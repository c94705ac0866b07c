"""Detectors: pure functions from one string to the spans of it that must not be shared.

Every detector returns `Hit`s: the span `[start, end)` of the text, the `kind` of placeholder it
becomes, the secret `value` the placeholder stands for (the same value always gets the same
placeholder, so two hosts stay two hosts), and `what` (a few words for the report). A workspace
path is the one hit that is not a placeholder: its root folder is cut (`replacement=""`), leaving
the workspace-relative path.

Kinds: `email`, `token` (keys, tokens, passwords, private-key blocks, long random strings in
labels), `path` (the private folders of a home or user path; the root, library tail and file name
stay, so `/home/jane/proj/train.py` becomes `/<path:1>/train.py`; a bare home folder `/home/jane`
becomes `/<path:1>`), `host` (host names, IPv4 and IPv6 addresses), `user`, `input` (content: prose
and data reprs, the value of `prompt: ...`), and personal data (`personal.py`):
`phone`, `national-id`, `birth-date`.

Whole secrets, never parts: where hits overlap they become one span (an e-mail address inside a
prompt is replaced with the prompt), and text written with Unicode look-alikes (`＠`, a Cyrillic
`а`, a zero-width space inside a token) is read as the ASCII it imitates (`lookalike.py`).

Precision rule: a detector fires on a shape that operator, kernel and module names never have
(an `@` with a real top-level domain, a known token prefix, a `home`/`Users` folder, ...).
Detectors that would be noisy on names of work — random-looking strings and prose — run only when
asked (`find_hits(..., strict=True)`): the caller knows which strings are names of work (never
looked at) and which are the profiler's own log lines (prose that is no one's input).
"""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass, field
from typing import Iterable

from ..rules.labels import private_name
from .lookalike import fold, span_back
from .personal import personal

EMAIL, TOKEN, PATH, HOST, USER, INPUT, WORKSPACE = "email", "token", "path", "host", "user", "input", "workspace"
PHONE, NATIONAL_ID, BIRTH = "phone", "national-id", "birth-date"
KINDS = (EMAIL, TOKEN, PATH, HOST, USER, INPUT, PHONE, NATIONAL_ID, BIRTH, WORKSPACE)


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
_IPV4 = re.compile(r"(?<![\w.])((?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})(?!\w|\.\w|\+\w)")
# a version, not an address: `ninja==1.11.1.4`, `v1.2.3.4`, `cudnn-8.9.2.26`, `version 2.18.1.1`,
# `cuda 12.1.0.1` (the libraries whose versions have four numbers)
_VERSION_BEFORE = re.compile(r"(?:[=<>!~]=|[A-Za-z]-|\bv|\b(?:ver(?:sion)?|release|build|driver|cuda|cudnn|cublas|"
                             r"cufft|curand|cusparse|cusolver|nccl|nvjitlink|nvrtc|tensorrt|trt|rocm|hip|miopen|rccl|"
                             r"onnx(?:runtime)?|openvino|mkl|onednn|dnnl)\s*[:=]?\s*)$", re.I)
_IPV6 = re.compile(r"(?<![\w:.])([0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:\.\d{1,3}){0,3})(?:%[\w.]+)?(?![\w:(<]|\.\w)")
_CLOUD_HOST = re.compile(r"(?<![\w-])(ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3})(?![\w-])")
_NOT_HOSTS = frozenset({"0.0.0.0", "255.255.255.255", "localhost"})


def emails(text: str) -> list[Hit]:
    return [Hit(m.start(), m.end(), EMAIL, m.group(0), "e-mail address")
            for m in _EMAIL.finditer(text) if _is_tld(m.group(2))]


def _ipv6(candidate: str) -> bool:
    """A real IPv6 address, not loopback or unspecified, and not a C++ name made of hex words
    (`c10::add`): three groups at least, or a link-local or unique-local prefix."""
    try:
        address = ipaddress.IPv6Address(candidate.split("%", 1)[0])
    except ValueError:
        return False
    if address.is_loopback or address.is_unspecified:
        return False
    groups = [g for g in re.split(r"::?", candidate.split("%", 1)[0]) if g]
    return len(groups) >= 3 or address.is_link_local or address.is_private


def hosts(text: str) -> list[Hit]:
    out = []
    for m in _FQDN.finditer(text):
        host, tld = m.group(1), m.group(2).lower()
        labels = host.count(".") + 1
        if tld in _HOST_TLDS or (tld in _SHORT_HOST_TLDS and labels >= 3):
            out.append(Hit(m.start(1), m.end(1), HOST, host, "host name"))
    if "." in text:
        for m in _IPV4.finditer(text):
            address = m.group(1)
            if address in _NOT_HOSTS or address.startswith("127.") or _VERSION_BEFORE.search(text, 0, m.start()):
                continue
            out.append(Hit(m.start(1), m.end(1), HOST, address, "IP address"))
    if ":" in text:
        for m in _IPV6.finditer(text):
            if _ipv6(m.group(1)):
                out.append(Hit(m.start(), m.end(), HOST, m.group(0), "IP address"))
    if "ip-" in text:
        for m in _CLOUD_HOST.finditer(text):
            out.append(Hit(m.start(1), m.end(1), HOST, m.group(1), "host name"))
    return out


# ---------------------------------------------------------------- tokens and keys

_B = r"(?<![A-Za-z0-9_])"  # a token starts a word (underscores count: `x_hf_...` is a name)
# (what, literals one of which every match holds — a quick test before the pattern —, pattern)
_TOKEN_FORMATS: list[tuple[str, tuple[str, ...], re.Pattern]] = [(what, hints, re.compile(p)) for what, hints, p in [
    ("private key block", ("-----BEGIN",), r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
                                          r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)"),
    ("AWS access key", ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"),
     r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Z0-9])"),
    ("GitHub token", ("gh", "github_pat_"), _B + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("GitLab token", ("glpat-",), _B + r"glpat-[A-Za-z0-9_-]{20,}"),
    ("Hugging Face token", ("hf_",), _B + r"hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9])"),
    ("API key (sk-...)", ("sk-",), r"(?<![A-Za-z0-9_-])sk-(?:[a-z]+-)*[A-Za-z0-9_-]{20,}"),
    ("Stripe key", ("k_live_", "k_test_"), _B + r"[spr]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("Slack token", ("xox",), _B + r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    ("Google API key", ("AIza",), _B + r"AIza[0-9A-Za-z_-]{35}"),
    ("npm token", ("npm_",), _B + r"npm_[A-Za-z0-9]{36}"),
    ("PyPI token", ("pypi-",), _B + r"pypi-[A-Za-z0-9_-]{50,}"),
    ("JSON Web Token", ("eyJ",), r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ("Google OAuth token", ("ya29.", "GOCSPX-", "1//0"),
     _B + r"(?:ya29\.[0-9A-Za-z_-]{20,}|GOCSPX-[0-9A-Za-z_-]{20,}|1//0[0-9A-Za-z_-]{30,})"),
    ("Stripe webhook secret", ("whsec_",), _B + r"whsec_[A-Za-z0-9]{20,}"),
    ("SendGrid key", ("SG.",), _B + r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
    ("Databricks token", ("dapi",), _B + r"dapi[0-9a-f]{32}(?:-\d)?(?![A-Za-z0-9])"),
    ("Replicate token", ("r8_",), _B + r"r8_[A-Za-z0-9]{30,}"),
    ("Groq key", ("gsk_",), _B + r"gsk_[A-Za-z0-9]{40,}"),
    ("Shopify token", ("shp",), _B + r"shp(?:at|ss|ca|pa)_[0-9a-fA-F]{32}"),
    ("Twilio key", ("SK",), r"(?<![A-Za-z0-9])SK[0-9a-f]{32}(?![A-Za-z0-9])"),
    ("Telegram bot token", (":AA",), r"(?<![\w:])\d{8,10}:AA[A-Za-z0-9_-]{33}(?![\w-])"),
    ("Slack webhook", ("hooks.slack.com",), r"hooks\.slack\.com/services/[A-Za-z0-9/]{20,}"),
    ("Discord webhook", ("discord",), r"discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{30,}"),
]]
_BEARER = re.compile(r"(?i:\b(?:bearer|basic))\s+([A-Za-z0-9._~+/-]{16,}=*)")
# "my password is hunter2": a secret said in words
_SAID = re.compile(r"(?i)(?<![a-z])(?:password|passwd|passphrase|passcode|pin(?: code)?|secret(?: key)?|api key|token)"
                   r"\s+(?:is|was|=|:)\s+[\"'“]?([^\s\"'”,;]{3,})")
_URL_CREDENTIALS = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://([^\s/:@]+:[^\s/@]+)@")
# `password=...`, `api_key: ...`, `--token ...`: the value is the secret
_SECRET_WORDS = r"(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|credentials?)"
_SECRET_WORD = r"(?P<word>" + _SECRET_WORDS + r")"
_ASSIGNED = re.compile(  # the key's last word: the parts before it are taken by `_key_start`
    r"(?i)" + _SECRET_WORD + r"[\"']?\s*[=:]\s*"
    r"(?:\"(?P<dq>[^\"]*)\"|'(?P<sq>[^']*)'|(?P<bare>[^\s,;&'\"\])}]+))")
_FLAG = re.compile(  # `--hf-token VALUE` on a command line
    r"(?i)(?<![\w-])--?(?P<key>(?:[A-Za-z0-9]+-)*" + _SECRET_WORDS + r")\s+"
    r"(?:\"(?P<dq>[^\"]*)\"|'(?P<sq>[^']*)'|(?P<bare>[^\s'\"-][^\s'\"]*))")
_SECRET_HINTS = ("pass", "pwd", "secret", "token", "key", "credential", "pin")  # in every match of the three
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
# a value that stands for the secret: `<token>`, `***`, `${API_KEY}`, `$HF_TOKEN`, `%s`, `%(key)s`
_PLACEHOLDER_VALUE = re.compile(r"^(?:<[^>]*>|\*+|x+|X+|\.\.\.|(?i:none|null|nil|true|false)|\$\{\w+\}|\$[A-Z_][A-Z0-9_]*|"
                                r"%\(\w+\)[sdr]|%[sdr])$")
_WEAK_SECRET_KEYS = ("token", "key", "credential", "credentials")  # a short value is a count or a name


def _key_start(text: str, word_start: int) -> int | None:
    """Where the key ending in the secret word at `word_start` starts (`db_secret`, `HF-TOKEN`:
    parts joined by `_` or `-`), or None when the word is inside another (`mypassword`)."""
    if word_start and text[word_start - 1].isalnum():
        return None
    i = word_start
    while i > 0 and text[i - 1] in _KEY_CHARS:
        i -= 1
    while i < word_start and text[i] in "_-":
        i += 1
    return i


def _assigned_secret(m: re.Match, key: str) -> tuple[int, int, str] | None:
    group = "dq" if m.group("dq") is not None else "sq" if m.group("sq") is not None else "bare"
    value = m.group(group)
    if not value or _PLACEHOLDER_VALUE.match(value) or value.lstrip("-+").replace(".", "", 1).isdigit():
        return None
    if key.lower().endswith(_WEAK_SECRET_KEYS):
        # `max_token: 2048`, `eos_token=</s>`, `sort_key=name`: a token or key is long and mixed
        if len(value) < 8 or not (any(c.isdigit() for c in value) or (value.lower() != value and value.upper() != value)):
            return None
    return m.start(group), m.end(group), value


def tokens(text: str) -> list[Hit]:
    out = []
    for what, hints, pattern in _TOKEN_FORMATS:
        if any(h in text for h in hints):
            for m in pattern.finditer(text):
                out.append(Hit(m.start(), m.end(), TOKEN, m.group(0), what))
    if "://" in text:
        for m in _URL_CREDENTIALS.finditer(text):
            out.append(Hit(m.start(1), m.end(1), TOKEN, m.group(1), "credentials in a URL"))
    low = text.lower()
    if "bearer" in low or "basic" in low:
        for m in _BEARER.finditer(text):
            out.append(Hit(m.start(1), m.end(1), TOKEN, m.group(1), "bearer token"))
    if not any(h in low for h in _SECRET_HINTS):
        return out  # none of the words the patterns below need
    for m in _SAID.finditer(text):
        value = m.group(1).rstrip(".!?")
        if not _PLACEHOLDER_VALUE.match(value):
            out.append(Hit(m.start(1), m.start(1) + len(value), TOKEN, value, "a secret said in words"))
    for m in _ASSIGNED.finditer(text):
        start = _key_start(text, m.start())
        found = None if start is None else _assigned_secret(m, text[start:m.start()] + m.group("word"))
        if found:
            out.append(Hit(found[0], found[1], TOKEN, found[2], f"value of `{text[start:m.start()] + m.group('word')}`"))
    for m in _FLAG.finditer(text):
        found = _assigned_secret(m, m.group("key"))
        if found:
            out.append(Hit(found[0], found[1], TOKEN, found[2], f"value of `{m.group('key')}`"))
    return out


# A random-looking run: long, mixing cases and digits, in short runs of one class
# (`Xk9fP2qLm8`), where identifiers have words (`MaxPoolGradWithArgmaxV1`: Max Pool Grad ...).
# Hex-only or lowercase-only runs are hashes and generated names (`CompiledFxGraph fp5r5pk7...`,
# `triton_poi_fused_..._12`), never flagged: a hex-only secret is a known miss.
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
    return [Hit(m.start(), m.end(), TOKEN, m.group(0), "random-looking string")
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


# ---------------------------------------------------------------- input content

# Keys whose value is content whatever it looks like, and words that make a key private only
# when the value reads like content (`all2all_data:lengths` names a phase, not data).
_CONTENT_KEYS = frozenset({"prompt", "prompts", "text", "texts", "query", "queries", "question", "answer",
                           "sentence", "caption", "message", "content", "request", "response", "completion",
                           "instruction", "utterance", "document", "input", "inputs", "email"})
_KEYED = re.compile(r"(?<![A-Za-z0-9])(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*[:=]\s*(?P<value>.+)")
# `--prompt "tell me a story"` on a command line (a process name)
_CONTENT_FLAG = re.compile(r"(?<![\w-])--?(?P<key>(?:[A-Za-z0-9]+[-_])*(?:prompt|text|query|question|message|input))"
                           r"(?:=|\s+)(?:\"(?P<dq>[^\"]*)\"|'(?P<sq>[^']*)'|(?P<bare>[^\s'\"-][^\s'\"]*))")
# in every key `content` finds outside labels (a quick test of the lower-cased text)
_CONTENT_HINTS = ("prompt", "text", "quer", "question", "answer", "sentence", "caption", "message", "content",
                  "request", "response", "completion", "instruction", "utterance", "document", "input", "email")
_DECORATION = re.compile(r"[\s#\])>|]+$")
_WORD = r"[^\W\d_][\w'’-]*[,;:]?"
# words, and the sentence's end where it ends one (`.` of `torchvision.io` does not)
_PROSE = re.compile(r"(?<![\w'’-])" + _WORD + r"(?: " + _WORD + r"){2,}(?:[.?!…]+)?(?![\w.])")
# The small words sentences are made of: prose holds some (a CPU's flag list, `fpu vme pse tsc msr`,
# and a system's `Mitigation; Retpolines, IBPB conditional` hold none)
_SMALL_WORDS = frozenset("""the a an and or of to in on at for with from by about as into over after before is are was
    were be been am i me my mine you your we our us he him his she her it its they them their this that these those
    what who whom how why when where which please can could would should will shall do does did have has had if but so
    than then there here tell give show let write make find get some any all every each
    der die das und ist ein eine mit von zu ich du wie was bitte nicht auf für
    le la les et est un une des du pour avec je tu que qui sur dans
    el los las y es una con para por como""".split())
_C_TYPES = frozenset("int long unsigned signed float double bool char const short void size_t auto struct "
                     "true false decltype nullptr".split())
_CODE_NAME = re.compile(r"::|^<(?:built-in|method|function|class|frozen|module|lambda)")  # C++ and Python object names
_REPR = re.compile(r"\b(?:tensor|array|ndarray|Tensor)\((?:\[|-?\d)")
_KEY_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def _content_like(value: str) -> bool:
    words = value.split()
    return (len(words) >= 3 or any(c in value for c in "?!\"'") or
            (len(words) >= 2 and any(c in value for c in ".,")))


def _to_end(text: str, start: int) -> int:
    """Where content that starts at `start` ends: at the end of the text, less its decoration
    (`## ... ##`, a closing bracket). Content runs to the end: what follows a prompt is more of it."""
    decoration = _DECORATION.search(text)
    return max(start, decoration.start() if decoration else len(text))


def content(text: str, *, label: bool) -> list[Hit]:
    """The value of a content key (`prompt: ...`, `query=...`, `--prompt "..."`), in any string; in
    a label, also a key that only reads private (SS301's words) when its value reads like content
    (elsewhere `stale data: Mitigation; ...` is a system's description, not data)."""
    out: list[Hit] = []
    if not label and not any(h in text.lower() for h in _CONTENT_HINTS):
        return out
    for m in _KEYED.finditer(text) if ":" in text or "=" in text else ():
        key, value = m.group("key"), _DECORATION.sub("", m.group("value"))
        if not value or value.replace(".", "", 1).replace(",", "").replace(" ", "").isdigit():
            continue
        parts = [p.lower() for p in _KEY_PARTS.findall(key)]
        strong = bool(parts) and parts[-1] in _CONTENT_KEYS and (" " in value or _content_like(value))
        weak = label and private_name(key) and _content_like(value)
        if strong or weak:
            start = m.start("value")
            out.append(Hit(start, start + len(value), INPUT, value, f"content of `{key}`"))
            break
    if "-" in text:
        for m in _CONTENT_FLAG.finditer(text):
            group = "dq" if m.group("dq") is not None else "sq" if m.group("sq") is not None else "bare"
            if m.group(group).strip():
                out.append(Hit(m.start(group), m.end(group), INPUT, m.group(group), f"content of `--{m.group('key')}`"))
    return out


def free_text(text: str) -> list[Hit]:
    """Input content written out: data reprs (`tensor([...])`) and prose, which runs to the string's
    end (`prompt words ... hunter2 and my SSN is ...` is replaced whole, not up to its first digit)."""
    out = []
    m = _REPR.search(text)
    if m:  # the repr runs to the end of its balanced parentheses (or of the string)
        depth, end = 0, len(text)
        for i in range(text.index("(", m.start()), len(text)):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                end = i + 1
                break
        out.append(Hit(m.start(), end, INPUT, text[m.start():end], "data"))
    for m in _PROSE.finditer(text) if not _CODE_NAME.search(text) else ():
        words = m.group(0).split()
        if sum(w.strip(",;:") in _C_TYPES for w in words) * 2 >= len(words):
            continue  # a C++ signature (`unsigned long, int, float`), not prose
        lower = sum(1 for w in words if w[:1].islower() and len(w) > 1)
        alphabetic = sum(1 for w in words if w.strip(",;:.?!…").isalpha())
        small = sum(1 for w in words if w.strip(",;:.?!…").lower() in _SMALL_WORDS)
        if lower >= 2 and ((len(words) >= 6 and alphabetic >= 4 and small >= 2) or
                           (len(words) >= 3 and m.group(0)[-1] in ".?!…" and small >= 1)):
            end = _to_end(text, m.end())
            out.append(Hit(m.start(), end, INPUT, text[m.start():end], "prose"))
            break  # it runs to the end
    return out


def inputs(text: str) -> list[Hit]:
    """Every input-content detector, strict."""
    return [*free_text(text), *content(text, label=True)]


# ---------------------------------------------------------------- all of them

PLACEHOLDER = re.compile(r"<(?:" + "|".join(k for k in KINDS if k != WORKSPACE) + r"):\d+>")


def _detect(text: str, strict: bool, label: bool, known: Known) -> list[Hit]:
    hits = [*emails(text), *tokens(text), *paths(text, known), *hosts(text), *known_names(text, known),
            *content(text, label=label)]
    hits += [Hit(start, end, kind, text[start:end], what) for kind, start, end, what in personal(text)]
    if strict:
        hits += [*random_strings(text), *free_text(text)]
    return hits


def merge_hits(hits: list[Hit], text: str) -> list[Hit]:
    """Overlapping hits become one span, so no part of any of them is left: the span of the one
    that starts first (the longer of two that start together) grows to cover the others, keeping
    its kind. A workspace prefix (cut, not replaced) that overlaps another hit gives way to it."""
    hits.sort(key=lambda h: (h.start, -(h.end - h.start)))
    kept: list[Hit] = []
    for h in hits:
        if h.end <= h.start:
            continue
        if not kept or h.start >= kept[-1].end:
            kept.append(h)
            continue
        last = kept[-1]
        if h.end <= last.end:
            continue  # inside it
        lead = h if last.kind == WORKSPACE and h.kind != WORKSPACE else last
        kept[-1] = Hit(last.start, h.end, lead.kind, text[last.start:h.end], lead.what)
    return kept


def find_hits(text: str, *, strict: bool = False, label: bool = False, known: Known = Known()) -> list[Hit]:
    """Every span of `text` to redact, non-overlapping, in order; overlapping hits are merged
    (`merge_hits`), so a secret is never replaced in part. Text with Unicode look-alikes is searched as
    the ASCII it imitates, and each hit covers the original characters that spelled it; its value
    (what its placeholder stands for) is the folded text, so `jane＠acme.com` and `jane@acme.com`
    are one address."""
    if len(text) < 2:
        return []
    folded, index = fold(text)
    hits = _detect(folded, strict or label, label, known)
    if not hits:
        return hits
    if "<" in folded:  # a placeholder of an earlier redaction is never redacted again
        taken = [(m.start(), m.end()) for m in PLACEHOLDER.finditer(folded)]
        hits = [h for h in hits if not any(h.start < e and s < h.end for s, e in taken)]
    hits = merge_hits(hits, folded)
    if index is None:
        return hits
    out = []
    for h in hits:
        start, end = span_back(index, h.start, h.end, len(text))
        out.append(Hit(start, end, h.kind, h.value, h.what, h.replacement))
    return out


def redact_text(text: str, hits: Iterable[Hit], placeholder) -> str:
    """`text` with each hit replaced by `placeholder(kind, value)` (or its own replacement)."""
    out, pos = [], 0
    for h in hits:
        out.append(text[pos:h.start])
        out.append(h.replacement if h.replacement is not None else placeholder(h.kind, h.value))
        pos = h.end
    out.append(text[pos:])
    return "".join(out)
