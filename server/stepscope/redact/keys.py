"""What a JSON key says about the string it holds: `{"master_addr": "10.1.2.3"}` holds a host,
`{"HF_TOKEN": "..."}` a secret, `{"prompt": "..."}` input content, whatever the value looks like.

`key_role(key)` gives the kind of secret a key names (or None); `keyed_value(role, key, value)`
says whether the value is one (a placeholder, a number, `localhost` or `root` are not). The same
two functions decide a metadata value (the reader's pass) and an argument's value (the text pass),
so a string is judged the same wherever its key is met.

Keys are compared by their parts, lower-cased, without separators: `master_addr`, `MasterAddr`
and `MASTER-ADDR` are one key; a key names a kind when its last part, or its last two or three
parts together, is one of the kind's words (`aws_secret_access_key` ends in `access key`,
`num_tokens` does not end in `token`).
"""

from __future__ import annotations

import re

from .detect import BIRTH, EMAIL, HOST, INPUT, NATIONAL_ID, PHONE, PLACEHOLDER, TOKEN, USER

_WORDS: dict[str, frozenset[str]] = {
    HOST: frozenset("""host hostname hostaddr hostaddress nodename masteraddr masteraddress mainaddr ipaddress
        ipaddr ip ipv4 ipv6 serveraddr serveraddress server fqdn masterhost node""".split()),
    USER: frozenset("""user username userid login owner author useremail startedby createdby launchedby submittedby
        runby""".split()),
    TOKEN: frozenset("""password passwd pwd passphrase passcode pin secret token apikey accesskey authkey secretkey
        privatekey credential credentials clientsecret authorization authtoken accesstoken refreshtoken bearer
        cookie sessionid sessionkey signature sig""".split()),
    # not `input(s)` alone: Kineto's own `Concrete Inputs` hold an operator's scalar arguments
    INPUT: frozenset("""prompt prompts text texts query queries question answer sentence caption message
        completion instruction utterance userinput userinputs usermessage chatmessage""".split()),
    PHONE: frozenset("phone phonenumber mobile mobilenumber telephone tel cell cellphone fax".split()),
    NATIONAL_ID: frozenset("""ssn socialsecurity socialsecuritynumber nationalid nationalidentity nino nin passport
        passportnumber passportno taxid tin aadhaar idnumber personnummer""".split()),
    BIRTH: frozenset("dob birthdate dateofbirth birthday born".split()),
    EMAIL: frozenset("email emailaddress mail mailaddress".split()),
}
# words whose value is a secret only when it reads like one: long, with digits or mixed case
# (`{"token": "<pad>"}`, `{"key": "layer1"}`, `{"sig": "float"}` are names)
_WEAK = frozenset("token key credential credentials sig signature pin cookie".split())
_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_NOT_A_VALUE = re.compile(r"^(?:<[^>]*>|\*+|[xX]+|\.\.\.|-+|(?i:none|null|nil|true|false|n/?a|unknown|redacted)"
                          r"|\$\{\w+\}|\$[A-Z_][A-Z0-9_]*|%\(\w+\)[sdr]|%[sdr]|\{\w*\})$")
_GENERIC = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0", "root", "nobody", "user", "admin", "default",
                      "local", "any", "all", "cpu", "cuda", "gpu"})
_ROLES = {word: kind for kind, words in _WORDS.items() for word in words}


def key_role(key: str) -> str | None:
    """The kind of secret the string value of `key` is, or None."""
    if not key or len(key) > 64:
        return None
    parts = [p.lower() for p in _PARTS.findall(key)]
    if not parts:
        return None
    if parts[0] in ("num", "n", "max", "min", "is", "has", "use", "enable", "disable"):
        return None  # a count or a switch (`max_token`, `use_auth_token`), not the thing itself
    for n in (3, 2, 1):
        if len(parts) >= n:
            role = _ROLES.get("".join(parts[-n:]))
            if role is not None:
                return role
    return None


def names_everywhere(role: str, key: str) -> bool:
    """Whether the value of `key` (of `role`) is a host or user name to replace wherever it appears as
    a word, not only under its key: a host always; a user only under a key that says user
    (`username`, `user`, `login`), not one that could name a tool (`started_by: moca`, whose name is
    also a package's and a folder's)."""
    if role == HOST:
        return True
    parts = [p.lower() for p in _PARTS.findall(key)]
    return role == USER and bool(parts) and parts[-1] in ("user", "username", "userid", "login")


def keyed_value(role: str, key: str, value: str) -> bool:
    """Whether `value`, held by a key of `role`, is a secret of that kind."""
    v = value.strip()
    if not v or _NOT_A_VALUE.match(v) or v.lower() in _GENERIC or PLACEHOLDER.search(v):
        return False  # nothing there, or already redacted (a copy checks clean)
    if v.lstrip("-+").replace(".", "", 1).isdigit() and role in (HOST, USER, TOKEN, INPUT, EMAIL):
        return False  # a count or a port, not a name or a secret
    if role in (HOST, USER):
        return len(v) >= 2 and not any(c.isspace() for c in v)
    if role == TOKEN:
        last = (_PARTS.findall(key) or [""])[-1].lower()
        if last in _WEAK:
            return len(v) >= 8 and (any(c.isdigit() for c in v) or (v.lower() != v and v.upper() != v))
        return True
    if role == INPUT:
        return any(c.isalpha() for c in v)
    if role == PHONE:
        return sum(c.isdigit() for c in v) >= 7
    if role == NATIONAL_ID:
        return sum(c.isdigit() for c in v) >= 5
    if role == BIRTH:
        return any(c.isdigit() for c in v)
    return "@" in v  # EMAIL: an address the e-mail detector may not take (no real top-level domain)
