"""The run's own records of a launched run, made from what each rank wrote.

Each rank's agent writes only files named for its rank (scenario-rank<r>.json, files-rank<r>.json,
trace-rank<r>.json). Which ranks there were is read from the run folder (their records) and from the
ranks the capture side heard of (their events), not assumed from a world size: under a launcher it
is known only once the ranks report. Once every rank has ended, the capture side writes from them:
- scenario.json: the main record is the lowest rank's (rank 0's in a run that went well), with its
  `distributed` section extended by `ranks`: how each rank ended, its traces, steps and start-up,
  and the name of its own record;
- files.json: the union of the ranks' file tables when they agree (they do when every rank imports
  the same workspace files in the same order), else the lowest rank's. The analysis reads each
  rank's own table and record beside its trace either way.
Per-rank files are never modified. Unreadable or missing records are skipped (a rank that was
stopped or crashed may have written none); with no record at all, no scenario.json is written.
A measure run's process k > 0 (its ranks write scenario-rank<r>-<k>.json) gets scenario-<k>.json
the same way; files.json is the first process's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import jsonio, workspace
from ..agent import protocol


def _read(path: Path) -> dict[str, Any] | None:
    try:
        doc = jsonio.read_json(path)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _rank_summary(rank: int, ending: dict[str, Any], record: dict[str, Any] | None, process: int) -> dict[str, Any]:
    summary: dict[str, Any] = {"rank": rank, **ending,
                               "record": protocol.run_file_name(protocol.SCENARIO, rank, process) if record else None}
    if record is not None:
        startup = record.get("startup") or {}
        summary.update(
            traces=record.get("traces", []), steps_run=record.get("steps_run"),
            active_steps_recorded=record.get("active_steps_recorded"),
            window_complete=record.get("window_complete"), to_first_step_ms=startup.get("to_first_step_ms"),
            process_group=(record.get("distributed") or {}).get("process_group"),
            node=(record.get("distributed") or {}).get("node"), host=(record.get("machine") or {}).get("host"),
        )
    return summary


def _merged_file_table(tables: list[dict[str, Any]]) -> dict[str, Any]:
    """The union of the tables when no file id means two paths (nor a path two ids), else the first."""
    merged: dict[str, str] = {}
    for table in tables:
        for file_id, rel in (table.get("files") or {}).items():
            if merged.setdefault(file_id, rel) != rel:
                return tables[0]
    if len(set(merged.values())) != len(merged):
        return tables[0]
    return {**tables[0], "files": merged}


def ranks_in(run: workspace.RunFolder, process: int = 0) -> list[int]:
    """The ranks that wrote a scenario record into the run folder (in `process`), in order."""
    found = set()
    for path in run.path.iterdir():
        name = protocol.parse_run_file_name(path.name)
        if name.name == protocol.SCENARIO and name.rank is not None and name.cycle == process:
            found.add(name.rank)
    return sorted(found)


NOT_HEARD = {"exit": None, "reason": "no events were read from this rank"}


def threads_note(run: workspace.RunFolder, process: int = 0) -> str | None:
    """What to say when ranks share a machine without an accelerator and OMP_NUM_THREADS was not set
    for them (deepspeed's launcher, srun and mpirun leave it; torchrun and accelerate launch set 1):
    each rank's torch then takes a thread per core, so the ranks run more threads than the machine
    has cores, which slows a step that computes on the CPU (a DDP step on 2 cores under deepspeed:
    36 ms/step, 4.8 with OMP_NUM_THREADS=1). None when no machine is shared so."""
    by_host: dict[str, list[dict[str, Any]]] = {}
    for rank in ranks_in(run, process):
        record = _read(run.file(protocol.run_file_name(protocol.SCENARIO, rank, process))) or {}
        machine, distributed = record.get("machine") or {}, record.get("distributed") or {}
        if machine.get("host") and not machine.get("accelerator") and distributed.get("omp_num_threads") is None:
            by_host.setdefault(machine["host"], []).append(machine)
    crowded = sorted((host, machines) for host, machines in by_host.items() if len(machines) > 1)
    if not crowded:
        return None
    host, machines = crowded[0]
    cores = machines[0].get("cpu_count")
    where = f"{len(machines)} ranks on {host}" + (f" ({cores} cores)" if cores else "")
    return (f"OMP_NUM_THREADS was not set for the {where}{' and others' if len(crowded) > 1 else ''}: each rank's "
            "torch takes a thread per core, so the ranks run more threads than there are cores, which slows a step "
            "that computes on the CPU; torchrun and accelerate launch set it to 1 for several ranks on a machine — "
            "set it before Stepscope (OMP_NUM_THREADS=1 stepscope …), and the launcher passes it on")


def write_run_records(run: workspace.RunFolder, world_size: int | None, endings: dict[Any, dict[str, Any]],
                      process: int = 0) -> None:
    """Write scenario.json and files.json of a launched run (of its process `process`: scenario-<k>.json
    only); `endings[r]` is how rank r ended (`exit`, `reason`), as the capture side saw it;
    `world_size`: as the launcher gave it (None: unknown; the ranks found are the world then).
    Nothing is written for a run whose processes had no rank (they wrote the run's own records
    themselves)."""
    ranks = sorted({r for r in endings if r is not None} | set(ranks_in(run, process)) | set(range(world_size or 0)))
    if not ranks:
        return
    records = {r: _read(run.file(protocol.run_file_name(protocol.SCENARIO, r, process))) for r in ranks}
    tables = [t for r in ranks if (t := _read(run.file(protocol.run_file_name(protocol.FILES, r, process))))]
    if tables and process == 0:
        jsonio.write_json(run.file(protocol.FILES), _merged_file_table(tables), replace=True)
    present = [r for r in ranks if records[r] is not None]
    if not present:
        return
    main = dict(records[present[0]])
    main["distributed"] = {
        **(main.get("distributed") or {}),
        "world_size": world_size if world_size is not None else len(ranks),
        "ranks": [_rank_summary(r, endings.get(r, NOT_HEARD), records[r], process) for r in ranks],
    }
    jsonio.write_json(run.file(protocol.run_file_name(protocol.SCENARIO, None, process)), main, replace=False)
