"""The labelled redaction corpus: real traces with secrets of every kind planted in every place a
trace carries strings, and decoys (strings that look like secrets and are not) in the same places.

Used by tests/redact/test_redact_recall.py (a small slice, on every run) and
benchmarks/redact_recall.py (the whole corpus, the table in docs/redact.md).

- `SECRETS`: one generator per kind of secret (`Kind`): each call makes a new, random instance
  (`Secret`: the text planted, the parts of it that must not survive, the kinds of placeholder
  that may replace it). Names and numbers are drawn at random, so no planted part is in the base
  trace by chance.
- `PLACES`: where a string goes — labels, GPU labels, process and thread names, operator and
  instant-event arguments, counter names, Python frames, call stacks, kernel file arguments,
  metadata, `distributedInfo`, `traceName`, and values under a key that names the secret (in
  arguments and in metadata). Each place writes the string into a trace document and returns the
  path to it, so the copy's string at that path is compared with what was planted.
- `plant(doc, rng, ...)`: the document with the secrets (or decoys) added, and the list of what
  went where (`Planted`).
- `LAYOUTS`: how the document is written: Kineto's (one event per line), minified, with escaped
  slashes, with every non-ASCII character escaped (`\\uXXXX`).
- `outcome(planted, copy_doc)`: per planted item, whether its string changed (found) and whether any
  part of the secret is still in the copy, anywhere, escapes undone and look-alikes folded
  (leaked).
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from stepscope.redact.lookalike import fold

# ---------------------------------------------------------------- random material

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


def _name(rng: random.Random, syllables: int = 3) -> str:
    """A pronounceable random name (`kadoru`): in no trace by chance."""
    return "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(syllables))


def _chars(rng: random.Random, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    """Random characters using every class of the alphabet (digits, upper, lower) at least once."""
    classes = [f for f in (str.isdigit, str.isupper, str.islower) if any(f(c) for c in alphabet)]
    while True:
        t = "".join(rng.choice(alphabet) for _ in range(n))
        if all(any(f(c) for c in t) for f in classes):
            return t


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(n))


B64 = string.ascii_letters + string.digits + "+/"
URLSAFE = string.ascii_letters + string.digits + "_-"


@dataclass(frozen=True)
class Secret:
    text: str  # what is planted (a secret, with the words around it that make it one, if any)
    parts: tuple[str, ...]  # substrings that must not survive anywhere in the copy
    key: str  # a key that names this kind of secret (`HF_TOKEN`, `master_addr`, `phone`, ...)
    value: str = ""  # what goes under `key` (default: text)


@dataclass(frozen=True)
class Kind:
    name: str  # the row of the table: `token: Hugging Face`, `phone`, ...
    placeholders: tuple[str, ...]  # the placeholder kinds that may replace it
    make: Callable[[random.Random], Secret]
    path: bool = False  # a file path: also planted in frames, call stacks, kernel files, traceName


def _token(prefix: str, body: str, key: str) -> Secret:
    return Secret(prefix + body, (prefix + body, body), key)


def _email(rng: random.Random) -> Secret:
    local = rng.choice([f"{_name(rng, 2)}.{_name(rng)}", f"{_name(rng)}{_digits(rng, 2)}", f"{_name(rng, 2)}+ml"])
    domain = rng.choice([f"{_name(rng)}-labs.com", f"{_name(rng)}.org", f"mail.{_name(rng)}.de", f"{_name(rng)}.co.uk",
                         f"{_name(rng)}.ai", f"{_name(rng)}.io"])
    address = f"{local}@{domain}"
    return Secret(address, (address, local), "email")


def _aws_secret(rng: random.Random) -> Secret:
    body = _chars(rng, 40, B64)
    return Secret(f"aws_secret_access_key={body}", (body,), "AWS_SECRET_ACCESS_KEY", body)


def _private_key(rng: random.Random) -> Secret:
    kind = rng.choice(["RSA ", "EC ", "OPENSSH ", ""])
    lines = [_chars(rng, 64, B64) for _ in range(3)]
    block = f"-----BEGIN {kind}PRIVATE KEY-----\n" + "\n".join(lines) + f"\n-----END {kind}PRIVATE KEY-----"
    return Secret(block, tuple(lines), "private_key")


def _password(rng: random.Random) -> Secret:
    value = _chars(rng, 12, string.ascii_letters + string.digits + "!#%")
    text = rng.choice([f"password={value}", f"--db-password {value}", f"my password is {value}",
                       f"DB_PASSWORD: '{value}'"])
    return Secret(text, (value,), "db_password", value)


def _phone(rng: random.Random) -> Secret:
    area, mid, end = _digits(rng, 3).replace("0", "4", 1), _digits(rng, 3), _digits(rng, 4)
    number = rng.choice([f"({area}) {mid}-{end}", f"{area}-{mid}-{end}", f"+1 {area} {mid} {end}",
                         f"+44 20 {_digits(rng, 4)} {_digits(rng, 4)}", f"+49 30 {_digits(rng, 7)}",
                         f"+91 9{_digits(rng, 4)} {_digits(rng, 5)}", f"+33 6 {_digits(rng, 2)} {_digits(rng, 2)} {_digits(rng, 2)} {_digits(rng, 2)}"])
    text = rng.choice([number, f"call me at {number}", f"phone: {number}"])
    return Secret(text, (number,), "phone", number)


def _national_id(rng: random.Random) -> Secret:
    choice = rng.randrange(3)
    if choice == 0:
        area = rng.randrange(1, 665)
        number = f"{area:03d}-{rng.randrange(1, 100):02d}-{rng.randrange(1, 10000):04d}"
        text = rng.choice([number, f"SSN {number}", f"my SSN is {number}"])
    elif choice == 1:
        prefix = rng.choice([a + b for a in "ABCEGHJKLMNPRSTWXYZ" for b in "ABCEGHJKLMNPRSTWXYZ"
                             if a + b not in ("BG", "GB", "NK", "KN", "TN", "NT", "ZZ")])  # those are never issued
        number = prefix + " " + " ".join(_digits(rng, 2) for _ in range(3)) + " " + rng.choice("ABCD")
        text = rng.choice([number, f"NI number {number}"])
    else:
        number = rng.choice(string.ascii_uppercase) + _digits(rng, 8)
        text = rng.choice([f"passport {number}", f"passport no. {number}", f"national id: {number}"])
    return Secret(text, (number,), "ssn", number)


_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]


def _birth_date(rng: random.Random) -> Secret:
    y, m, d = rng.randrange(1940, 2006), rng.randrange(1, 13), rng.randrange(1, 29)
    date = rng.choice([f"{y}-{m:02d}-{d:02d}", f"{m:02d}/{d:02d}/{y}", f"{d} {_MONTHS[m - 1]} {y}", f"{d:02d}.{m:02d}.{y}"])
    text = rng.choice([f"born {date}", f"DOB: {date}", f"date of birth {date}", f"born on {date}"])
    return Secret(text, (date,), "dob", date)


def _ipv4(rng: random.Random) -> Secret:
    address = rng.choice([f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
                          f"172.{rng.randrange(16, 32)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
                          f"192.168.{rng.randrange(256)}.{rng.randrange(1, 255)}",
                          f"{rng.randrange(11, 100)}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"])
    text = rng.choice([address, f"{address}:29500", f"tcp://{address}:23456", f"MASTER_ADDR={address}"])
    return Secret(text, (address,), "master_addr", address)


def _ipv6(rng: random.Random) -> Secret:
    groups = [f"{rng.randrange(1, 0xffff):x}" for _ in range(4)]
    address = rng.choice([f"fe80::{groups[0]}:{groups[1]}:{groups[2]}:{groups[3]}",
                          f"2001:db8:{groups[0]}::{groups[1]}:{groups[2]}",
                          f"fd{rng.randrange(16, 255):02x}:{groups[0]}:{groups[1]}:{groups[2]}::{groups[3]}",
                          f"2a01:4f8:{groups[0]}:{groups[1]}:{groups[2]}:{groups[3]}:1:2"])
    text = rng.choice([address, f"[{address}]:29500", f"addr {address}"])
    return Secret(text, (address,), "master_addr", address)


def _host(rng: random.Random) -> Secret:
    host = rng.choice([f"gpu-{_name(rng, 2)}-{rng.randrange(1, 99)}.cluster.{_name(rng)}.com",
                       f"ip-10-{rng.randrange(256)}-{rng.randrange(256)}-{rng.randrange(1, 255)}.ec2.internal",
                       f"{_name(rng)}{rng.randrange(1, 99)}.corp.{_name(rng)}.net",
                       f"node{rng.randrange(1, 999)}.{_name(rng)}.internal"])
    return Secret(host, (host,), "hostname")


def _user_path(rng: random.Random) -> Secret:
    user = f"{_name(rng, 2)}{_name(rng, 1)}"
    if rng.random() < 0.2:
        user = user.title()
        return Secret(f"C:\\Users\\{user}\\{_name(rng)}\\train.py", (user,), "cwd")
    path = rng.choice([f"/home/{user}/{_name(rng)}/train.py", f"/Users/{user}.{_name(rng)}/code/model.py",
                       f"/tmp/torchinductor_{user}/ab/c{_name(rng)}.py",
                       f"/home/{user}/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py",
                       f"/private/home/{user}/runs/trace.json", f"/mnt/c/Users/{user}/proj/x.py"])
    return Secret(path, (user,), "cwd")


def _home_folder(rng: random.Random) -> Secret:
    user = f"{_name(rng, 2)}{_name(rng, 1)}"
    folder, name = rng.choice([(f"/home/{user}", user), (f"/home/{user}/", user), (f"/Users/{user}", user),
                               (f"/Users/{user}.{_name(rng)}", None), (f"C:\\Users\\{user.title()}", user.title())])
    name = name or folder.rsplit("/", 1)[-1]
    text = rng.choice([folder, f"cd {folder}", f"cwd={folder}", f"HOME={folder}"])
    return Secret(text, (name,), "cwd", folder)


_PROMPTS = [
    "Summarize the medical record of {a} {b} for the insurance claim please",
    "tell me a story about {a} the dragon and the knight {b}",
    "Translate this letter from {a} to {b} into German.",
    "What is the home address of {a} {b}?",
    "write a poem about {a} and {b} walking by the sea",
    "Draft an email to {a} explaining why the {b} project slipped",
]


def _free_text(rng: random.Random) -> Secret:
    a, b = _name(rng).title(), _name(rng).title()
    prompt = rng.choice(_PROMPTS).format(a=a, b=b)
    words = prompt.split()
    windows = tuple(" ".join(words[i:i + 3]) for i in range(len(words) - 2))
    return Secret(prompt, (a, b, *windows), "prompt")


def _user_name(rng: random.Random) -> Secret:
    user = f"{_name(rng, 2)}{_digits(rng, 2)}"
    return Secret(user, (user,), "username")


TOKEN = ("token",)
SECRETS: list[Kind] = [
    Kind("email", ("email",), _email),
    Kind("token: Hugging Face", TOKEN, lambda r: _token("hf_", _chars(r, 34), "HF_TOKEN")),
    Kind("token: OpenAI", TOKEN, lambda r: _token(r.choice(["sk-proj-", "sk-"]), _chars(r, 48, URLSAFE), "OPENAI_API_KEY")),
    Kind("token: Anthropic", TOKEN, lambda r: _token("sk-ant-api03-", _chars(r, 93, URLSAFE) + "AA", "ANTHROPIC_API_KEY")),
    Kind("token: GitHub", TOKEN, lambda r: r.choice([_token("ghp_", _chars(r, 36), "GITHUB_TOKEN"),
                                                     _token("github_pat_", _chars(r, 22) + "_" + _chars(r, 59), "GH_TOKEN")])),
    Kind("token: GitLab", TOKEN, lambda r: _token("glpat-", _chars(r, 20, URLSAFE), "GITLAB_TOKEN")),
    Kind("token: AWS key id", TOKEN, lambda r: _token("AKIA", _chars(r, 16, string.ascii_uppercase + string.digits),
                                                      "AWS_ACCESS_KEY_ID")),
    Kind("token: AWS secret key", TOKEN, _aws_secret),
    Kind("token: GCP", TOKEN, lambda r: r.choice([_token("AIza", _chars(r, 35, URLSAFE), "GOOGLE_API_KEY"),
                                                  _token("ya29.", _chars(r, 60, URLSAFE), "GOOGLE_OAUTH_TOKEN")])),
    Kind("token: Slack", TOKEN, lambda r: r.choice([
        _token("xoxb-", f"{_digits(r, 12)}-{_digits(r, 13)}-{_chars(r, 24)}", "SLACK_BOT_TOKEN"),
        _token("https://hooks.slack.com/services/", f"T{_chars(r, 8, string.ascii_uppercase + string.digits)}/"
               f"B{_chars(r, 8, string.ascii_uppercase + string.digits)}/{_chars(r, 24)}", "SLACK_WEBHOOK_URL")])),
    Kind("token: Stripe", TOKEN, lambda r: _token(r.choice(["sk_live_", "rk_live_", "sk_test_", "whsec_"]), _chars(r, 32),
                                                  "STRIPE_SECRET_KEY")),
    Kind("token: npm / PyPI", TOKEN, lambda r: r.choice([_token("npm_", _chars(r, 36), "NPM_TOKEN"),
                                                          _token("pypi-AgEIcHlwaS5vcmc", _chars(r, 60, URLSAFE), "PYPI_TOKEN")])),
    Kind("token: JWT", TOKEN, lambda r: _token("eyJhbGciOiJIUzI1NiJ9.eyJ", _chars(r, 40, URLSAFE) + "." + _chars(r, 43, URLSAFE),
                                               "ID_TOKEN")),
    Kind("token: bearer", TOKEN, lambda r: (lambda v: Secret(f"Authorization: Bearer {v}", (v,), "authorization",
                                                              f"Bearer {v}"))(_chars(r, 40, URLSAFE))),
    Kind("token: URL credentials", TOKEN, lambda r: (lambda u, p: Secret(
        f"https://{u}:{p}@{_name(r)}.example.com/repo.git", (f"{u}:{p}", p), "remote_url"))(_name(r), _chars(r, 14))),
    Kind("token: password", TOKEN, _password),
    Kind("private key", TOKEN, _private_key),
    Kind("phone", ("phone",), _phone),
    Kind("national id", ("national-id",), _national_id),
    Kind("date of birth", ("birth-date",), _birth_date),
    Kind("IPv4", ("host",), _ipv4),
    Kind("IPv6", ("host",), _ipv6),
    Kind("host name", ("host",), _host),
    Kind("user path", ("path",), _user_path, path=True),
    Kind("home folder", ("path",), _home_folder, path=True),
    Kind("user name", ("user",), _user_name),
    Kind("free text", ("input",), _free_text),
]

# Strings that look like secrets and are not: each must come through unchanged.
DECOYS: list[str] = [
    "ninja==1.11.1.4", "torch==2.1.0+cu121", "nvidia-cudnn-cu12==8.9.2.26", "cuda 12.1.0.1", "cudnn 8.9.2.26",
    "version 2.18.1.1", "v1.2.3.4", "127.0.0.1:29500", "0.0.0.0", "localhost:29500", "::1", "c10::Half", "aten::mm",
    "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >", "2024-02-08 10:38:45",
    "2024-02-08", "12:30:45.123", "0x7f0e8a76bbc0", "123e4567-e89b-12d3-a456-426614174000",
    "cqaokwf2bph4egogzevc22vluasiyuui4i54zpemp6knbsggfbuu", "6DBB43BA7622473C8658D9615ABBFA77",
    "[[1024, 1024], [1024]]", "1024 1024 4096", "batch 32 seq 2048 hidden 4096", "cuda:0", "fn@module.py",
    "Dequeue@aclnnMm", "@torch.compile", "https://pytorch.org/docs/stable/profiler.html", "nn.Module: Linear_0",
    "torchvision.io", "torch.nn.functional.linear", "/usr/lib/python3.10/site-packages/torch/nn/functional.py(2): f",
    "torch/nn/modules/module.py(1501): _call_impl", "/tmp/libkineto_activities_1074.json", "/dev/shm/nccl-0",
    "max_tokens=2048", "eos_token=</s>", "token_len=128", "tokenizer=gpt2", "password=***", "api_key=${API_KEY}",
    "XBLOCK=512", "grid(100,)", "Memcpy HtoD (Pageable -> Device)", "ProfilerStep#3", "ss:f0:12:next",
    "## forward:kt regroup as dict ##", "Optimizer.step#AdamW.step", "MaxPoolGradWithArgmaxV1", "step 12 of 500",
    "lr=3e-4 wd=0.1", "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", "nccl:all_reduce",
    "master_port=29500", "world_size=8 rank=3", "10.5", "1.5e-3", "seq_len 4096", "rank 3 of 8",
]


# ---------------------------------------------------------------- places

@dataclass
class Planted:
    kind: str  # the row (a Kind's name, or "decoy")
    place: str
    path: tuple  # where the string is in the document
    text: str  # the string written there
    parts: tuple[str, ...]  # what must not survive (nothing, for a decoy)


class Doc:
    """A trace document being planted into: where its CPU and GPU threads are, a time to put new
    events at, and the counters that keep new pids, tids and keys apart."""

    def __init__(self, doc: dict):
        self.doc = doc
        events = doc["traceEvents"]
        complete = [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and isinstance(e.get("ts"), (int, float))]
        cpu = next((e for e in complete if e.get("cat") in ("cpu_op", "user_annotation", "python_function")), None)
        gpu = next((e for e in complete if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_user_annotation")), None)
        self.cpu = (cpu["pid"], cpu["tid"]) if cpu else (1, 1)
        self.gpu = (gpu["pid"], gpu["tid"]) if gpu else (0, 7)
        self.ts = min((e["ts"] for e in complete), default=1000.0)
        self.n = 0
        self.trace_name_planted = False

    def add(self, event: dict) -> int:
        self.n += 1
        events = self.doc["traceEvents"]
        events.append({"ts": self.ts, **event})
        return len(events) - 1

    def x(self, cat: str, name: str, where: tuple, args: dict | None = None) -> int:
        event = {"ph": "X", "cat": cat, "name": name, "pid": where[0], "tid": where[1], "dur": 1}
        if args is not None:
            event["args"] = args
        return self.add(event)


def _label(d: Doc, s: str, rng: random.Random) -> tuple:
    text = rng.choice(["{}", "step {}", "## load {} ##", "prefill {} done"]).format(s)
    return ("traceEvents", d.x("user_annotation", text, d.cpu), "name")


def _gpu_label(d: Doc, s: str, rng: random.Random) -> tuple:
    return ("traceEvents", d.x("gpu_user_annotation", rng.choice(["{}", "decode {}"]).format(s), d.gpu), "name")


def _process_name(d: Doc, s: str, rng: random.Random) -> tuple:
    i = d.add({"ph": "M", "name": "process_name", "pid": 700000 + d.n, "tid": 0,
               "args": {"name": rng.choice(["python3 train.py {}", "{}", "serve {}"]).format(s)}})
    return ("traceEvents", i, "args", "name")


def _thread_name(d: Doc, s: str, rng: random.Random) -> tuple:
    i = d.add({"ph": "M", "name": "thread_name", "pid": d.cpu[0], "tid": 800000 + d.n,
               "args": {"name": rng.choice(["worker {}", "{}"]).format(s)}})
    return ("traceEvents", i, "args", "name")


def _op_arg(d: Doc, s: str, rng: random.Random) -> tuple:
    i = d.x("cpu_op", "aten::to", d.cpu, {"External id": 900000 + d.n, "Concrete Inputs": ["", s, "False"]})
    return ("traceEvents", i, "args", "Concrete Inputs", 1)


def _instant_arg(d: Doc, s: str, rng: random.Random) -> tuple:
    i = d.add({"ph": "i", "s": "t", "name": "marker", "pid": d.cpu[0], "tid": d.cpu[1], "args": {"detail": s}})
    return ("traceEvents", i, "args", "detail")


def _counter_name(d: Doc, s: str, rng: random.Random) -> tuple:
    i = d.add({"ph": "C", "name": f"queue {s}", "pid": d.cpu[0], "tid": d.cpu[1], "args": {"depth": 3}})
    return ("traceEvents", i, "name")


def _frame(d: Doc, s: str, rng: random.Random) -> tuple:
    return ("traceEvents", d.x("python_function", f"{s}(12): train_step", d.cpu, {"Python id": 900000 + d.n}), "name")


def _call_stack(d: Doc, s: str, rng: random.Random) -> tuple:
    stack = f"{s}(12): train_step;torch/nn/modules/module.py(1501): _call_impl"
    i = d.x("cpu_op", "aten::addmm", d.cpu, {"External id": 900000 + d.n, "Call stack": stack})
    return ("traceEvents", i, "args", "Call stack")


def _kernel_file(d: Doc, s: str, rng: random.Random) -> tuple:
    i = d.x("kernel", "triton_poi_fused_add_0", d.gpu, {"kernel_file": s, "stream": d.gpu[1], "device": 0})
    return ("traceEvents", i, "args", "kernel_file")


def _metadata(d: Doc, s: str, rng: random.Random) -> tuple:
    key = f"run_note_{d.n}"
    d.n += 1
    d.doc[key] = rng.choice(["{}", "note {}", "launched from {}"]).format(s)
    return (key,)


def _distributed(d: Doc, s: str, rng: random.Random) -> tuple:
    info = d.doc.setdefault("distributedInfo", {"backend": "nccl", "rank": 0, "world_size": 2})
    groups = info.setdefault("pg_config", [])
    if not isinstance(groups, list):
        groups = info["pg_config"] = []
    d.n += 1
    groups.append({"pg_name": str(1000 + d.n), "pg_desc": rng.choice(["{}", "group {}"]).format(s),
                   "backend_config": "cuda:nccl", "ranks": [0, 1]})
    return ("distributedInfo", "pg_config", len(groups) - 1, "pg_desc")


def _trace_name(d: Doc, s: str, rng: random.Random) -> tuple:
    if not d.trace_name_planted:  # the document's own traceName, then one in a metadata object
        d.trace_name_planted = True
        d.doc["traceName"] = s
        return ("traceName",)
    d.n += 1
    d.doc[f"run_{d.n}"] = {"traceName": s}
    return (f"run_{d.n}", "traceName")


def _keyed_arg(d: Doc, value: str, key: str) -> tuple:
    i = d.add({"ph": "i", "s": "t", "name": "env", "pid": d.cpu[0], "tid": d.cpu[1], "args": {key: value}})
    return ("traceEvents", i, "args", key)


def _keyed_metadata(d: Doc, value: str, key: str) -> tuple:
    d.n += 1
    name = f"env_{d.n}"
    d.doc[name] = {key: value}
    return (name, key)


PLACES: dict[str, Callable[[Doc, str, random.Random], tuple]] = {
    "label": _label, "GPU label": _gpu_label, "process name": _process_name, "thread name": _thread_name,
    "operator argument": _op_arg, "instant-event argument": _instant_arg, "counter name": _counter_name,
    "metadata": _metadata, "distributedInfo": _distributed,
}
PATH_PLACES: dict[str, Callable[[Doc, str, random.Random], tuple]] = {
    "Python frame": _frame, "call stack": _call_stack, "kernel file": _kernel_file, "traceName": _trace_name,
}
KEYED_PLACES = {"argument under its key": _keyed_arg, "metadata under its key": _keyed_metadata}


def places_of(kind: Kind) -> list[str]:
    return [*PLACES, *(PATH_PLACES if kind.path else ()), *KEYED_PLACES]


def plant(doc: dict, rng: random.Random, kinds: list[Kind] = SECRETS, decoys: list[str] = DECOYS,
          copies: int = 1) -> list[Planted]:
    """Plant `copies` fresh instances of every kind in every place of `doc` (in place), and every
    decoy in every place that is not under a key; the list of what went where."""
    d = Doc(doc)
    out: list[Planted] = []
    for kind in kinds:
        for place in places_of(kind):
            for _ in range(copies):
                secret = kind.make(rng)
                if kind.name == "user name":  # known from the metadata, as a trace tells its user
                    out.append(Planted(kind.name, "metadata under its key", _keyed_metadata(d, secret.text, "username"),
                                       secret.text, secret.parts))
                if place in KEYED_PLACES:
                    path = KEYED_PLACES[place](d, secret.value or secret.text, secret.key)
                    text = secret.value or secret.text
                else:
                    path = {**PLACES, **PATH_PLACES}[place](d, secret.text, rng)
                    text = get(doc, path)
                out.append(Planted(kind.name, place, path, text, secret.parts))
    for decoy in decoys:
        for place in PLACES:
            path = PLACES[place](d, decoy, rng)
            out.append(Planted("decoy", place, path, get(doc, path), ()))
    return out


def get(doc: Any, path: tuple) -> Any:
    for step in path:
        doc = doc[step]
    return doc


# ---------------------------------------------------------------- writing

def _kineto(doc: dict) -> str:
    """Kineto's layout: metadata first, then one event per line, then what follows the events."""
    head = {k: v for k, v in doc.items() if k != "traceEvents"}
    body = ",\n  ".join(json.dumps(e, ensure_ascii=False) for e in doc["traceEvents"])
    meta = json.dumps(head, indent=2, ensure_ascii=False)[1:-2].strip()
    return "{\n  " + (meta + ",\n  " if meta else "") + '"traceEvents": [\n  ' + body + "\n  ]\n}\n"


LAYOUTS: dict[str, Callable[[dict], str]] = {
    "kineto": _kineto,
    "minified": lambda doc: json.dumps(doc, separators=(",", ":"), ensure_ascii=False),
    "escaped slashes": lambda doc: _kineto(doc).replace("/", "\\/"),
    "ASCII escapes": lambda doc: json.dumps(doc, ensure_ascii=True),
}


# ---------------------------------------------------------------- judging a copy

def strings_of(value: Any) -> Iterator[str]:
    """Every string of a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings_of(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings_of(v)


@dataclass
class Outcome:
    planted: Planted
    found: bool  # its string was changed
    leaked: list[str] = field(default_factory=list)  # parts still in the copy (anywhere)


def outcome(planted: list[Planted], copy: dict) -> list[Outcome]:
    """Each planted item judged against the copy: found when the string at its path changed (a
    decoy: when it did not), leaked parts searched in every string of the copy, and again with
    look-alikes folded."""
    everything = "\n".join(strings_of(copy))
    folded = fold(everything)[0]
    out = []
    for p in planted:
        now = get(copy, p.path)
        leaked = [part for part in p.parts if part in everything or fold(part)[0] in folded]
        out.append(Outcome(p, now != p.text if p.kind != "decoy" else now == p.text, leaked))
    return out


def bases(folder: Path | None) -> list[Path]:
    """The real traces the corpus is planted into: small ones of several eras and devices from the
    public corpus when it is there (`folder` = shared/traces), else the test data's."""
    here = Path(__file__).resolve().parent.parent / "data" / "traces"
    if folder is not None and (folder / "public").is_dir():
        names = ["public/hta/call_stack/backward_thread.json", "public/kineto/docs/after_fix_trace.json",
                 "public/hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
                 "public2/ibm_spyre_sample_trace.json", "public/hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
                 "public/hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz"]
        found = [folder / n for n in names if (folder / n).is_file()]
        if found:
            return found
    return [here / "h200_async" / "trace.json.gz", here / "scenarios" / "plain_profiler" / "trace.json.gz"]


def load(path: Path) -> dict:
    import gzip

    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    doc = json.loads(data)
    return {"traceEvents": doc} if isinstance(doc, list) else doc
