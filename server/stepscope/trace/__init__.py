"""Kineto / torch.profiler traces read into one compact columnar model.

Public API: `read_trace(path) -> Trace`, `Trace`, `Kind`. See docs/trace-engine.md.
"""

from .model import Flows, Kind, Memory, Trace
from .reader import read_trace

__all__ = ["Flows", "Kind", "Memory", "Trace", "read_trace"]
