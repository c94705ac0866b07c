"""The profile mode's recorder: what it asks of Kineto (real torch, CPU)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from stepscope.agent.profiling import release_cupti_after_the_window  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("cuda, released", [("12.6", True), ("13.0", True), ("12.4", False), ("11.8", False),
                                            (None, False), ("unknown", False)])
def test_cupti_is_let_go_after_the_window_where_cuda_graphs_survive_it(cuda: str | None, released: bool):
    # attached after the window, CUPTI slows every launch of the steps timed there (the distortion's
    # denominator); below CUDA 12.6 a teardown can crash a program that uses CUDA graphs
    environ: dict[str, str] = {}
    assert release_cupti_after_the_window(environ, cuda) is released
    assert environ == ({"TEARDOWN_CUPTI": "1"} if released else {})


def test_a_teardown_setting_of_the_users_own_is_left_as_it_is():
    environ = {"TEARDOWN_CUPTI": "0"}
    assert release_cupti_after_the_window(environ, "13.0") is False
    assert environ == {"TEARDOWN_CUPTI": "0"}
