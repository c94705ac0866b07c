"""Where a failed run's program raised, read from synthetic logs (lsp/tracebacks.py)."""

from __future__ import annotations

from pathlib import Path

from stepscope.lsp.tracebacks import Frame, last_traceback, users_frame


def _log(*parts: str) -> str:
    return "\n".join(parts) + "\n"


def _traceback(*frames: tuple[str, int, str], exception: str) -> str:
    lines = ["Traceback (most recent call last):"]
    for file, line, code in frames:
        lines += [f'  File "{file}", line {line}, in fn', f"    {code}", "    " + "^" * len(code)]
    return "\n".join([*lines, exception])


def test_the_innermost_frame_in_the_workspace_is_chosen_past_installed_packages(tmp_path: Path):
    (tmp_path / "model").mkdir()
    train, net = tmp_path / "train.py", tmp_path / "model" / "net.py"
    text = _log("epoch 1 loss 0.3",
                _traceback((str(train), 12, "y = net(x)"), (str(net), 7, "return self.fc(x)"),
                           ("/usr/lib/python3/site-packages/torch/nn/modules/linear.py", 134, "return F.linear(x)"),
                           exception="RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x10 and 20x5)"),
                "stepscope: the program raised RuntimeError")
    raised = last_traceback(text)
    assert raised is not None and len(raised.frames) == 3
    assert raised.exception == "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x10 and 20x5)"
    assert users_frame(raised, tmp_path) == Frame(str(net), 7, "fn", "return self.fc(x)")


def test_chained_exceptions_give_the_last_traceback():
    first = _traceback(("/w/a.py", 3, "x[1]"), exception="KeyError: 1")
    second = _traceback(("/w/a.py", 5, "raise ValueError('bad') from e"), exception="ValueError: bad")
    text = _log(first, "", "The above exception was the direct cause of the following exception:", "", second)
    raised = last_traceback(text)
    assert raised is not None and raised.exception == "ValueError: bad" and raised.frames[0].line == 5
    handling = _log(first, "", "During handling of the above exception, another exception occurred:", "",
                    _traceback(("/w/a.py", 9, "cleanup()"), exception="OSError: disk full"))
    assert last_traceback(handling).exception == "OSError: disk full"


def test_frames_outside_the_workspace_are_never_chosen(tmp_path: Path):
    root = tmp_path / "ws"
    (root / ".venv" / "lib").mkdir(parents=True)
    outside = tmp_path / "elsewhere.py"
    (root / "link").symlink_to(tmp_path)  # a link inside the workspace to a folder outside it
    for file in (str(outside), str(root / ".." / "elsewhere.py"), str(root / "link" / "elsewhere.py"),
                 str(root / ".venv" / "lib" / "torch.py"), str(root / "lib" / "site-packages" / "x.py"),
                 "<string>", "relative.py"):
        raised = last_traceback(_traceback((file, 3, "f()"), exception="RuntimeError: no"))
        assert raised is not None and users_frame(raised, root) is None, file


def test_a_log_without_a_whole_traceback_gives_nothing():
    assert last_traceback("") is None
    assert last_traceback(_log("step 1", "the loop ran 1 steps, fewer than the window")) is None
    assert last_traceback(_log("Traceback (most recent call last):", '  File "/w/a.py", line 3, in f')) is None
    # an older traceback does not stand in for the last one when that one is cut short
    cut = _log(_traceback(("/w/a.py", 3, "f()"), exception="ValueError: old"), "Traceback (most recent call last):")
    assert last_traceback(cut) is None


def test_output_between_its_lines_is_passed_over_and_a_bare_exception_is_read():
    text = _log("Traceback (most recent call last):", '  File "/w/a.py", line 4, in <module>', "    run()",
                "USDT:2026-12-07 21:19:17 5957:5957 SyncActivityProfilerHandler.cpp:59] profiler_stop",
                '  File "/w/b.py", line 8, in run', "    time.sleep(9)", "KeyboardInterrupt")
    raised = last_traceback(text)
    assert raised is not None and raised.exception == "KeyboardInterrupt"
    assert [(f.file, f.line, f.function, f.code) for f in raised.frames] == [
        ("/w/a.py", 4, "<module>", "run()"), ("/w/b.py", 8, "run", "time.sleep(9)")]
