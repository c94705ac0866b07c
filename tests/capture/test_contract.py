"""The run contract (agent/protocol.py) on its own, no torch: file names and labels written and read
back, the spec and the events through JSON, and what each refuses."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepscope.agent import protocol
from stepscope.agent.protocol import (
    AgentSpec, Distributed, Entry, FailedEvent, FinishedEvent, ProfileOptions, Schedule, SpecError, StartedEvent,
    StepEvent, Target, WindowCompleteEvent,
)

RUN_FILES = (protocol.SPEC, protocol.TRACE, protocol.TRACE + ".gz", protocol.FILES, protocol.SCENARIO,
             protocol.PROGRAM_LOG, protocol.REPORT, protocol.STATUS)


# -- file names ---------------------------------------------------------------------------------
@given(st.sampled_from(RUN_FILES), st.none() | st.integers(0, 4096), st.integers(0, 50))
def test_every_run_file_name_reads_back_as_written(name: str, rank: int | None, cycle: int):
    written = protocol.run_file_name(name, rank, cycle)
    assert protocol.parse_run_file_name(written) == protocol.RunFileName(name, rank, cycle)
    assert protocol.parse_run_file_name(written).is_trace == name.startswith("trace")


def test_rank_and_cycle_suffixes_are_the_documented_ones():
    assert protocol.run_file_name("trace.json") == "trace.json"
    assert protocol.run_file_name("trace.json", cycle=1) == "trace-1.json"
    assert protocol.run_file_name("trace.json", 1) == "trace-rank1.json"
    assert protocol.run_file_name("trace.json", 1, 2) == "trace-rank1-2.json"
    assert protocol.run_file_name("program.log", 0) == "program-rank0.log"
    assert protocol.run_file_name("trace.json.gz", 3) == "trace-rank3.json.gz"


# The analysis read a file's rank with this pattern before the contract took the parsing over; every
# name must read back the same rank now (reports of existing run folders and trace folders depend on it).
_PREVIOUS_RANK_PATTERN = re.compile(r"^[^.]*?-rank([0-9]+)(?:-[0-9]+)?\.")


@given(st.text(alphabet="abk-_.0123456789rantcejso", max_size=30))
def test_ranks_read_from_any_file_name_as_before(file_name: str):
    before = _PREVIOUS_RANK_PATTERN.match(file_name)
    assert protocol.parse_run_file_name(file_name).rank == (int(before.group(1)) if before else None)


@pytest.mark.parametrize(("file_name", "rank"), [
    ("worker0.pt.trace.json.gz", None), ("rank-0.Apr_03.pt.trace.json.gz", None), ("sampled_rank-1.json.gz", None),
    ("trace-rank12-1.json", 12), ("my-job-rank3.pt.trace.json", 3), ("-rank1.json", 1), ("trace-rank1", None),
])
def test_ranks_in_names_of_traces_not_written_by_stepscope(file_name: str, rank: int | None):
    assert protocol.parse_run_file_name(file_name).rank == rank


def test_records_are_never_traces():
    assert not any(protocol.parse_run_file_name(name).is_trace for name in protocol.RECORDS)
    assert not protocol.parse_run_file_name("traces.json").is_trace
    assert not protocol.parse_run_file_name("trace.json.123.partial").is_trace


# -- labels -------------------------------------------------------------------------------------
@given(st.from_regex(r"[A-Za-z0-9_]+", fullmatch=True), st.integers(1, 10**6))
def test_labels_read_back_as_written(file_id: str, line: int):
    assert protocol.parse_label(protocol.region_label(file_id, line)) == protocol.Label(file_id, line, False)
    assert protocol.parse_label(protocol.fetch_label(file_id, line)) == protocol.Label(file_id, line, True)


@pytest.mark.parametrize("name", [
    "ss:f0:12\n", "ss:f0:", "ss:f0:12:nxt", "ss:f0:12:next:x", "ss:/home/me/x.py:1", "ss:f0:١٢", "xss:f0:1",
    "ss:f-0:1", "ss:cost", "aten::mm",
])
def test_anything_else_is_not_a_label(name: str):
    assert protocol.parse_label(name) is None


# -- the spec -----------------------------------------------------------------------------------
def _spec(**changes) -> AgentSpec:
    fields = dict(
        mode="profile", run_dir="/ws/.stepscope/runs/r", root="/ws", entry=Entry("script", path="/ws/train.py"),
        argv=("--steps", "3"), target=Target("/ws/train.py", line=12), scenario={"note": None},
        distributed=Distributed(world_size=None, launcher="torchrun --nproc-per-node 2"),
        profile=ProfileOptions(schedule=Schedule(wait=0, warmup=1, active=3), shapes=True, bound_regions=False),
    )
    return AgentSpec(**{**fields, **changes})


def test_the_spec_goes_through_json_unchanged():
    spec = _spec()
    doc = json.loads(json.dumps(spec.to_json()))
    assert doc["schema_version"] == protocol.SCHEMA_VERSION and doc["mode"] == "profile"
    assert AgentSpec.from_json(doc) == spec
    module = _spec(entry=Entry("module", name="pkg.train"), target=Target("/ws/pkg/train.py", function="step"),
                   distributed=None)
    assert AgentSpec.from_json(json.loads(json.dumps(module.to_json()))) == module


def _broken(change) -> dict:
    doc = json.loads(json.dumps(_spec().to_json()))
    change(doc)
    return doc


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.pop("profile"), "spec: missing field 'profile'"),
    (lambda d: d["profile"].pop("depth"), "spec.profile: missing field 'depth'"),
    (lambda d: d.update(schema_version=protocol.SCHEMA_VERSION + 1),
     f"schema version {protocol.SCHEMA_VERSION + 1}, this agent reads version {protocol.SCHEMA_VERSION}"),
    (lambda d: d["distributed"].update(world_size="2"), "spec.distributed.world_size must be int, got str"),
    (lambda d: d.update(mode="trace"), "mode 'trace' is not one of profile, measure"),
    (lambda d: d.update(mode="measure"), "mode 'measure' needs its measure options"),
    (lambda d: d.update(measure={"warmup": 1, "passes": 0, "seed": 0, "value": None}),
     "spec.measure.passes must be an integer ≥ 1"),
    (lambda d: d.update(profile=None), "mode 'profile' needs its profile options"),
    (lambda d: d["profile"]["schedule"].update(active=0), "spec.profile.schedule.active must be an integer ≥ 1"),
    (lambda d: d["profile"].update(depth=True), "spec.profile.depth must be int, got bool"),
    (lambda d: d["profile"].update(shapes=1), "spec.profile.shapes must be bool, got int"),
    (lambda d: d.update(argv="--steps 3"), "spec.argv must be a list, got str"),
    (lambda d: d["target"].update(function="step"), "target: exactly one of line and function"),
    (lambda d: d["entry"].update(kind="notebook"), "entry: a script needs a path, a module a name"),
    (lambda d: d.update(extra=1), "spec: unknown field 'extra'"),
])
def test_a_spec_that_breaks_the_contract_is_refused_in_one_line(change, message: str):
    with pytest.raises(SpecError) as refused:
        AgentSpec.from_json(_broken(change))
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_the_options_have_one_set_of_defaults():
    # the CLI's documented defaults (PRODUCT.md): --wait 1 --warmup 2 --active 5 --repeat 1 --depth 2
    assert dataclasses.asdict(ProfileOptions()) == {
        "schedule": {"wait": 1, "warmup": 2, "active": 5, "repeat": 1}, "depth": 2, "line_regions": True,
        "bound_regions": True, "light": False, "shapes": False, "stack": False, "memory": False, "compile_records": True, "cpu_only": False,
        "run_to_end": False}


@pytest.mark.parametrize(("index", "phase"), [(0, "wait"), (1, "warmup"), (2, "warmup"), (3, "active"),
                                               (7, "active"), (8, "wait"), (11, "active"), (16, "after")])
def test_schedule_phases(index: int, phase: str):
    assert Schedule(wait=1, warmup=2, active=5, repeat=2).phase(index) == phase


# -- events -------------------------------------------------------------------------------------
EVENTS = [StartedEvent(pid=42, host="node7", rank=1, world_size=16, node=0, restart=2), StartedEvent(pid=42),
          StepEvent(index=3, phase="warmup"), WindowCompleteEvent(active_steps=5, traces=("/r/trace.json",)),
          FailedEvent(reason="boom", exit=3, at=1790000000.25),
          FinishedEvent(exit=0, traces=("/r/trace.json", "/r/trace-1.json"))]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.name)
def test_events_go_through_one_line_of_json_unchanged(event):
    line = protocol.encode_event(event)
    assert line.endswith("\n") and line.count("\n") == 1
    assert json.loads(line)["event"] == event.name
    assert protocol.decode_event(line) == event


def test_every_event_type_has_a_name_and_is_documented():
    assert {e.name for e in EVENTS} == set(protocol.EVENT_TYPES)
    for name in protocol.EVENT_TYPES:
        assert f'"{name}"' in protocol.__doc__


@pytest.mark.parametrize("line", [
    "not json", "[]", '{"event": "unknown", "x": 1}', '{"event": "step", "index": "3", "phase": "active"}',
    '{"event": "failed", "reason": "x"}', '{"index": 3}', '{"event": "step", "index": 3, "phase": "a", "more": 1}',
])
def test_a_line_that_is_no_event_of_the_contract_is_skipped(line: str):
    assert protocol.decode_event(line) is None


def test_the_events_pipe_is_taken_out_of_the_environment(tmp_path):
    import os

    read_fd, write_fd = os.pipe()
    environ = {protocol.EVENTS_FD_ENV: str(write_fd)}
    sink = protocol.open_event_sink(environ)
    assert protocol.EVENTS_FD_ENV not in environ  # the program's children never inherit it
    sink.send(StepEvent(index=0, phase="wait"))
    sink.close()
    sink.send(StepEvent(index=1, phase="wait"))  # after the reader went away: dropped, no error
    with os.fdopen(read_fd) as f:
        assert [protocol.decode_event(line) for line in f] == [StepEvent(index=0, phase="wait")]
    assert isinstance(protocol.open_event_sink({}), protocol.NullSink)


def test_a_launched_agents_events_are_appended_to_its_rank_file(tmp_path):
    from stepscope.capture.launchers.events import EventFiles

    environ: dict = {}
    sink = protocol.open_event_sink(environ, run_dir=str(tmp_path), rank=3)
    sink.send(StartedEvent(pid=1, rank=3))
    files = EventFiles(tmp_path)
    assert files.poll() == [(3, StartedEvent(pid=1, rank=3))]
    sink.close()
    # a restarted group's agent of the same rank appends; nothing written before is lost or read twice
    again = protocol.open_event_sink(environ, run_dir=str(tmp_path), rank=3)
    again.send(StartedEvent(pid=2, rank=3, restart=1))
    again.close()
    assert files.poll() == [(3, StartedEvent(pid=2, rank=3, restart=1))]
    assert (tmp_path / "events-rank3.jsonl").read_text().count("\n") == 2
    # a line still being written is read once it is whole; a file that appears later is found
    with open(tmp_path / "events-rank0.jsonl", "w") as f:
        f.write(protocol.encode_event(StepEvent(index=0, phase="wait")) + '{"event": "step", "ind')
    assert files.poll() == [(0, StepEvent(index=0, phase="wait"))]
    with open(tmp_path / "events-rank0.jsonl", "a") as f:
        f.write('ex": 1, "phase": "warmup"}\nnot an event\n')
    assert files.poll() == [(0, StepEvent(index=1, phase="warmup"))]
    assert files.poll() == []


def test_a_measure_runs_later_process_writes_events_of_its_own(tmp_path):
    sink = protocol.open_event_sink({}, run_dir=str(tmp_path), rank=1, cycle=2)
    sink.send(StepEvent(index=0, phase="wait"))
    sink.close()
    assert [p.name for p in tmp_path.iterdir()] == ["events-rank1-2.jsonl"]


def test_an_unwritable_events_file_drops_events_and_the_program_goes_on(tmp_path):
    sink = protocol.open_event_sink({}, run_dir=str(tmp_path / "gone"), rank=0)
    sink.send(StepEvent(index=0, phase="wait"))
    sink.close()


# -- the launcher's environment -----------------------------------------------------------------
@pytest.mark.parametrize(("environ", "expected"), [
    # torchrun's worker environment
    ({"RANK": "5", "LOCAL_RANK": "1", "GROUP_RANK": "2", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "2",
      "TORCHELASTIC_RESTART_COUNT": "0"}, protocol.Placement("torchrun", 5, 8, 1, 2, 0)),
    # srun's task environment (as srun sets it: no RANK, no WORLD_SIZE)
    ({"SLURM_PROCID": "3", "SLURM_LOCALID": "1", "SLURM_NODEID": "1", "SLURM_NTASKS": "4", "SLURM_JOB_ID": "77",
      "SLURM_STEP_NUM_TASKS": "4"}, protocol.Placement("srun", 3, 4, 1, 1, 0)),
    # torchrun started by srun, one task per node: the workers' ranks are torchrun's
    ({"SLURM_PROCID": "1", "SLURM_NODEID": "1", "SLURM_NTASKS": "2", "RANK": "6", "LOCAL_RANK": "2",
      "GROUP_RANK": "1", "WORLD_SIZE": "8", "TORCHELASTIC_RESTART_COUNT": "1"}, protocol.Placement("torchrun", 6, 8, 2, 1, 1)),
    ({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_SIZE": "4"},
     protocol.Placement("mpirun (Open MPI)", 2, 4, 0, None, 0)),
    # deepspeed's launcher, as it sets a worker's environment: torchrun's variables and its node as CROSS_RANK
    ({"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "CROSS_RANK": "1", "CROSS_SIZE": "2", "LOCAL_SIZE": "2",
      "MASTER_ADDR": "10.0.0.1"}, protocol.Placement("deepspeed", 3, 4, 1, 1, 0)),
    ({"RANK": ""}, None),
    ({"PATH": "/usr/bin"}, None),
])
def test_the_rank_comes_from_the_launchers_environment(environ: dict, expected):
    assert protocol.placement(environ) == expected


@pytest.mark.parametrize(("environ", "message"), [
    ({"RANK": "one"}, "RANK='one' set by torchrun is not a whole number"),
    ({"SLURM_PROCID": "0", "SLURM_NTASKS": "x"}, "SLURM_NTASKS='x' set by srun is not a whole number"),
    ({"RANK": "-1"}, "RANK='-1' set by torchrun is negative"),
])
def test_a_launcher_variable_that_is_no_number_is_refused_in_one_line(environ: dict, message: str):
    with pytest.raises(protocol.PlacementError, match=re.escape(message)):
        protocol.placement(environ)
