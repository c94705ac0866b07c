"""What the step is made of, observed once from inside the running program.

Looked at on the first active step only, so the cost stays out of every other step:
- the batch the loop's iterator yielded: tensor shapes, dtypes and devices, the batch size;
- the data source: a DataLoader (workers, batch size, pinning) or something else;
- the models visible in the loop's frame: train/eval mode, parameter dtype and device, whether
  torch.compile wraps them; functions wrapped by torch.compile visible there;
- the modes in force while the step runs: autocast, grad, inference mode;
- the torch.distributed process group, when the program initialised one.
Nothing here holds a reference to a tensor after it returns (shapes only).
"""

from __future__ import annotations

import types
from typing import Any

import torch

_MAX_LEAVES = 16


def _leaves(obj: Any, out: list, depth: int = 0) -> None:
    if len(out) >= _MAX_LEAVES or depth > 3:
        return
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _leaves(v, out, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _leaves(v, out, depth + 1)


def describe_batch(item: Any) -> dict[str, Any]:
    tensors: list[torch.Tensor] = []
    _leaves(item, tensors)
    shapes = [{"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""), "device": str(t.device)}
              for t in tensors]
    batch = tensors[0].shape[0] if tensors and tensors[0].dim() > 0 else None
    return {"tensors": shapes, "batch_size": int(batch) if batch is not None else None,
            "type": type(item).__name__}


def describe_source(iterable: Any) -> dict[str, Any]:
    """The step loop's data source. `prepared_ahead`: the batches a DataLoader's workers keep ready
    (num_workers x prefetch_factor; 0 without workers), as far as a pause in the loop lets them get
    ahead. `for i, batch in enumerate(loader)` is described by the loader's iterator."""
    from torch.utils.data import DataLoader
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    if type(iterable) is enumerate:
        inner = iterable.__reduce__()[1][0]  # (enumerate, (iterator, start)): the iterator it numbers
        described = describe_source(inner)
        return {**described, "through": "enumerate"} if described["kind"] == "DataLoader" else {"kind": "enumerate"}
    if isinstance(iterable, DataLoader):
        workers = iterable.num_workers
        return {"kind": "DataLoader", "num_workers": workers,
                "batch_size": iterable.batch_size, "pin_memory": iterable.pin_memory,
                "persistent_workers": getattr(iterable, "persistent_workers", False),
                "multiprocessing_context": str(iterable.multiprocessing_context) if workers else None,
                "prefetch_factor": iterable.prefetch_factor if workers else None,
                "prepared_ahead": workers * (iterable.prefetch_factor or 2) if workers else 0,
                "dataset": type(iterable.dataset).__name__}
    if isinstance(iterable, _BaseDataLoaderIter):  # a DataLoader's iterator (torch's own attributes)
        workers = getattr(iterable, "_num_workers", 0)
        prefetch = getattr(iterable, "_prefetch_factor", None) if workers else None
        return {"kind": "DataLoader", "num_workers": workers,
                "batch_size": getattr(getattr(iterable, "_index_sampler", None), "batch_size", None),
                "pin_memory": getattr(iterable, "_pin_memory", None),
                "prefetch_factor": prefetch, "prepared_ahead": workers * (prefetch or 2) if workers else 0,
                "dataset": type(getattr(iterable, "_dataset", None)).__name__}
    return {"kind": type(iterable).__name__}


def _compiled_module(module: torch.nn.Module) -> torch.nn.Module | None:
    """The module `torch.compile` wraps (the module itself when compiled in place), else None."""
    wrapped = getattr(module, "_orig_mod", None)
    if isinstance(wrapped, torch.nn.Module) and type(module).__name__ == "OptimizedModule":
        return wrapped
    if getattr(module, "_compiled_call_impl", None) is not None:  # `Module.compile()` (torch >= 2.2)
        return module
    return None


def describe_models(frame_locals: dict[str, Any]) -> list[dict[str, Any]]:
    models = []
    for name, value in list(frame_locals.items()):
        if isinstance(value, torch.nn.Module):
            first = next(value.parameters(), None)
            compiled = _compiled_module(value)
            models.append({
                # a compiled model is named by the model it wraps, not by dynamo's wrapper class
                "name": name, "type": type(compiled if compiled is not None else value).__name__,
                "training": value.training,
                "dtype": str(first.dtype).replace("torch.", "") if first is not None else None,
                "device": str(first.device) if first is not None else None,
                "compiled": compiled is not None,
            })
    return models


def compiled_functions(*namespaces: dict[str, Any]) -> list[str]:
    """Names bound to functions wrapped by `torch.compile` (not `torch.compiler.disable`, which
    marks its wrapper the same way but with `_torchdynamo_disable`)."""
    names: list[str] = []
    for namespace in namespaces:
        for name, value in list(namespace.items()):
            # plain functions only: reading attributes of arbitrary objects could run their code
            if (isinstance(value, types.FunctionType)
                    and getattr(value, "_torchdynamo_orig_callable", None) is not None
                    and not getattr(value, "_torchdynamo_disable", False) and name not in names):
                names.append(name)
    return names


def describe_modes() -> dict[str, Any]:
    modes: dict[str, Any] = {"grad_enabled": torch.is_grad_enabled(),
                             "inference_mode": torch.is_inference_mode_enabled()}
    try:
        modes["autocast_cuda"] = torch.is_autocast_enabled("cuda")
        modes["autocast_cpu"] = torch.is_autocast_enabled("cpu")
    except TypeError:  # torch < 2.4 takes no device argument
        modes["autocast_cuda"] = torch.is_autocast_enabled()
        modes["autocast_cpu"] = torch.is_autocast_cpu_enabled()
    return modes


def describe_process_group() -> dict[str, Any] | None:
    """Backend, rank and world size of the default process group; None when there is none."""
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return {"backend": str(dist.get_backend()), "rank": dist.get_rank(), "world_size": dist.get_world_size()}
