"""Build small Kineto-shaped traces in tests, with times chosen so figures can be checked by hand.

All times are microseconds. The host process is pid 100, its main thread tid 100; GPU events go on
pid 0 (the device) with tid = stream, as Kineto writes them. `Synth19` writes torch 1.9's spelling.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson

PID = 100
MAIN = 100
H200 = {"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150_000_000_000, "computeMajor": 9, "computeMinor": 0}


class Synth:
    def __init__(self, *, devices: list[dict] | None = None):
        self.events: list[dict[str, Any]] = []
        self.devices = devices if devices is not None else [H200]
        self._corr = 1000
        self._ext = 1
        self.metadata: dict[str, Any] = {}

    def _x(self, cat: str, name: str, ts: float, dur: float, *, pid: Any = PID, tid: Any = MAIN, args: dict | None = None) -> dict:
        e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
             "args": {"External id": self._ext, **(args or {})}}
        self._ext += 1
        self.events.append(e)
        return e

    def step(self, n: int, ts: float, dur: float) -> None:
        self._x("user_annotation", f"ProfilerStep#{n}", ts, dur)

    def region(self, label: str, ts: float, dur: float, *, tid: Any = MAIN) -> None:
        self._x("user_annotation", label, ts, dur, tid=tid)

    def op(self, name: str, ts: float, dur: float, *, tid: Any = MAIN, seq: int | None = None,
           stack: str | None = None, dims: list | None = None, types: list[str] | None = None) -> None:
        args: dict[str, Any] = {} if seq is None else {"Sequence number": seq, "Fwd thread id": 0}
        if stack is not None:
            args["Call stack"] = stack  # innermost frame first, `;`-separated, as torch 1.9 writes it
        if dims is not None:  # record_shapes: the inputs' dims and types, as torch writes them
            args["Input Dims"] = dims
            args["Input type"] = types if types is not None else ["float"] * len(dims)
        self._x("cpu_op", name, ts, dur, tid=tid, args=args)

    def memory(self, ts: float, nbytes: int, total: int, *, tid: Any = MAIN, device_type: int = 0) -> None:
        """A `[memory]` instant event (profile_memory): `nbytes` allocated (negative: freed), `total`
        the device's allocated total after it; device type 0 is the host, 1 CUDA."""
        self.events.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": PID, "tid": tid,
                            "ts": ts, "args": {"Total Reserved": total, "Total Allocated": total, "Bytes": nbytes,
                                               "Addr": 1, "Device Id": 0 if device_type else -1,
                                               "Device Type": device_type}})

    def gpu_step(self, n: int, ts: float, dur: float, *, stream: int = 7) -> None:
        """`ProfilerStep#n` drawn on a GPU stream (`gpu_user_annotation`): the GPU span of its work."""
        self._x("gpu_user_annotation", f"ProfilerStep#{n}", ts, dur, pid=0, tid=stream)

    def frame(self, path: str, line: int, func: str, ts: float, dur: float, *, tid: Any = MAIN) -> None:
        self._x("python_function", f"{path}({line}): {func}", ts, dur, tid=tid)

    def launch(self, ts: float, gpu_ts: float, gpu_dur: float, *, tid: Any = MAIN, stream: int = 7,
               kind: str = "kernel", name: str | None = None, nbytes: int | None = None,
               linked: bool = True) -> int:
        """A runtime call at `ts` (10 µs long) and the GPU event it launched."""
        self._corr += 1
        corr = self._corr
        runtime = {"kernel": "cudaLaunchKernel", "gpu_memcpy": "cudaMemcpyAsync", "gpu_memset": "cudaMemsetAsync"}[kind]
        if linked:
            self._x("cuda_runtime", runtime, ts, 10, tid=tid, args={"correlation": corr, "cbid": 211})
        default = {"kernel": "void gemm_kernel<float>()", "gpu_memcpy": "Memcpy HtoD (Pageable -> Device)",
                   "gpu_memset": "Memset (Device)"}[kind]
        args: dict[str, Any] = {"device": 0, "stream": stream, "correlation": corr}
        if nbytes is not None:
            args["bytes"] = nbytes
        self._x(kind, name or default, gpu_ts, gpu_dur, pid=0, tid=stream, args=args)
        return corr

    def sync(self, ts: float, dur: float, *, tid: Any = MAIN, name: str = "cudaStreamSynchronize") -> None:
        self._corr += 1
        self._x("cuda_runtime", name, ts, dur, tid=tid, args={"correlation": self._corr})

    def runtime(self, name: str, ts: float, dur: float) -> None:
        self._corr += 1
        self._x("cuda_runtime", name, ts, dur, args={"correlation": self._corr})

    def flow(self, fid: int, start_ts: float, end_ts: float, *, start_tid: Any = MAIN, end_tid: Any = MAIN) -> None:
        self.events.append({"ph": "s", "id": fid, "pid": PID, "tid": start_tid, "ts": start_ts, "cat": "fwdbwd", "name": "fwdbwd"})
        self.events.append({"ph": "f", "id": fid, "pid": PID, "tid": end_tid, "ts": end_ts, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"})

    def doc(self) -> dict:
        meta = [{"name": "process_name", "ph": "M", "ts": 0, "pid": PID, "tid": 0, "args": {"name": "python"}}]
        return {"schemaVersion": 1, "deviceProperties": self.devices, **self.metadata,
                "traceEvents": meta + self.events, "traceName": "synthetic.json"}

    def write(self, path: Path, *, gz: bool = False) -> Path:
        data = orjson.dumps(self.doc(), option=orjson.OPT_INDENT_2)
        path.parent.mkdir(parents=True, exist_ok=True)
        if gz:
            with gzip.open(path, "wb") as f:
                f.write(data)
        else:
            path.write_bytes(data)
        return path


LIB_1_9 = "/usr/lib/python3.7/site-packages/torch"


def call_stack_1_9(line: int, library: str = "nn/modules/module.py(1051): _call_impl") -> str:
    """A 1.9-era `Call stack` arg: a library frame under statement `line` of train.py."""
    return f"{LIB_1_9}/{library};train.py({line}): <module>"


class Synth19(Synth):
    """torch 1.9's spelling: `Operator` / `Runtime` / `Kernel` / `Memcpy` categories (step markers and
    record_function labels are operators too), host tids written as strings, devices' as
    `stream N`, and no `External id` on events."""

    CATEGORIES = {"cpu_op": "Operator", "user_annotation": "Operator", "cuda_runtime": "Runtime",
                  "kernel": "Kernel", "gpu_memcpy": "Memcpy", "gpu_memset": "Memset"}

    def _x(self, cat: str, name: str, ts: float, dur: float, *, pid: Any = PID, tid: Any = MAIN,
           args: dict | None = None) -> dict:
        e = super()._x(cat, name, ts, dur, pid=pid, tid=tid, args=args)
        e["cat"] = self.CATEGORIES.get(cat, cat)
        e["tid"] = f"stream {tid}" if pid == 0 else str(tid)
        del e["args"]["External id"]
        return e


def run_folder(tmp: Path, synth: Synth, *, files: dict[str, str] | None = None,
               scenario: dict | None = None) -> Path:
    """A run folder like the agent writes: trace.json, files.json (root = tmp/ws), scenario.json."""
    run = tmp / "run"
    run.mkdir(parents=True, exist_ok=True)
    synth.write(run / "trace.json")
    root = tmp / "ws"
    root.mkdir(exist_ok=True)
    table = {"root": str(root), "files": files or {"f0": "train.py", "f1": "model/net.py"}}
    (run / "files.json").write_bytes(orjson.dumps(table))
    if scenario is not None:
        (run / "scenario.json").write_bytes(orjson.dumps(scenario))
    return run
