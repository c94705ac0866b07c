"""The workspace with a change made to it, beside it: the changed files and the program's own files
are real, everything else links to the user's, and the copy goes whatever happens."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stepscope.capture import owned
from stepscope.capture.scratch import SCRATCH_DIR, ScratchCopy


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under root but .stepscope, by path: its bytes' digest (links as their target)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == ".stepscope":
            continue
        if path.is_symlink():
            out[str(rel)] = f"-> {os.readlink(path)}"
        elif path.is_file():
            out[str(rel)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "data" / "big").mkdir(parents=True)
    (ws / "train.py").write_text("from pkg import model\nprint(model.VALUE, open('data/big/x.txt').read())\n")
    (ws / "pkg" / "__init__.py").write_text("")
    (ws / "pkg" / "model.py").write_text("VALUE = 1\n")
    (ws / "pkg" / "other.py").write_text("OTHER = 1\n")
    (ws / "data" / "big" / "x.txt").write_text("data")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def test_the_copy_runs_the_changed_module_and_reads_the_user_s_data(ws: Path):
    before = tree_digest(ws)
    with ScratchCopy(ws, {"pkg/model.py": "VALUE = 2\n"}, real=[ws / "train.py"], folders=[ws]) as copy:
        assert copy.path.parent == ws / ".stepscope" / SCRATCH_DIR
        assert (copy.path / "pkg").is_dir() and not (copy.path / "pkg").is_symlink()  # on the way to a change
        assert (copy.path / "pkg" / "other.py").is_symlink() and (copy.path / "data").is_symlink()
        assert not (copy.path / "train.py").is_symlink()  # Python takes the script's folder from its real path
        assert not (copy.path / ".git").exists() and not (copy.path / ".stepscope").exists()
        ran = subprocess.run([sys.executable, str(copy.map_path(ws / "train.py"))], cwd=copy.path,
                             capture_output=True, text=True, check=True)
        assert ran.stdout.strip() == "2 data"  # the changed module, the user's data
        path = copy.path
    assert not path.exists() and not owned.owner_file(path).exists()
    assert tree_digest(ws) == before  # nothing of the user's was written, and no link was followed on removal


def test_the_copy_goes_on_an_error_and_a_killed_owner_s_copy_goes_with_the_next_one(ws: Path):
    with pytest.raises(RuntimeError):
        with ScratchCopy(ws, {"train.py": "print(3)\n"}) as copy:
            path = copy.path
            raise RuntimeError("the run failed")
    assert not path.exists()
    # a copy whose owner was killed (its pid is gone): the next copy removes it, and nothing it links to
    left = ws / ".stepscope" / SCRATCH_DIR / "left-behind"
    left.mkdir()
    os.symlink(ws / "data", left / "data")
    owned.owner_file(left).write_text("999999999")
    with ScratchCopy(ws, {"train.py": "print(3)\n"}):
        assert not left.exists()
    assert (ws / "data" / "big" / "x.txt").read_text() == "data"


def test_a_new_file_in_a_new_folder_and_a_change_to_git_s_files_refused(ws: Path):
    with ScratchCopy(ws, {"extra/new.py": "X = 1\n"}) as copy:
        assert (copy.path / "extra" / "new.py").read_text() == "X = 1\n"
        assert (copy.path / "train.py").is_symlink()
    assert not (ws / "extra").exists()
    with pytest.raises(Exception, match=".git"):
        with ScratchCopy(ws, {".git/config": "x"}):
            pass
