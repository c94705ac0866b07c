"""What the run was: machine, torch build, devices, collection support — beside every trace.

A trace describes the machine it ran on (guide §13), so every figure Stepscope shows carries this
record. Collected in the user's interpreter, where torch is; nothing here initialises CUDA that the
program did not already initialise, except `cuda_device_names`, called after the window.
"""

from __future__ import annotations

import os
import platform
import re
from typing import Any

import torch
from torch.profiler import ProfilerActivity, supported_activities


def host_cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_collection_supported() -> bool:
    try:
        return ProfilerActivity.CUDA in supported_activities()
    except Exception:
        return False


def accelerator_kind() -> str | None:
    if torch.cuda.is_available():
        return "rocm" if getattr(torch.version, "hip", None) else "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        return "xpu"
    return None


def cuda_device_names() -> list[str]:
    if not torch.cuda.is_available():
        return []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


def driver_version() -> str | None:
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as f:
            first = f.readline()
        match = re.search(r"\b(\d{2,4}\.\d+(?:\.\d+)?)\b", first)
        return match.group(1) if match else None
    except OSError:
        return None


def machine_record() -> dict[str, Any]:
    names = cuda_device_names()
    return {
        "host": platform.node(),
        "os": f"{platform.system()} {platform.release()}",
        "cpu": host_cpu(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda_build": getattr(torch.version, "cuda", None),
        "hip_build": getattr(torch.version, "hip", None),
        "accelerator": accelerator_kind(),
        "devices": names,
        "device": names[0] if names else "CPU only",
        "driver": driver_version() if names else None,
        "gpu_collection": gpu_collection_supported(),
    }


def program_state() -> dict[str, Any]:
    """State the program left behind that says what the step was (after the window)."""
    state: dict[str, Any] = {
        "default_dtype": str(torch.get_default_dtype()).replace("torch.", ""),
        "grad_enabled": torch.is_grad_enabled(),
        "num_threads": torch.get_num_threads(),
    }
    return state
