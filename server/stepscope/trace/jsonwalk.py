"""Walk JSON text in one linear pass: where the containers it is inside close, where their last
whole item ends, and the first thing wrong with it, at its byte position.

The decoders (msgspec, orjson) refuse invalid JSON quickly, but say where only sometimes (orjson
counts characters, not bytes; msgspec names a byte for some errors only) and cannot tell a NaN
from any other stray character. The reader walks a text only after a decoder has refused it (so
never on the path of a valid trace): to name the problem and its position for the user, and to
find the end of the last whole event when no cheap cut decodes. Every step moves forward, so a
walk costs time in proportion to the text, whatever the text.

What the walk calls a problem is what msgspec refuses (RFC 8259): a character that cannot start
or continue a value (NaN and Infinity are named as such), a control character or an invalid escape
in a string, an escaped surrogate without its pair, bytes that are not UTF-8, a number beyond a
double's range (integers: beyond 4300 digits, where msgspec stops; with `big_ints=False`, beyond
a double's range, as orjson reads them), nesting deeper than `max_depth`, and text after the end
of the document. A text that stops inside a value has a problem that `ends_early`: more bytes could
still make it valid (a truncated file, or a slice whose end has not been read yet).

Two implementations give the same walk: `_columns.walk_json` (compiled, about a gigabyte a second)
and `_walk` here (the reference, about a megabyte a second, used where the module is not built);
`tests/trace/test_jsonwalk.py` holds them to each other. Both return a problem as a code and a
position; `describe` turns it into words, here only.
"""

from __future__ import annotations

import codecs
import math
import re
from dataclasses import dataclass

from ..textsafe import printable

try:
    from ._columns import walk_json as _compiled_walk
except ImportError:  # not built here: the reference below walks the same way
    _compiled_walk = None

MAX_DEPTH = 512  # deeper nesting is refused (msgspec itself stops near 1000, on Python's recursion limit)
MAX_INT_DIGITS = 4300  # msgspec reads longer integers as out of range (Python's int-from-text limit)
DOUBLE_DIGITS = 308  # a literal with fewer digits and no exponent is below a double's largest value

# problem codes (the same numbers in _columns.c)
(ENDS_EARLY, ENDS_IN_STRING, ENDS_IN_NUMBER, ENDS_IN_LITERAL, ENDS_IN_UTF8, TRAILING_TEXT,
 EXPECTED_COMMA_OR_BRACKET, EXPECTED_COMMA_OR_BRACE, EXPECTED_COLON, EXPECTED_KEY, TOO_DEEP,
 CONTROL_CHARACTER, INVALID_ESCAPE, LONE_SURROGATE, INVALID_UTF8, MALFORMED_NUMBER, INTEGER_OUT_OF_RANGE,
 NUMBER_OUT_OF_RANGE, NOT_A_VALUE) = range(1, 20)
_ENDING = frozenset({ENDS_EARLY, ENDS_IN_STRING, ENDS_IN_NUMBER, ENDS_IN_LITERAL, ENDS_IN_UTF8})


@dataclass(frozen=True)
class Problem:
    position: int  # byte offset in the walked text
    code: int

    @property
    def ends_early(self) -> bool:
        """The text stops inside a value: more bytes could make it valid."""
        return self.code in _ENDING


@dataclass(frozen=True)
class Walk:
    #: positions of the closing brackets of the containers given as `inside`, innermost first
    closed: tuple[int, ...]
    #: after the last whole item of the innermost container in `inside` (of the top value when
    #: `inside` is empty, once it is whole); None when no item is whole
    last_item: int | None
    #: the first problem; None when the text is one whole document (or value, without `document`)
    problem: Problem | None


def walk(text: bytes, start: int = 0, *, inside: bytes = b"", document: bool = True,
         max_depth: int = MAX_DEPTH, big_ints: bool = True, compiled: bool = True) -> Walk:
    """Walk `text` from `start`, where the containers `inside` (outermost first, e.g. b"{[" for
    the event array of a trace's object) are open and hold no item yet; with `inside` empty, one
    value starts there. The walk ends where everything open has closed; with `document`, only
    whitespace may follow (else the problem is the text after the end).

    `big_ints=False` takes integers beyond a double's range as out of range, as orjson does."""
    if compiled and _compiled_walk is not None:
        closed, last_item, found = _compiled_walk(text, start, inside, document, max_depth, big_ints)
    else:
        closed, last_item, found = _walk(text, start, inside, document, max_depth, big_ints)
        bad_utf8 = _invalid_utf8(text, start)
        if bad_utf8 is not None and (found is None or bad_utf8[0] <= found[0]):
            found = bad_utf8
    return Walk(tuple(closed), last_item, None if found is None else Problem(*found))


def ends_where(problem: Problem) -> str:
    """Where a text that `ends_early` stops, in words ("inside a string")."""
    return {ENDS_IN_STRING: "inside a string", ENDS_IN_NUMBER: "inside a number", ENDS_IN_LITERAL: "inside a value",
            ENDS_IN_UTF8: "inside a UTF-8 character"}.get(problem.code, "before its JSON document closes")


def _char(text: bytes, pos: int) -> str:
    c = text[pos]
    return repr(chr(c)) if 0x20 <= c < 0x7F else f"byte 0x{c:02x}"


_WORD = re.compile(rb"[A-Za-z0-9_+.-]{1,16}")


def describe(text: bytes, problem: Problem) -> str:
    """The problem in words, quoting at most a few bytes of the text (printable as they come)."""
    code, pos = problem.code, problem.position
    if code == ENDS_IN_STRING:
        return "the text ends inside a string"
    if code == ENDS_IN_NUMBER:
        return "the text ends inside a number"
    if code == ENDS_IN_UTF8:
        return "the text ends inside a UTF-8 character"
    if code in (ENDS_EARLY, ENDS_IN_LITERAL):
        return "the text ends before the JSON does"
    if code == TRAILING_TEXT:
        shown = printable(text[pos:pos + 40].decode("utf-8", "replace"), 24)
        return f"text after the end of the JSON document ('{shown}')"
    if code in (EXPECTED_COMMA_OR_BRACKET, EXPECTED_COMMA_OR_BRACE):
        close = "]" if code == EXPECTED_COMMA_OR_BRACKET else "}"
        return f"expected ',' or '{close}', found {_char(text, pos)}"
    if code == EXPECTED_COLON:
        return f"expected ':' after a key, found {_char(text, pos)}"
    if code == EXPECTED_KEY:
        return f"expected a key in quotes, found {_char(text, pos)}"
    if code == TOO_DEEP:
        return f"values nested deeper than {MAX_DEPTH} levels"
    if code == CONTROL_CHARACTER:
        return f"a control character (0x{text[pos]:02x}) inside a string"
    if code == INVALID_ESCAPE:
        escaped = chr(text[pos + 1]) if pos + 1 < len(text) and 0x20 <= text[pos + 1] < 0x7F else "?"
        return f"an invalid escape '\\{escaped}' in a string"
    if code == LONE_SURROGATE:
        return f"a lone surrogate {text[pos:pos + 6].decode('ascii')} in a string (half of a UTF-16 pair)"
    if code == INVALID_UTF8:
        return f"invalid UTF-8 (byte 0x{text[pos]:02x})"
    if code == MALFORMED_NUMBER:
        return f"a malformed number ({_WORD.match(text, pos).group().decode('ascii')})"  # type: ignore[union-attr]
    if code == INTEGER_OUT_OF_RANGE:
        digits = _NUMBER.match(text, pos).end() - pos - (text[pos] == ord("-"))  # type: ignore[union-attr]
        return f"an integer of {digits} digits is out of range"
    if code == NUMBER_OUT_OF_RANGE:
        token = _NUMBER.match(text, pos).group()  # type: ignore[union-attr]
        shown = token if len(token) <= 24 else token[:20] + b"..."
        return f"a number out of range ({shown.decode('ascii')})"
    for word, what in _NOT_JSON_NUMBERS:
        if text.startswith(word, pos):
            return what
    word = _WORD.match(text, pos)
    if word and text[pos] >= 0x41:  # a word: show it whole
        return f"'{word.group().decode('ascii')}' is not a JSON value"
    return f"{_char(text, pos)} cannot start a JSON value"


_NOT_JSON_NUMBERS = ((b"NaN", "NaN is not a JSON number"), (b"Infinity", "Infinity is not a JSON number"),
                     (b"-Infinity", "-Infinity is not a JSON number"))


def _invalid_utf8(text: bytes, start: int) -> tuple[int, int] | None:
    """(position, code) of the first byte from `start` on that is not UTF-8 (a character cut by
    the end of the text ends early), decoding a megabyte at a time and keeping nothing."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    step = 1 << 20
    for at in range(start, len(text), step):
        piece = text[at : at + step]
        try:
            decoder.decode(piece, final=at + step >= len(text))
        except UnicodeDecodeError as e:
            carried = len(e.object) - len(piece)  # an unfinished character kept from the last piece
            pos = at - carried + e.start
            return pos, ENDS_IN_UTF8 if e.reason == "unexpected end of data" else INVALID_UTF8
    return None


# ---------------------------------------------------------------- the reference walk

_WS = re.compile(rb"[ \t\n\r]*")
_STRING = re.compile(rb'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"')
_STRING_OPEN = re.compile(rb'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*')
_ESCAPE_PREFIX = re.compile(rb'\\(?:u[0-9a-fA-F]{0,3})?\Z')
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# the start of a number that more text could complete
_NUMBER_PREFIX = re.compile(rb"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*|(?:\.[0-9]+)?[eE][+-]?[0-9]*)?)?\Z")
_UNIT = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|.)")
_LITERALS = {ord("t"): b"true", ord("f"): b"false", ord("n"): b"null"}
_CLOSE = {ord("["): ord("]"), ord("{"): ord("}")}

# what the walk expects next
_VALUE, _FIRST_ITEM, _FIRST_KEY, _KEY, _COLON, _AFTER = range(6)

def _walk(text: bytes, pos: int, inside: bytes, document: bool, max_depth: int,
          big_ints: bool) -> tuple[list[int], int | None, tuple[int, int] | None]:
    n = len(text)
    stack = bytearray(inside)
    item_depth = len(inside)  # the items of this container are recorded (the events of the array)
    closed: list[int] = []
    last_item: int | None = None
    value_end = pos
    if not stack:
        state = _VALUE
    else:
        state = _FIRST_ITEM if stack[-1] == ord("[") else _FIRST_KEY
    ws = _WS.match
    while True:
        if state == _AFTER:
            if len(stack) == item_depth and not closed:
                last_item = value_end
            if not stack:
                end = ws(text, value_end).end()
                if end < n and document:
                    return closed, last_item, (end, TRAILING_TEXT)
                return closed, last_item, None
        pos = ws(text, pos).end()
        if pos >= n:
            return closed, last_item, (n, ENDS_EARLY)
        c = text[pos]
        if state == _AFTER:
            if c == ord(","):
                pos += 1
                state = _VALUE if stack[-1] == ord("[") else _KEY
                continue
            if c != _CLOSE[stack[-1]]:
                return closed, last_item, (pos, EXPECTED_COMMA_OR_BRACKET if stack[-1] == ord("[")
                                           else EXPECTED_COMMA_OR_BRACE)
        elif state == _COLON:
            if c != ord(":"):
                return closed, last_item, (pos, EXPECTED_COLON)
            pos += 1
            state = _VALUE
            continue
        elif state == _KEY or (state == _FIRST_KEY and c != ord("}")):
            if c != ord('"'):
                return closed, last_item, (pos, EXPECTED_KEY)
            pos, found = _string(text, pos)
            if found:
                return closed, last_item, found
            state = _COLON
            continue
        elif state == _FIRST_ITEM and c != ord("]"):
            state = _VALUE
        if state != _VALUE:  # a close: after a value, or of an empty container
            stack.pop()
            if len(stack) < len(inside) and len(closed) < len(inside) - len(stack):
                closed.append(pos)
            pos = value_end = pos + 1
            state = _AFTER
            continue
        # a value
        if c == ord("[") or c == ord("{"):
            if len(stack) >= max_depth:
                return closed, last_item, (pos, TOO_DEEP)
            stack.append(c)
            pos += 1
            state = _FIRST_ITEM if c == ord("[") else _FIRST_KEY
            continue
        if c == ord('"'):
            end, found = _string(text, pos)
        elif c == ord("-") or 0x30 <= c <= 0x39:
            end, found = _number(text, pos, big_ints)
        elif c in _LITERALS:
            end, found = _literal(text, pos, _LITERALS[c])
        else:
            end, found = pos, (pos, NOT_A_VALUE)
        if found:
            return closed, last_item, found
        pos = value_end = end
        state = _AFTER


def _string(text: bytes, pos: int) -> tuple[int, tuple[int, int] | None]:
    m = _STRING.match(text, pos)
    if m is None:
        stop = _STRING_OPEN.match(text, pos).end()  # type: ignore[union-attr]
        if stop >= len(text) or _ESCAPE_PREFIX.match(text, stop):
            return stop, (len(text), ENDS_IN_STRING)
        return stop, (stop, CONTROL_CHARACTER if text[stop] < 0x20 else INVALID_ESCAPE)
    end = m.end()
    if b"\\u" in text[pos:end]:
        at = _surrogates(text[pos:end])
        if at is not None:
            return end, (pos + at, LONE_SURROGATE)
    return end, None


def _surrogates(token: bytes) -> int | None:
    """Offset in a string token of an escaped surrogate without its pair, or None."""
    want_low_at = None
    previous_end = -1
    for m in _UNIT.finditer(token):
        unit = int(m.group(1), 16) if m.group(1) else None
        adjacent = m.start() == previous_end
        previous_end = m.end()
        if want_low_at is not None:
            if not (adjacent and unit is not None and 0xDC00 <= unit <= 0xDFFF):
                return want_low_at
            want_low_at = None
            continue
        if unit is not None and 0xDC00 <= unit <= 0xDFFF:
            return m.start()
        if unit is not None and 0xD800 <= unit <= 0xDBFF:
            want_low_at = m.start()
    return want_low_at


def _number(text: bytes, pos: int, big_ints: bool) -> tuple[int, tuple[int, int] | None]:
    m = _NUMBER.match(text, pos)
    end = m.end() if m else pos
    if m is None or (end < len(text) and text[end] in b".eE"):
        if _NUMBER_PREFIX.match(text, pos):  # a number cut by the end of the text
            return len(text), (len(text), ENDS_IN_NUMBER)
        return end, (pos, NOT_A_VALUE if m is None else MALFORMED_NUMBER)
    token = text[pos:end]
    exponent = b"e" in token or b"E" in token
    if b"." not in token and not exponent:
        digits = len(token) - token.startswith(b"-")
        if big_ints:
            return end, (pos, INTEGER_OUT_OF_RANGE) if digits > MAX_INT_DIGITS else None
        if digits <= DOUBLE_DIGITS:
            return end, None
    elif not exponent and len(token) <= DOUBLE_DIGITS:
        return end, None
    return end, (pos, NUMBER_OUT_OF_RANGE) if math.isinf(float(token)) else None


def _literal(text: bytes, pos: int, literal: bytes) -> tuple[int, tuple[int, int] | None]:
    if text.startswith(literal, pos):
        return pos + len(literal), None
    rest = text[pos : pos + len(literal)]
    if pos + len(rest) == len(text) and literal.startswith(rest):
        return len(text), (len(text), ENDS_IN_LITERAL)
    return pos, (pos, NOT_A_VALUE)
