"""SS101 on the host conversions of a tensor: `float()`, `int()` and `bool()` each read the value on
the host and wait for the device, and each is reported once, on the conversion itself."""

from __future__ import annotations

import pytest

from .helpers import found
from .test_rules_catalogue import in_step


@pytest.mark.parametrize("conversion", ["float", "int", "bool"])
def test_ss101_a_conversion_of_a_tensor_waits_for_the_device(conversion: str) -> None:
    assert found(in_step(f"value = {conversion}(loss)"), "SS101") == [(10, f"{conversion}(loss)")]


def test_ss101_bool_of_a_tensor_comparison_is_a_sync() -> None:
    # `bool(loss < 0.1)` reads the comparison's result, a tensor on the device, on the host
    body = "stop = bool(loss < 0.1)\n        done = bool(out.isnan().any())"
    assert found(in_step(body), "SS101") == [(10, "bool(loss < 0.1)"), (11, "bool(out.isnan().any())")]


def test_ss101_bool_in_an_if_is_reported_once_on_the_conversion() -> None:
    body = "if bool(loss < 0.1):\n            break"
    assert found(in_step(body), "SS101") == [(10, "bool(loss < 0.1)")]


def test_ss101_bool_of_what_is_not_a_tensor_is_left_alone() -> None:
    body = "more = bool(len(loader))\n        flag = bool(optimizer)"
    assert found(in_step(body), "SS101") == []
