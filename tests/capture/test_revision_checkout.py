"""A revision checked out beside the user's project, and removed again whatever happens."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stepscope.capture.revision import RevisionCheckout, RevisionError


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "project"
    r.mkdir()
    git(r, "init", "-q")
    git(r, "config", "user.email", "dev@example.com")
    git(r, "config", "user.name", "Dev")
    (r / "train.py").write_text("print('old')\n")
    git(r, "add", "train.py")
    git(r, "commit", "-q", "-m", "first")
    (r / "train.py").write_text("print('new')\n")
    git(r, "commit", "-q", "-am", "second")
    # The user's state right now: an edit staged, another not, an untracked file.
    (r / "train.py").write_text("print('staged')\n")
    git(r, "add", "train.py")
    (r / "train.py").write_text("print('working tree')\n")
    (r / "notes.txt").write_text("mine\n")
    return r


def _state(r: Path) -> tuple[str, str, str, str]:
    return (git(r, "status", "--porcelain"), git(r, "diff", "--cached"), git(r, "rev-parse", "HEAD"),
            (r / "train.py").read_text())


def test_a_revision_is_checked_out_beside_and_removed_after(repo: Path):
    before = _state(repo)
    with RevisionCheckout(repo, "HEAD~1") as rev:
        assert rev.path is not None and rev.path.parent == repo / ".stepscope" / "worktrees"
        assert rev.read_file(repo / "train.py") == "print('old')\n"
        assert rev.has_file(repo / "train.py") and not rev.has_file(repo / "notes.txt")
        assert not rev.map_path(repo / "notes.txt").exists()  # only committed files are there
        assert len(git(repo, "worktree", "list").splitlines()) == 2
        assert _state(repo) == before  # the user's files, index and HEAD are untouched
        inside = rev.path
    assert not inside.exists()
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert _state(repo) == before
    assert list((repo / ".stepscope" / "worktrees").iterdir()) == []


def test_the_checkout_is_removed_when_the_work_inside_fails(repo: Path):
    with pytest.raises(KeyboardInterrupt):
        with RevisionCheckout(repo, "HEAD") as rev:
            inside = rev.path
            raise KeyboardInterrupt  # a cancel
    assert not inside.exists()
    assert len(git(repo, "worktree", "list").splitlines()) == 1


def test_a_checkout_left_by_a_killed_process_is_removed_by_the_next_one(repo: Path):
    code = textwrap.dedent("""
        import sys, time
        from pathlib import Path
        from stepscope.capture.revision import RevisionCheckout
        with RevisionCheckout(Path(sys.argv[1]), "HEAD") as rev:
            print(rev.path, flush=True)
            time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", code, str(repo)], stdout=subprocess.PIPE, text=True)
    left = Path(p.stdout.readline().strip())
    assert left.is_dir()
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    assert left.is_dir()  # nothing could clean up after SIGKILL ...
    with RevisionCheckout(repo, "HEAD~1"):
        assert not left.exists()  # ... the next checkout does
    assert len(git(repo, "worktree", "list").splitlines()) == 1


@pytest.mark.parametrize("rev", ["no-such-branch", "HEAD~5", "--output=/tmp/x"])
def test_a_revision_that_is_no_commit_is_a_one_line_usage_error(repo: Path, rev: str):
    with pytest.raises(RevisionError) as e:
        with RevisionCheckout(repo, rev):
            pass
    assert "\n" not in str(e.value) and e.value.exit_code == 2
    assert len(git(repo, "worktree", "list").splitlines()) == 1


def test_a_folder_outside_git_is_refused(tmp_path: Path):
    with pytest.raises(RevisionError, match="needs a git repository"):
        with RevisionCheckout(tmp_path, "HEAD"):
            pass
