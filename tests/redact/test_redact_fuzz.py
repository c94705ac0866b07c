"""Fuzzing the redaction: secrets of every kind, mutated (look-alike letters, fullwidth forms,
zero-width characters inside them, random text around them), written with random JSON escapes
(`\\uXXXX` for any character, `\\/`, escaped quotes around them), in random places of a real trace.

Properties, on every generated file:
- nothing of any secret is left in the copy (escapes undone, look-alikes folded);
- `--check` passes a file exactly when `redact` would leave it as it is (never a file it would
  change), and the copy checks clean;
- outside strings, the copy's bytes are the file's.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepscope.redact.lookalike import fold
from stepscope.redact.trace_file import check_trace, redact_trace
from tests import corpus

from . import labelled

BASE = labelled.bases(corpus.SHARED if corpus.PRESENT else None)[0]
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')

# ASCII letter -> a character drawn like it (the fold table's inverse, in part)
_LOOKALIKE = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у", "i": "і", "s": "ѕ", "h": "һ",
              "A": "Α", "B": "Β", "E": "Ε", "H": "Η", "K": "Κ", "M": "Μ", "O": "Ο", "P": "Ρ", "T": "Τ", "X": "Χ",
              "-": "‐", "@": "＠", ".": "․", "/": "∕", ":": "∶"}
_INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"]


def _mutate(text: str, rng: random.Random) -> str:
    """The secret as a person would still read it: some characters swapped for look-alikes or
    fullwidth forms, invisible characters slipped in."""
    chars = list(text)
    for i in rng.sample(range(len(chars)), k=min(len(chars), rng.randint(0, 4))):
        c = chars[i]
        if rng.random() < 0.5 and c in _LOOKALIKE:
            chars[i] = _LOOKALIKE[c]
        elif "!" <= c <= "~" and c not in "\\\"":
            chars[i] = chr(ord(c) + 0xFEE0)  # fullwidth
    for _ in range(rng.randint(0, 2)):
        chars.insert(rng.randint(1, max(1, len(chars) - 1)), rng.choice(_INVISIBLE))
    return "".join(chars)


def _escape(text: str, rng: random.Random, share: float) -> str:
    """`text` as JSON string contents, with a `share` of its characters written as `\\uXXXX`
    (and slashes as `\\/`): the same string to any JSON reader."""
    out = []
    for c in text:
        if c == '"' or c == "\\" or ord(c) < 0x20 or rng.random() < share:
            out.append("\\u%04x" % ord(c) if ord(c) <= 0xFFFF else json.dumps(c)[1:-1])
        elif c == "/" and rng.random() < 0.5:
            out.append("\\/")
        else:
            out.append(c)
    return "".join(out)


def _write(doc: dict, rng: random.Random, share: float) -> str:
    """The document as JSON text whose values are written with random escapes (keys as they are:
    the reader finds `traceEvents` by its bytes)."""
    def dump(value) -> str:
        if isinstance(value, str):
            return '"' + _escape(value, rng, share) + '"'
        if isinstance(value, dict):
            return "{" + ", ".join(json.dumps(k) + ": " + dump(v) for k, v in value.items()) + "}"
        if isinstance(value, list):
            return "[" + ", ".join(dump(v) for v in value) + "]"
        return json.dumps(value)
    return dump(doc)


def _outside_strings(data: bytes) -> bytes:
    return _STRING.sub(b'""', data)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("redact-fuzz")


CASE = st.fixed_dictionaries({
    "seed": st.integers(0, 2**32 - 1),
    "kinds": st.lists(st.sampled_from(labelled.SECRETS), min_size=1, max_size=4, unique_by=lambda k: k.name),
    "mutate": st.booleans(),
    "share": st.sampled_from([0.0, 0.05, 0.3]),
    "quoted": st.booleans(),
})


@given(case=CASE)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_mutated_escaped_lookalike_secrets_never_leak(folder: Path, case: dict):
    rng = random.Random(case["seed"])
    doc = labelled.load(BASE)
    d = labelled.Doc(doc)
    secrets: list[tuple[tuple, labelled.Secret]] = []
    for kind in case["kinds"]:
        secret = kind.make(rng)
        place = rng.choice(labelled.places_of(kind))
        text = _mutate(secret.text, rng) if case["mutate"] else secret.text
        if case["quoted"]:
            text = f'"{text}"'  # escaped quotes around it in the JSON text
        if kind.name == "user name":
            labelled.KEYED_PLACES["metadata under its key"](d, text, "username")
        if place in labelled.KEYED_PLACES:
            value = secret.value or secret.text
            path = labelled.KEYED_PLACES[place](d, _mutate(value, rng) if case["mutate"] else value, secret.key)
        else:
            path = {**labelled.PLACES, **labelled.PATH_PLACES}[place](d, text, rng)
        secrets.append((path, secret))
    src = folder / f"case-{case['seed']}.json"
    out = folder / f"case-{case['seed']}.out.json"
    src.write_text(_write(doc, rng, case["share"]), encoding="utf-8")
    try:
        assert check_trace(src).unsafe
        redact_trace(src, out)
        copy = json.loads(out.read_text(encoding="utf-8"))
        everything = fold("\n".join(labelled.strings_of(copy)))[0]
        leaks = [(path, part) for path, secret in secrets for part in secret.parts if fold(part)[0] in everything]
        assert leaks == []
        assert not check_trace(out).unsafe
        assert _outside_strings(out.read_bytes()) == _outside_strings(src.read_bytes())
    finally:
        src.unlink(missing_ok=True)
        out.unlink(missing_ok=True)


@given(seed=st.integers(0, 2**32 - 1), share=st.sampled_from([0.0, 0.2]))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_check_passes_exactly_the_files_redact_leaves_unchanged(folder: Path, seed: int, share: float):
    """Decoys, truncated secrets and whole ones mixed at random: whatever the detectors make of
    them, `--check` and `redact` agree."""
    rng = random.Random(seed)
    doc = labelled.load(BASE)
    d = labelled.Doc(doc)
    for _ in range(rng.randint(1, 6)):
        if rng.random() < 0.6:
            text = rng.choice(labelled.DECOYS)
        else:
            text = rng.choice(labelled.SECRETS).make(rng).text
            text = text[: rng.randint(1, len(text))]  # a secret cut short may or may not be one
        rng.choice(list(labelled.PLACES.values()))(d, text, rng)
    src = folder / f"mixed-{seed}.json"
    out = folder / f"mixed-{seed}.out.json"
    src.write_text(_write(doc, rng, share), encoding="utf-8")
    try:
        unsafe = check_trace(src).unsafe
        redact_trace(src, out)
        assert unsafe == (out.read_bytes() != src.read_bytes())
        assert not check_trace(out).unsafe
    finally:
        src.unlink(missing_ok=True)
        out.unlink(missing_ok=True)
