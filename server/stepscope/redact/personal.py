"""Personal data in one string: phone numbers, national identity numbers, dates of birth.

Each detector returns `(start, end, what)` spans of the text; `detect.find_hits` makes them hits
of kind `phone`, `national-id` and `birth-date`.

Precision rule, as for the other detectors: a shape that trace strings never have on their own
(`+44 20 7946 0958`, `(555) 123-4567`, `123-45-6789`), or a number after words that say what it
is (`phone: 5551234567`, `SSN 123456789`, `born 1970-01-01`). A bare date is not a date of birth
(traces carry the dates they were recorded on), and a bare run of digits is not a phone number
(sizes, ids, timestamps): both need their words.
"""

from __future__ import annotations

import re

# ---------------------------------------------------------------- phone numbers

_SEP = r"[ .\-]"
_PHONE_SHAPES = re.compile(
    r"(?<![\w+.\-/:])(?:"
    r"\+\d{1,3}" + _SEP + r"?(?:\(\d{1,4}\)" + _SEP + r"?)?\d{1,5}(?:" + _SEP + r"?\d{2,5}){1,4}"  # +1 555 123 4567
    r"|\(\d{2,5}\)" + _SEP + r"?\d{3,4}" + _SEP + r"\d{3,4}"  # (555) 123-4567, (020) 7946 0958
    r"|\d{3}([.\-])\d{3}\1\d{4}"  # 555-123-4567, 555.123.4567
    r")(?![\w.\-]*\d)")
_PHONE_WORDS = re.compile(
    r"(?i)(?<![a-z])(?:phone|tel|telephone|mobile|cell|cellphone|whatsapp|fax|call me at|text me at|sms)"
    r"(?:\s*(?:number|no\.?|#))?\s*[:=]?\s*(\+?\(?\d[\d ().\-]{5,18}\d)(?![\w.\-]*\d)")


_PHONE_HINTS = ("phone", "tel", "mobile", "cell", "whatsapp", "fax", "call", "text me", "sms")


def _digits(s: str) -> int:
    return sum(map(s.count, "0123456789"))


def phones(text: str, digits: int | None = None) -> list[tuple[int, int, str]]:
    if (digits if digits is not None else _digits(text)) < 7:
        return []
    out = []
    for m in _PHONE_SHAPES.finditer(text):
        if 7 <= _digits(m.group(0)) <= 15:
            out.append((m.start(), m.end(), "phone number"))
    low = text.lower()
    for m in _PHONE_WORDS.finditer(text) if any(w in low for w in _PHONE_HINTS) else ():
        if 7 <= _digits(m.group(1)) <= 15:
            out.append((m.start(1), m.end(1), "phone number"))
    return out


# ---------------------------------------------------------------- national identity numbers

_SSN = re.compile(r"(?<![\w\-.])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w\-]|\.\d)")
# the UK's National Insurance number: two letters, six digits, a letter A-D
_NINO = re.compile(r"(?<![A-Za-z0-9])(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
                   r"(?: ?\d{2}){3} ?[A-D](?![A-Za-z0-9])")
_ID_WORDS = re.compile(
    r"(?i)(?<![a-z])(?:ssn|social security(?: number| no\.?)?|national (?:id|identity|insurance)(?: number| no\.?)?|"
    r"nino|passport(?: number| no\.?)?|tax id|tin|aadhaar|personnummer|bsn|dni|nif|sin|id number|id card)"
    r"\s*(?:is|#|:|=)?\s*([A-Z0-9](?:[A-Z0-9]|[ \-](?=[A-Z0-9])){4,19})(?![A-Za-z0-9])")
_ID_HINTS = ("ssn", "social", "national", "nino", "passport", "tax", "tin", "aadhaar", "personnummer", "bsn", "dni",
             "nif", "sin", "id")


def national_ids(text: str, digits: int | None = None) -> list[tuple[int, int, str]]:
    if (digits if digits is not None else _digits(text)) < 6:
        return []
    out = []
    if "-" in text:
        out += [(m.start(), m.end(), "social security number") for m in _SSN.finditer(text)]
    out += [(m.start(), m.end(), "national insurance number") for m in _NINO.finditer(text)]
    low = text.lower()
    for m in _ID_WORDS.finditer(text) if any(w in low for w in _ID_HINTS) else ():
        value = m.group(1)
        if _digits(value) >= 6:  # a number, not a word or a small count after the word
            out.append((m.start(1), m.end(1), "national identity number"))
    return out


# ---------------------------------------------------------------- dates of birth

_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE = (r"(?:\d{4}[\-/.]\d{1,2}[\-/.]\d{1,2}|\d{1,2}[\-/.]\d{1,2}[\-/.]\d{2,4}"
         r"|\d{1,2}(?:st|nd|rd|th)? " + _MONTH + r",? \d{4}|" + _MONTH + r" \d{1,2}(?:st|nd|rd|th)?,? \d{4})")
_BIRTH = re.compile(
    r"(?i)(?<![a-z])(?:born(?: on| in)?|birth ?(?:day|date)?|date of birth|d\.?o\.?b\.?|geboren(?: am)?|n[ée]e? le)"
    r"\s*(?:is|was|on|:|=)?\s*(" + _DATE + r")(?![\w])")
_BIRTH_HINTS = ("born", "birth", "dob", "d.o.b", "geboren", "née", "nee le", "né le")


def birth_dates(text: str, digits: int | None = None) -> list[tuple[int, int, str]]:
    if (digits if digits is not None else _digits(text)) < 4:  # a year at least
        return []
    low = text.lower()
    if not any(w in low for w in _BIRTH_HINTS):
        return []
    return [(m.start(1), m.end(1), "date of birth") for m in _BIRTH.finditer(text)]


def personal(text: str) -> list[tuple[str, int, int, str]]:
    """(kind, start, end, what) of every phone number, national id and date of birth in `text`."""
    digits = _digits(text)
    if digits < 4:
        return []
    return ([("phone", *span) for span in phones(text, digits)]
            + [("national-id", *span) for span in national_ids(text, digits)]
            + [("birth-date", *span) for span in birth_dates(text, digits)])
