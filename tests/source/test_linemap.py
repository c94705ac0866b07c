"""The step loop of the working tree, found in an older version of the file."""

from __future__ import annotations

from stepscope.source.linemap import header_text, map_line, map_step_loop

OLD = """import torch

def train(model, loader, opt):
    for x, y in loader:
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
"""


def test_an_edit_above_the_loop_moves_it_and_the_map_follows():
    new = OLD.replace("import torch\n", "import torch\nimport math\n\nSCALE = 2\n")
    assert map_line(OLD, new, 7) == 4
    assert map_step_loop(OLD, new, 7) == 4
    assert header_text(new, 7) == "for x, y in loader:"


def test_a_changed_header_is_found_by_the_first_statement_of_its_body():
    new = OLD.replace("for x, y in loader:", "for x, y in prefetch(loader):")
    assert map_line(OLD, new, 4) is None  # the header itself changed: no counterpart is guessed
    assert map_step_loop(OLD, new, 4) == 4


def test_a_step_loop_whose_first_statement_is_a_loop_maps_to_the_outer_loop():
    old = "def f(loader):\n    for batch in loader:\n        for micro in batch:\n            step(micro)\n"
    new = old.replace("for batch in loader:", "for batch in iter(loader):")
    assert map_step_loop(old, new, 2) == 2


def test_a_loop_that_did_not_exist_has_no_counterpart():
    new = OLD + "\nfor epoch in range(3):\n    train(None, [], None)\n"
    assert map_step_loop(OLD, new, 10) is None
    assert map_step_loop(OLD, new, 5) is None  # not a loop header
