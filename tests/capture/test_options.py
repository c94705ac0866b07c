"""The profile options, declared once: the `stepscope profile` flags, the editor's
`stepscope.profile.*` settings and package.json all come from (or agree with) the one declaration
(no torch)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from stepscope.agent.protocol import ProfileOptions, Schedule
from stepscope.capture import options
from stepscope.capture.options import SettingError
from stepscope.capture.request import RunOptions
from stepscope.errors import UsageError

from ..conftest import REPO, run_stepscope

CLASSES = (ProfileOptions, RunOptions)
JSON_TYPES = {int: "integer", float: "number", bool: "boolean"}


def _parse(*argv: str):
    parser = argparse.ArgumentParser()
    options.add_arguments(parser, *CLASSES)
    return options.from_arguments(parser.parse_args(list(argv)), *CLASSES)


def test_no_flags_give_the_declared_defaults():
    assert _parse() == (ProfileOptions(), RunOptions())


def test_each_flag_sets_its_option():
    profile, run = _parse("--wait", "0", "--warmup", "3", "--active", "7", "--repeat", "2", "--depth", "0",
                          "--no-line-regions", "--all-lines", "--shapes", "--stack", "--memory", "--cpu-only",
                          "--no-compile-records", "--run-to-end", "--timeout", "2.5", "--nproc", "3")
    assert profile == ProfileOptions(schedule=Schedule(wait=0, warmup=3, active=7, repeat=2), depth=0,
                                     line_regions=False, bound_regions=False, shapes=True, stack=True, memory=True,
                                     compile_records=False, cpu_only=True, run_to_end=True)
    assert run == RunOptions(timeout=2.5, nproc=3) and run.timeout_s == 2.5
    assert RunOptions().timeout_s is None  # 0: no limit


def test_the_help_of_each_flag_gives_its_declared_default():
    parser = argparse.ArgumentParser()
    options.add_arguments(parser, *CLASSES)
    text = " ".join(parser.format_help().split())
    for phrase in ("--active ACTIVE steps recorded and measured (default 5)", "(default 0: no limit)",
                   "256 regions or more", "--nproc NPROC start N processes"):
        assert phrase in text


@pytest.mark.parametrize(("argv", "message"), [
    (("--active", "0"), "--active must be a whole number >= 1 (got 0)"),
    (("--wait", "-1"), "--wait must be a whole number >= 0 (got -1)"),
    (("--depth", "-2"), "--depth must be a whole number >= 0 (got -2)"),
    (("--nproc", "0"), "--nproc must be a whole number >= 1 (got 0)"),
    (("--timeout", "-1"), "--timeout must be a number of seconds >= 0 (0: no limit) (got -1.0)"),
    (("--timeout", "inf"), "--timeout must be a number of seconds >= 0 (0: no limit) (got inf)"),
])
def test_a_refused_flag_value_is_one_usage_line_naming_the_flag(argv: tuple[str, ...], message: str):
    with pytest.raises(UsageError) as refused:
        _parse(*argv)
    assert str(refused.value) == message


def test_the_editor_settings_set_the_same_options():
    profile, run = options.from_settings({"wait": 0, "warmup": 3, "active": 7, "repeat": 2, "depth": 0,
                                          "allLines": True, "shapes": True, "stack": False, "memory": True,
                                          "timeout": 30, "nproc": 2}, *CLASSES)
    assert profile == ProfileOptions(schedule=Schedule(wait=0, warmup=3, active=7, repeat=2), depth=0,
                                     bound_regions=False, shapes=True, memory=True)
    assert run == RunOptions(timeout=30, nproc=2)
    # null is the default, as if the setting were not there
    assert options.from_settings({"active": None, "allLines": None}, *CLASSES) == (ProfileOptions(), RunOptions())


@pytest.mark.parametrize(("settings", "message"), [
    ({"active": "x"}, "stepscope.profile.active must be an integer ≥ 1, got 'x'"),
    ({"repeat": True}, "stepscope.profile.repeat must be an integer ≥ 1, got true"),
    ({"warmup": 1.5}, "stepscope.profile.warmup must be an integer ≥ 0, got 1.5"),
    ({"allLines": 1}, "stepscope.profile.allLines must be true or false, got 1"),
    ({"timeout": -1}, "stepscope.profile.timeout must be a number of seconds ≥ 0 (0: no limit), got -1"),
    ({"depth": -1}, "stepscope.profile.depth must be an integer ≥ 0, got -1"),
    ({"cpuOnly": True}, "stepscope.profile.cpuOnly is not a setting; the profile settings are wait, warmup, active, "
                        "repeat, depth, allLines, light, shapes, stack, memory, timeout, nproc"),
])
def test_a_refused_setting_is_one_line_naming_it(settings: dict, message: str):
    with pytest.raises(SettingError) as refused:
        options.from_settings(settings, *CLASSES)
    assert str(refused.value) == message


def test_settings_from_several_sources_later_over_earlier():
    merged = options.merge_settings([("initializationOptions.profile", {"active": 3, "shapes": True}),
                                     ("the command's profile argument", {"active": 2}), ("absent", None)])
    assert merged == {"active": 2, "shapes": True}
    with pytest.raises(SettingError, match=r"^the command's profile argument must be an object of stepscope.profile "
                                           r"settings, got \[1\]$"):
        options.merge_settings([("the command's profile argument", [1])])


def test_package_json_declares_the_same_profile_settings():
    properties = json.loads((REPO / "package.json").read_text())["contributes"]["configuration"]["properties"]
    prefix = f"{options.SECTION}."
    in_package = {key[len(prefix):]: entry for key, entry in properties.items() if key.startswith(prefix)}
    declared = {d.option.setting: d for cls in CLASSES for d in options.declared(cls) if d.option.setting}
    assert sorted(in_package) == sorted(declared)
    for key, d in declared.items():
        entry = in_package[key]
        assert entry["type"] == JSON_TYPES[d.kind], key
        assert entry["default"] == d.user_value(d.default), key
        assert entry.get("minimum") == d.option.minimum, key


def test_a_launcher_module_is_refused_before_anything_runs(workspace: Path):
    r = run_stepscope("profile", "train_cpu.py", "-m", "torch.distributed.run", cwd=workspace)
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "stepscope: torch.distributed.run is a launcher, not the program: give it as the launcher "
        "(--launcher \"python -m torch.distributed.run …\") and the script as the program")
    assert not (workspace / ".stepscope").exists()


def test_package_json_declares_the_same_measure_settings():
    from stepscope.agent.protocol import MeasureOptions
    from stepscope.capture.request import MeasureRunOptions

    properties = json.loads((REPO / "package.json").read_text())["contributes"]["configuration"]["properties"]
    prefix = f"{options.MEASURE_SECTION}."
    in_package = {key[len(prefix):]: entry for key, entry in properties.items() if key.startswith(prefix)}
    declared = {d.option.setting: d for cls in (MeasureOptions, MeasureRunOptions) for d in options.declared(cls)
                if d.option.setting}
    assert sorted(in_package) == sorted(declared) == ["passes", "runs", "seed", "tolerance", "warmup"]
    for key, d in declared.items():
        entry = in_package[key]
        assert entry["type"] == JSON_TYPES[d.kind], key
        assert entry["default"] == d.user_value(d.default), key
        assert entry.get("minimum") == d.option.minimum, key


def test_a_refused_measure_setting_names_its_own_section():
    from stepscope.agent.protocol import MeasureOptions
    from stepscope.capture.request import MeasureRunOptions

    classes = (MeasureOptions, MeasureRunOptions)
    measure, run = options.from_settings({"passes": 7, "runs": 2}, *classes, section=options.MEASURE_SECTION)
    assert (measure.passes, measure.warmup, run.runs) == (7, MeasureOptions().warmup, 2)
    with pytest.raises(SettingError, match=r"^stepscope\.measure\.tolerance must be a number ≥ 0, got -1$"):
        options.from_settings({"tolerance": -1}, *classes, section=options.MEASURE_SECTION)
    with pytest.raises(SettingError, match=r"^the command's measure argument must be an object of stepscope\.measure "
                                           r"settings, got 3$"):
        options.merge_settings([("the command's measure argument", 3)], options.MEASURE_SECTION)
