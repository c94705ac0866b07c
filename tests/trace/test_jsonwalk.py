"""The JSON walk (trace/jsonwalk.py): it refuses exactly what msgspec refuses, names the problem at
its byte position, and its compiled twin (_columns.walk_json) walks every text the same way."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepscope.trace import jsonwalk
from stepscope.trace.jsonwalk import describe, walk

compiled_only = pytest.mark.skipif(jsonwalk._compiled_walk is None, reason="stepscope.trace._columns is not built "
                                   "(tests/trace/test_column_scanner.py::test_the_scanner_is_built says so)")


def both(text: bytes, **kw) -> jsonwalk.Walk:
    """The walk of `text`, the same from the reference and (where built) the compiled twin."""
    reference = walk(text, compiled=False, **kw)
    if jsonwalk._compiled_walk is not None:
        assert walk(text, **kw) == reference, text[:200]
    return reference


def decodes(text: bytes) -> bool:
    try:
        msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


@pytest.mark.parametrize("text, position, words", [
    (b'{"a": NaN}', 6, "NaN is not a JSON number"),
    (b'[1, -Infinity]', 4, "-Infinity is not a JSON number"),
    (b'[1e400]', 1, "a number out of range (1e400)"),
    (b'[1' + b"0" * 5000 + b']', 1, "an integer of 5001 digits is out of range"),
    (b'["ok", "a\\ud800b"]', 9, "a lone surrogate \\ud800 in a string"),
    (b'["\\udc00"]', 2, "a lone surrogate \\udc00"),
    (b'["caf\xc3\xa9", "\xff"]', 11, "invalid UTF-8 (byte 0xff)"),
    (b'["\xed\xa0\x80"]', 2, "invalid UTF-8 (byte 0xed)"),  # a surrogate written as UTF-8
    (b'["a\x01"]', 3, "a control character (0x01) inside a string"),
    (b'["a\\x"]', 3, "an invalid escape '\\x' in a string"),
    (b'[1.]', 1, "a malformed number (1.)"),
    (b'[1,2] trailing', 6, "text after the end of the JSON document ('trailing')"),
    (b'{"a" 1}', 5, "expected ':' after a key, found '1'"),
    (b'{"a": 1,}', 8, "expected a key in quotes, found '}'"),
    (b'[1 2]', 3, "expected ',' or ']', found '2'"),
    (b'[truth]', 1, "'truth' is not a JSON value"),
    (b'[' * 2000 + b']' * 2000, 512, "values nested deeper than 512 levels"),  # msgspec stops near 1000
])
def test_each_problem_is_named_at_its_byte(text: bytes, position: int, words: str) -> None:
    w = both(text)
    assert w.problem is not None and not w.problem.ends_early
    assert w.problem.position == position
    assert words in describe(text, w.problem)
    assert not decodes(text)


@pytest.mark.parametrize("text", [b'[1, {"a": "b', b'[1, 2', b'[1.', b'[1e', b'[-', b'[tru', b'["\\u12', b'["\\',
                                  b'["\xc3', b'{"a"', b'{"a":', b'', b'   '])
def test_a_text_cut_short_ends_early(text: bytes) -> None:
    w = both(text)
    assert w.problem is not None and w.problem.ends_early, describe(text, w.problem) if w.problem else None
    assert "ends" in describe(text, w.problem)


def test_closes_and_last_item_of_an_event_array() -> None:
    body = b' {"a": [1, {"b": "}],{"}]}, {"c": 2}  ], "meta": {"x": [1]}} '
    w = both(body, inside=b"{[")
    assert w.problem is None
    array_end, doc_end = w.closed
    assert body[array_end:array_end + 1] == b"]" and body[doc_end:doc_end + 1] == b"}"
    assert body[:w.last_item].endswith(b'{"c": 2}')
    assert msgspec.json.decode(b"[" + body[:array_end] + b"]") == [{"a": [1, {"b": "}],{"}]}, {"c": 2}]
    cut = both(body[:30], inside=b"[", document=False)  # a slice read so far: the first event is whole
    assert cut.problem.ends_early and body[:cut.last_item].endswith(b'"}]}')


VALUES = st.recursive(st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers(-2**70, 2**70)
                      | st.text(max_size=8), lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=4), c,
                                                                                                   max_size=4),
                      max_leaves=16)
DAMAGE = st.sampled_from([b"", b"x", b"}", b"]", b"{", b"[", b",", b":", b'"', b"\\", b"\\u", b"\\ud800", b"\\udc00",
                          b"\x01", b"\n", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"NaN", b"-Infinity",
                          b"1e999", b"-", b"0", b"01", b".", b"e", b"tru", b" ", b"\t"])


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES, st.integers(0, 300), DAMAGE, st.integers(0, 3), st.booleans(), st.booleans())
def test_the_walk_refuses_exactly_what_the_decoder_refuses(value, at, insert, cut, truncate, ascii_only) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    at = min(at, len(text))
    text = text[:at] + insert + text[at + cut:]
    if truncate:
        text = text[:at]
    w = both(text)
    assert (w.problem is None) == decodes(text), (text, w)
    if w.problem is not None:
        assert 0 <= w.problem.position <= len(text)
        words = describe(text, w.problem)
        assert words.isprintable()


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=64), st.sampled_from([b"", b"[", b"{", b"{["]), st.booleans(), st.booleans())
def test_any_bytes_walk_the_same_both_ways(text, inside, document, big_ints) -> None:
    both(text, inside=inside, document=document, big_ints=big_ints)


@compiled_only
def test_the_compiled_walk_checks_its_arguments() -> None:
    with pytest.raises(ValueError):
        jsonwalk._compiled_walk(b"[]", 5, b"", True, 512, True)
    with pytest.raises(ValueError):
        jsonwalk._compiled_walk(b"[]", 0, b"x", True, 512, True)
