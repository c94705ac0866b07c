"""A change to try: edits, patches and texts become the same thing, a file's text before and after,
whose diff `git apply` takes back."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from stepscope.rules.model import Edit
from stepscope.trying.change import Change, ChangeError, apply_edits, line_edits, parse_patch

TEXT = "import torch\n\nfor x in data:\n    y = f(x)\n    total += y.item()\n"


def test_edits_replace_insert_and_keep_the_file_s_line_breaks():
    edits = [Edit(5, 13, 5, 21, "y.detach()"), Edit(3, 0, 3, 0, "# ahead\n")]
    assert apply_edits(TEXT, edits) == "import torch\n\n# ahead\nfor x in data:\n    y = f(x)\n    total += y.detach()\n"
    crlf = TEXT.replace("\n", "\r\n")
    assert apply_edits(crlf, edits) == apply_edits(TEXT, edits).replace("\n", "\r\n")  # CRLF stays CRLF


@pytest.mark.parametrize("edits, reason", [
    ([Edit(3, 0, 3, 5, "a"), Edit(3, 2, 3, 8, "b")], "overlap"),
    ([Edit(40, 0, 40, 1, "a")], "line 40"),
    ([Edit(3, 90, 3, 91, "a")], "column 90"),
])
def test_edits_that_cannot_be_made_are_refused_in_one_line(edits, reason):
    with pytest.raises(ChangeError, match=reason):
        apply_edits(TEXT, edits)


def test_a_change_s_diff_is_a_patch_that_applies_back(tmp_path: Path):
    change = Change.of_edits("fix", {"kind": "fix"}, "train.py", TEXT, [Edit(5, 13, 5, 21, "y.detach()")])
    assert change.stats() == {"files": 1, "added": 1, "removed": 1}
    again = Change.of_patch("again", {}, change.diff(), {"train.py": TEXT}.get)
    assert again.files[0].after == change.files[0].after
    # and git takes it as it is
    (tmp_path / "train.py").write_text(TEXT)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "fix.diff").write_text(change.diff())
    subprocess.run(["git", "-C", str(tmp_path), "apply", "fix.diff"], check=True)
    assert (tmp_path / "train.py").read_text() == change.files[0].after


def test_a_patch_applies_where_its_lines_are_now_and_nowhere_else():
    patch = ("--- a/train.py\n+++ b/train.py\n@@ -3,2 +3,2 @@\n for x in data:\n-    y = f(x)\n+    y = g(x)\n")
    moved = "# a new first line\n" + TEXT  # the hunk's lines are one line lower now
    (target,) = parse_patch(patch)
    assert target.path == "train.py"
    assert "    y = g(x)\n" in target.apply(moved)
    with pytest.raises(ChangeError, match="not in the file as it is"):
        target.apply(TEXT.replace("y = f(x)", "y = h(x)"))


def test_a_patch_without_prefixes_a_new_file_and_no_newline_at_the_end():
    patch = ("--- train.py\n+++ train.py\n@@ -5 +5 @@\n-    total += y.item()\n\\ No newline at end of file\n"
             "+    total += y\n\\ No newline at end of file\n"
             "--- /dev/null\n+++ b/extra.py\n@@ -0,0 +1 @@\n+X = 1\n")
    texts = {"train.py": TEXT.rstrip("\n")}
    change = Change.of_patch("p", {}, patch, texts.get)
    by_path = {f.path: f for f in change.files}
    assert by_path["train.py"].after.endswith("    total += y")
    assert by_path["extra.py"].before is None and by_path["extra.py"].after == "X = 1\n"


@pytest.mark.parametrize("patch, reason", [
    ("not a diff at all\n", "not a patch"),
    ("--- a/x.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", "deletes"),
    ("diff --git a/x.py b/y.py\nrename from x.py\nrename to y.py\n", "renames"),
    ("--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", "inside the workspace"),
    ("--- a/.stepscope/x\n+++ b/.stepscope/x\n@@ -1 +1 @@\n-a\n+b\n", "inside the workspace"),
    ("--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n-a\n+b\n", "ends early"),
    ("Binary files a/x.bin and b/x.bin differ\n", "binary"),
])
def test_patches_that_a_try_cannot_make_are_refused_in_one_line(patch, reason):
    with pytest.raises(ChangeError, match=reason):
        Change.of_patch("p", {}, patch, lambda rel: "a\n")


def test_a_patch_of_a_file_that_is_not_there_or_a_change_that_changes_nothing_is_refused():
    patch = "--- a/gone.py\n+++ b/gone.py\n@@ -1 +1 @@\n-a\n+b\n"
    with pytest.raises(ChangeError, match="not in the workspace"):
        Change.of_patch("p", {}, patch, lambda rel: None)
    with pytest.raises(ChangeError, match="leaves every file as it is"):
        Change.of_texts("same", {}, [("train.py", TEXT, TEXT)])


def test_line_edits_turn_the_text_tried_into_the_text_measured():
    after = TEXT.replace("y = f(x)", "y = g(x)").replace("import torch\n", "import torch\nimport time\n")
    edits = line_edits(TEXT, after)
    assert apply_edits(TEXT, edits) == after
    assert all(e.col == 0 and e.end_col == 0 for e in edits)  # whole lines: the editor's undo undoes exactly this


def test_a_change_reads_back_from_its_record():
    change = Change.of_edits("fix", {"kind": "fix", "code": "SS101"}, "train.py", TEXT,
                             [Edit(5, 13, 5, 21, "y.detach()")], applicable=False, why_not="an experiment")
    again = Change.from_dict(change.as_dict())
    assert again == change and again.files[0].before_sha256 == change.files[0].before_sha256
