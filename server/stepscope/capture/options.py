"""The options as users give them: `stepscope profile` / `stepscope measure` flags and the editor's
`stepscope.profile.*` / `stepscope.measure.*` settings, both made from one declaration.

An options class is a frozen dataclass whose fields are declared with `protocol.option(...)`: the
default, the minimum, the flag, the setting key and the help live on the field (a field that is
itself such a dataclass, like `ProfileOptions.schedule`, contributes its own fields). A mode
declares its options class once, and this module offers it on both surfaces:
- `add_arguments(parser, *classes)` / `from_arguments(args, *classes)`: flags, checked with a
  one-line UsageError naming the flag;
- `from_settings(settings, *classes)`: the editor's values, checked with one line naming the
  setting (SettingError); a null value means the default, an unknown key is refused.

Invariants: every check is the declaration's own (`Option.check`), so no surface accepts a value
another refuses; a boolean flag or setting that is `negated` sets its field to the opposite.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import typing
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from ..agent.protocol import Option, OptionError, describe_rule
from ..errors import UsageError

SECTION = "stepscope.profile"
MEASURE_SECTION = "stepscope.measure"  # Measure This Step's settings (MeasureOptions, MeasureRunOptions)


class SettingError(ValueError):
    """A bad editor setting; the message is one line naming it."""


@dataclass(frozen=True)
class Declared:
    """One option as declared: its place in the options class, how it is offered, its type."""

    path: tuple[str, ...]  # field names from the options class down: ("schedule", "wait")
    option: Option
    kind: type  # int, float or bool: the type of the default
    default: Any

    @property
    def dest(self) -> str:
        return self.path[-1]

    def user_value(self, field_value: Any) -> Any:
        """The value as the flag or the setting says it (negated options say the opposite)."""
        return (not field_value) if self.option.negated else field_value


def declared(cls: type) -> list[Declared]:
    """The options of `cls`, in declaration order (fields of nested options classes in place)."""
    out: list[Declared] = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            out += [dataclasses.replace(d, path=(f.name, *d.path)) for d in declared(hints[f.name])]
            continue
        option = f.metadata.get("option")
        if option is None:
            continue
        kind = type(f.default)
        assert kind in (int, float, bool), f"{cls.__name__}.{f.name}: options are int, float or bool"
        assert kind is not bool or option.negated == f.default, \
            f"{cls.__name__}.{f.name}: a boolean flag turns its default around (negated == default)"
        out.append(Declared((f.name,), option, kind, f.default))
    return out


def _build(cls: type, value_of: Callable[[Declared], Any], path: tuple[str, ...] = ()) -> Any:
    hints = typing.get_type_hints(cls)
    by_name = {d.path[0]: d for d in declared(cls) if len(d.path) == 1}
    kwargs = {}
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            kwargs[f.name] = _build(hints[f.name], value_of, (*path, f.name))
        elif f.name in by_name:
            d = dataclasses.replace(by_name[f.name], path=(*path, f.name))
            kwargs[f.name] = value_of(d)
    return cls(**kwargs)


def _all(classes: Iterable[type]) -> list[Declared]:
    found = [d for cls in classes for d in declared(cls)]
    dests = [d.dest for d in found]
    assert len(set(dests)) == len(dests), f"option names must be unique: {dests}"
    return found


# -- flags ------------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser, *classes: type, only: Iterable[str] | None = None) -> None:
    """The flags of the options of `classes` (with `only`: of those fields only; `from_arguments`
    gives the others their defaults)."""
    wanted = set(only) if only is not None else None
    for d in _all(classes):
        flag = d.option.flag
        if flag is None or (wanted is not None and d.dest not in wanted):
            continue
        help_text = d.option.help.replace("%", "%%")  # argparse formats help with %
        if d.kind is not bool:
            meaning = f": {d.option.zero}" if d.option.zero and not d.default else ""
            help_text += f" (default {d.default:g}{meaning})"
        if d.kind is bool:
            parser.add_argument(flag, dest=d.dest, action="store_false" if d.option.negated else "store_true",
                                help=help_text)
        else:
            parser.add_argument(flag, dest=d.dest, type=d.kind, default=d.default, help=help_text)


def from_arguments(args: argparse.Namespace, *classes: type) -> tuple[Any, ...]:
    """One instance of each options class from parsed flags; a UsageError for a refused value."""
    flags = {d.dest: d.option.flag for d in _all(classes)}
    try:
        return tuple(_build(cls, lambda d: getattr(args, d.dest, d.default)) for cls in classes)
    except OptionError as e:
        raise UsageError(f"{flags[e.name]} must be {describe_rule(e.option, e.kind, ascii_only=True)} "
                         f"(got {e.value!r})") from None


# -- editor settings --------------------------------------------------------------------------
def shown(value: Any) -> str:
    """A setting's value as the user wrote it in settings.json, quoted when it is text."""
    return repr(value) if isinstance(value, str) else json.dumps(value)


def merge_settings(layers: Iterable[tuple[str, Any]], section: str = SECTION) -> dict[str, Any]:
    """The settings of several sources, later ones over earlier ones: (where, value) pairs, where a
    value of None is an absent source."""
    merged: dict[str, Any] = {}
    for where, given in layers:
        if given is None:
            continue
        if not isinstance(given, dict):
            raise SettingError(f"{where} must be an object of {section} settings, got {shown(given)}")
        merged.update(given)
    return merged


def from_settings(settings: Mapping[str, Any], *classes: type, section: str = SECTION) -> tuple[Any, ...]:
    """One instance of each options class from the editor's settings (keys as under `section`)."""
    offered = {d.option.setting: d for d in _all(classes) if d.option.setting}
    unknown = sorted(set(settings) - set(offered))
    if unknown:
        kind = section.rsplit(".", 1)[-1]
        raise SettingError(f"{section}.{unknown[0]} is not a setting; the {kind} settings are " + ", ".join(offered))
    given = {k: v for k, v in settings.items() if v is not None}  # null: the default, as if unset
    for key, value in given.items():
        d = offered[key]
        if not d.option.check(value, d.kind):
            raise SettingError(f"{section}.{key} must be {describe_rule(d.option, d.kind)}, got {shown(value)}")
    values = {d.dest: d.user_value(given[key]) for key, d in offered.items() if key in given}
    return tuple(_build(cls, lambda d: values.get(d.dest, d.default)) for cls in classes)
