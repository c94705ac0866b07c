"""Traces with planted secrets of every kind, written as Kineto writes them (or minified), for the
recall and round-trip tests. Each planted secret is listed with its kind, so a test can check that
none of them survives and count what was found."""

from __future__ import annotations

import gzip
import json
import random
import string
from dataclasses import dataclass, field
from pathlib import Path

WORKSPACE = "/home/jane/proj"


@dataclass
class Planted:
    path: Path
    secrets: list[tuple[str, str]] = field(default_factory=list)  # (kind, text that must not survive)
    kept: list[str] = field(default_factory=list)  # names that must survive unchanged


def _token(rng: random.Random, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    """A random string that uses every character class of its alphabet (digits, upper, lower)."""
    classes = [f for f in (str.isdigit, str.isupper, str.islower) if any(f(c) for c in alphabet)]
    while True:
        t = "".join(rng.choice(alphabet) for _ in range(n))
        if all(any(f(c) for c in t) for f in classes):
            return t


def planted_secrets(seed: int) -> list[tuple[str, str, str]]:
    """(kind, where it goes: label | frame | arg | process | meta-host | meta-user, text) for one trace."""
    rng = random.Random(seed)
    user = "u" + _token(rng, 6, string.ascii_lowercase)
    host = f"gpu{rng.randint(1, 999)}.cluster{rng.randint(1, 9)}.example.com"
    return [
        ("email", "label", f"{user}.{rng.choice(['doe', 'li', 'ng'])}@acme-{rng.randint(1, 99)}.org"),
        ("token", "label", "AKIA" + _token(rng, 16, string.ascii_uppercase + string.digits)),
        ("token", "label", "ghp_" + _token(rng, 36)),
        ("token", "label", "hf_" + _token(rng, 34)),
        ("token", "label", "sk-proj-" + _token(rng, 40)),
        ("token", "label", "xoxb-" + str(rng.randint(10**11, 10**12)) + "-" + _token(rng, 24)),
        ("token", "label", "eyJhbGciOiJIUzI1NiJ9.eyJ" + _token(rng, 30) + "." + _token(rng, 43)),
        ("token", "arg", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + _token(rng, 64) + "\n-----END OPENSSH PRIVATE KEY-----"),
        ("token", "label", _token(rng, 32)),  # a random-looking string in a label
        ("token", "process", "password=" + _token(rng, 12)),
        ("token", "label", "Bearer " + _token(rng, 40)),
        ("path", "frame", f"/home/{user}/secret-project/train.py"),
        ("path", "arg", f"/tmp/torchinductor_{user}/ab/c{_token(rng, 20, string.ascii_lowercase)}.py"),
        ("path", "meta", f"/Users/{user}/runs/trace.json"),
        ("host", "meta-host", host),
        ("host", "process", f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"),
        ("user", "meta-user", user),
        ("input", "label", rng.choice(["What is the capital of France?", "Summarise this contract for me please",
                                       "tell me a story about a dragon and a knight"])),
        ("input", "label", "prompt: " + rng.choice(["translate to German", "write a haiku now"])),
    ]


KERNELS = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
    "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT320x224x64_MI16x16x1_SN_LDSB0_AFC",
    "triton_per_fused__to_copy_add_addmm_mean_mul_pow_rsqrt_transpose_view_8",
]


def write_trace(folder: Path, seed: int = 0, *, gz: bool = True, minified: bool = False,
                escaped_slashes: bool = False, steps: int = 3) -> Planted:
    """A small trace with the secrets of `planted_secrets(seed)` in labels, frames, args, process
    names and metadata, plus kernels and operators that must stay as they are."""
    secrets = planted_secrets(seed)
    by = {}
    for kind, where, text in secrets:
        by.setdefault(where, []).append(text)
    meta_path = by["meta"][0]
    user = by["meta-user"][0]
    host = by["meta-host"][0]
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python3 train.py " + by["process"][0]}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": f"worker@{by['process'][1]}"}},
    ]
    ts = 1000.0
    ext = 1
    for step in range(steps):
        start = ts
        events.append({"ph": "X", "cat": "python_function", "name": f"{by['frame'][0]}(12): train_step", "pid": 1,
                       "tid": 1, "ts": ts, "dur": 900.0, "args": {"Python id": 1}})
        events.append({"ph": "X", "cat": "python_function", "name": f"{WORKSPACE}/model/net.py(40): forward", "pid": 1,
                       "tid": 1, "ts": ts + 1, "dur": 300.0, "args": {"Python id": 2}})
        for i, label in enumerate(by["label"]):
            events.append({"ph": "X", "cat": "user_annotation", "name": f"step {label}" if i % 2 else label, "pid": 1,
                           "tid": 1, "ts": ts + 2 + i * 40, "dur": 35.0, "args": {"External id": ext}})
            events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": ts + 3 + i * 40,
                           "dur": 30.0, "args": {"External id": ext + 1, "Sequence number": ext,
                                                 "Concrete Inputs": ["", ""]}})
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                           "ts": ts + 4 + i * 40, "dur": 5.0, "args": {"correlation": ext, "External id": ext + 1}})
            events.append({"ph": "X", "cat": "kernel", "name": KERNELS[i % len(KERNELS)], "pid": 0, "tid": 7,
                           "ts": ts + 10 + i * 40, "dur": 20.0,
                           "args": {"correlation": ext, "External id": ext + 1, "stream": 7, "device": 0,
                                    "kernel_file": by["arg"][1] if i == 0 else "", "grid": [1, 1, 1]}})
            ext += 2
        events.append({"ph": "i", "name": "note", "s": "t", "pid": 1, "tid": 1, "ts": ts + 5,
                       "args": {"detail": by["arg"][0]}})
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                       "ts": start, "dur": 1000.0, "args": {}})
        ts += 1000.0
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}], "host_name": host,
           "username": user, "traceEvents": events, "traceName": meta_path}
    if minified:
        text = json.dumps(doc, separators=(",", ":"))
    else:  # Kineto's layout: metadata, then one event per line
        head = json.dumps({k: v for k, v in doc.items() if k not in ("traceEvents", "traceName")}, indent=2)[:-2]
        body = ",\n  ".join(json.dumps(e) for e in events)
        text = head + ',\n  "traceEvents": [\n  ' + body + '\n  ],\n  "traceName": ' + json.dumps(meta_path) + "\n}\n"
    if escaped_slashes:
        text = text.replace("/", "\\/")
    name = "trace.json.gz" if gz else "trace.json"
    path = folder / name
    data = text.encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    kept = [*KERNELS, "aten::mm", "cudaLaunchKernel", "ProfilerStep#0", "NVIDIA H100"]
    return Planted(path, [(kind, text) for kind, where, text in secrets], kept)
