"""The line map: a run's lines in a document's current text (the editor), and the step loop of the
working tree found in an older version of the file (`measure --against`)."""

from __future__ import annotations

from stepscope.source.linemap import LineMap, header_text, map_line, map_step_loop

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


MEASURED = "import torch\nfor x in data:\n    y = model(x)\n    loss = y.sum()\n    loss.backward()\n"


def test_the_same_text_maps_every_line_to_itself():
    same = LineMap.between(MEASURED, MEASURED)
    assert same.identical and same.changed == 0
    assert [same.now(i) for i in range(5)] == [0, 1, 2, 3, 4]


def test_lines_below_an_insertion_move_and_an_edited_line_has_no_counterpart():
    lines = MEASURED.split("\n")
    lines[3] = "    loss = y.mean()"  # edited
    lines[1:1] = ["# a", "# b"]  # two lines inserted above the loop
    moved = LineMap.between(MEASURED, "\n".join(lines))
    assert [moved.now(i) for i in range(5)] == [0, 3, 4, None, 6]
    assert moved.then(6) == 4 and moved.then(1) is None and moved.then(5) is None
    assert moved.changed == 1 and not moved.identical


def test_a_deleted_line_is_gone_and_the_rest_move_up():
    lines = MEASURED.split("\n")
    del lines[2]
    moved = LineMap.between(MEASURED, "\n".join(lines))
    assert [moved.now(i) for i in range(5)] == [0, 1, None, 2, 3]


def test_line_endings_and_trailing_blanks_do_not_count_as_changes():
    crlf = MEASURED.replace("\n", "\r\n").replace("y.sum()", "y.sum()   ")
    assert [LineMap.between(MEASURED, crlf).now(i) for i in range(5)] == [0, 1, 2, 3, 4]


def test_repeated_lines_map_once_each():
    measured = "a\nx\nx\nb\n"
    moved = LineMap.between(measured, "a\nx\nb\n")  # one of two identical lines deleted
    kept = [moved.now(i) for i in range(4)]
    assert kept.count(None) == 1 and kept[0] == 0 and kept[3] == 2
    assert len({k for k in kept if k is not None}) == 3  # never two measured lines on one line
