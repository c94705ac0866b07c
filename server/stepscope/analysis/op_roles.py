"""What an operator's time is, by its name: work to examine, or something the host waits on or passes
through (guide §9: a hypothesis must fit its evidence).

    op_role("aten::mm") == "compute"
    op_role("aten::copy_") == "transfer"

Roles:
- `compute`: an operator whose own time is work it does: the only kind `dominant-op` may name as
  an operator to examine before replacing it.
- `transfer`: copies between memories (`.to(device)`, `.cpu()`, `copy_`). Their host time is mostly
  the wait for the copy, and for a pageable copy the wait for the device's earlier work: a host wait
  (sync-in-step, repeated-copy), not an algorithm.
- `wait`: reading a value back (`.item()`, a tensor in an `if`): the host blocks until the device
  has finished everything queued before.
- `collective`: communication between ranks (NCCL, gloo and their c10d / `record_param_comms`
  wrappers): their time includes waiting for the other ranks (rank-imbalance).
- `wrapper`: a region around other work (a compiled region, a module or optimizer label, an autograd
  node's evaluation, a DataLoader's `next`): its self time is time its children did not record.

Invariant: the roles are decided by name only, the same way for every trace; an unknown name is
`compute`.
"""

from __future__ import annotations

import re

ROLES = ("compute", "transfer", "wait", "collective", "wrapper")

_TRANSFER = frozenset({
    "aten::copy_", "aten::_to_copy", "aten::to", "aten::_copy_from", "aten::_copy_from_and_resize", "aten::cpu",
    "aten::cuda", "aten::pin_memory", "aten::_pin_memory", "aten::to_dense", "aten::_to_cpu",
})
_WAIT = frozenset({"aten::_local_scalar_dense", "aten::item", "aten::is_nonzero", "aten::_assert_async"})
_COLLECTIVE = re.compile(
    r"^(record_param_comms|c10d::|c10d_functional::|_c10d_functional::|(nccl|rccl|gloo|mpi|ucc|hccl|xccl):|"
    r"ProcessGroup|torch\.distributed\.)", re.IGNORECASE)
_WRAPPER = re.compile(
    r"^(Torch-Compiled Region|CompiledFunction|CompiledFxGraph|TorchDynamo Cache Lookup|## .* ##$|"
    r"autograd::engine::evaluate_function: |Optimizer\.(step|zero_grad)#|enumerate\(DataLoader\)|ProfilerStep#|"
    r"nn\.Module: |DistributedDataParallel\.|FullyShardedDataParallel\.|.+\.forward$|ss:)")


def op_role(name: str) -> str:
    """The role of an operator named `name` (see the module's docstring)."""
    if name in _TRANSFER:
        return "transfer"
    if name in _WAIT:
        return "wait"
    if _COLLECTIVE.match(name):
        return "collective"
    if _WRAPPER.match(name):
        return "wrapper"
    return "compute"
