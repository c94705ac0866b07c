"""Run folders are never reused (no torch): a name taken by an earlier run, even in the same second,
gives another name; the name keeps its random part; and the search for a free name ends."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stepscope import workspace
from stepscope.errors import REFUSED, StepscopeError


@pytest.fixture
def same_second(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workspace, "_utc_stamp", lambda: "20261201T120000Z")


def _random_parts(monkeypatch: pytest.MonkeyPatch, parts: list[str]) -> list[str]:
    """Make the random part of run names come from `parts`, in order; drawing more fails the test."""
    drawn: list[str] = []

    def token_hex(nbytes: int) -> str:
        assert len(drawn) < len(parts), f"drew more random parts than the test allows ({drawn})"
        drawn.append(parts[len(drawn)])
        return drawn[-1]

    monkeypatch.setattr(workspace.secrets, "token_hex", token_hex)
    return drawn


def test_a_name_collision_gives_a_new_folder_and_leaves_the_earlier_run_alone(
        tmp_path: Path, same_second: None, monkeypatch: pytest.MonkeyPatch):
    drawn = _random_parts(monkeypatch, ["ab12", "ab12", "cd34"])
    first = workspace.new_run(tmp_path, "train")
    (first.path / "trace.json").write_text("earlier run")
    second = workspace.new_run(tmp_path, "train")
    assert first.name == "20261201T120000Z-train-ab12"
    assert second.name == "20261201T120000Z-train-cd34"  # the taken name was not reused
    assert drawn == ["ab12", "ab12", "cd34"]
    assert (first.path / "trace.json").read_text() == "earlier run"
    assert list(second.path.iterdir()) == []


def test_run_names_carry_the_time_the_label_and_a_random_part(tmp_path: Path):
    names = {workspace.new_run(tmp_path, "my train.py").name for _ in range(20)}
    assert len(names) == 20
    assert all(re.fullmatch(r"\d{8}T\d{6}Z-my-train-py-[0-9a-f]{4}", name) for name in names), names


def test_when_every_name_is_taken_the_search_ends_with_one_line(
        tmp_path: Path, same_second: None, monkeypatch: pytest.MonkeyPatch):
    _random_parts(monkeypatch, ["ab12"] * (workspace.NAME_ATTEMPTS + 1))
    workspace.new_run(tmp_path, "train")
    with pytest.raises(StepscopeError) as refused:
        workspace.new_run(tmp_path, "train")
    assert refused.value.exit_code == REFUSED
    assert str(refused.value).startswith("no free run folder name in ")
    assert len(list((tmp_path / ".stepscope" / "runs").iterdir())) == 1


def test_an_output_folder_that_exists_is_refused_and_left_untouched(tmp_path: Path):
    out = tmp_path / "results"
    out.mkdir()
    (out / "keep.txt").write_text("earlier work")
    with pytest.raises(StepscopeError, match="output folder already exists, refusing to overwrite"):
        workspace.new_run(tmp_path, "train", out=out)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    created = workspace.new_run(tmp_path, "train", out=tmp_path / "new" / "run")
    assert created.path == (tmp_path / "new" / "run").resolve() and list(created.path.iterdir()) == []
