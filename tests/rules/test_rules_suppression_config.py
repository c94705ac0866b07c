"""Suppression comments, quick fixes that stay valid, and `[tool.stepscope]` configuration."""

from __future__ import annotations

import ast
from pathlib import Path

from stepscope.rules import Config, check_source, load_config
from stepscope.rules.config import config_from_table

from .helpers import apply_fix, check, src

LOOP = """
import torch
for x, y in loader:
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
    a = loss.item(){comment}
    b = loss.cpu()
"""


def with_comment(comment: str) -> str:
    return LOOP.replace("{comment}", comment)


def codes_on_line(text: str, line: int) -> list[str]:
    return [d.code for d in check(text) if d.line == line]


def test_ignore_comment_for_one_code_all_codes_and_other_codes():
    assert codes_on_line(with_comment(""), 6) == ["SS101"]
    assert codes_on_line(with_comment("  # stepscope: ignore[SS101]"), 6) == []
    assert codes_on_line(with_comment("  # stepscope: ignore"), 6) == []
    assert codes_on_line(with_comment("  # stepscope: ignore[SS1]"), 6) == []
    assert codes_on_line(with_comment("  # stepscope: ignore[SS202]"), 6) == ["SS101"]
    # a comment silences its own line only
    assert codes_on_line(with_comment("  # stepscope: ignore"), 7) == ["SS101"]


def test_suppression_fix_silences_the_diagnostic_and_keeps_other_codes():
    text = src(with_comment("  # stepscope: ignore[SS202]"))
    diag = next(d for d in check(text) if d.line == 6)
    fixed = apply_fix(text, diag.fixes[-1])
    assert "# stepscope: ignore[SS202, SS101]" in fixed
    assert codes_on_line(fixed, 6) == []
    plain = src(with_comment(""))
    diag = next(d for d in check(plain) if d.line == 6)
    fixed = apply_fix(plain, diag.fixes[-1])
    assert fixed.splitlines()[5] == "    a = loss.item()  # stepscope: ignore[SS101]"


def test_every_fix_leaves_valid_python_and_removes_its_diagnostic():
    text = src("""
        import time
        import torch
        from torch.profiler import profile, schedule
        with profile(schedule=schedule(wait=0, warmup=0, active=2), with_stack=True) as prof:
            for x in loader:
                m = torch.tensor([1.0, 2.0]).cuda()
                t0 = time.time()
                loss = model(x * m).sum()
                loss.backward()
                optimizer.step()
                d = time.time() - t0
                prof.step()
        prof.export_chrome_trace("out/trace.json")
    """)
    diags = check(text)
    assert {d.code for d in diags} >= {"SS202", "SS401", "SS403", "SS405", "SS501", "SS502"}
    assert sum(len(d.fixes) for d in diags) >= len(diags)  # each at least its suppression comment
    for diag in diags:
        before = sum(d.code == diag.code for d in diags)
        for fix in diag.fixes:
            fixed = apply_fix(text, fix)
            ast.parse(fixed)
            after = sum(d.code == diag.code for d in check(fixed))
            assert after < before, (diag.code, fix.title)


def test_default_selection_and_every_rule():
    default = Config().enabled_codes()
    every = Config(select=("SS",)).enabled_codes()
    assert default <= every and len(every) == 15
    assert "SS103" in every and "SS103" not in default
    assert Config(select=("SS4",), ignore=("SS401",)).enabled_codes() == {
        "SS402", "SS403", "SS404", "SS405", "SS406", "SS407"}


def test_per_file_ignores_match_relative_paths(tmp_path: Path):
    cfg = config_from_table({"per-file-ignores": {"tests/**": ["SS101"], "bench_*.py": ["SS2"]}},
                            root=tmp_path)
    assert not cfg.enabled("SS101", str(tmp_path / "tests" / "unit" / "t.py"))
    assert cfg.enabled("SS101", str(tmp_path / "src" / "t.py"))
    assert not cfg.enabled("SS202", str(tmp_path / "bench_x.py"))


def test_load_config_finds_the_nearest_pyproject_and_reports_bad_values(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.stepscope]\nselect = ["SS1", "ZZ9"]\nmodel-names = "denoiser"\nsync-min-calls = 3\n'
        '[tool.stepscope.profile]\nwait = 1\n', encoding="utf-8")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    cfg = load_config(deep)
    assert cfg.root == tmp_path and cfg.select == ("SS1",) and cfg.sync_min_calls == 3
    assert cfg.model_names == ()
    assert any("ZZ9" in w for w in cfg.warnings)
    assert any("model-names" in w for w in cfg.warnings)
    assert all("\n" not in w for w in cfg.warnings)


def test_model_names_from_config_make_a_loop_a_step():
    text = "for x in loader:\n    out = denoiser(x)\n    print(out.item())\n"
    assert check_source(text, "t.py", Config(select=("SS1",))) == []
    found = check_source(text, "t.py", Config(select=("SS1",), model_names=("denoiser",)))
    assert [d.code for d in found] == ["SS103"]  # a loop that only runs a model: evaluation


def test_columns_are_characters_not_bytes():
    text = ("import torch\nfor x in loader:\n    out = model(x)\n    out.sum().backward()\n"
            "    é = 'ü'; v = out.item()\n")
    (diag,) = check_source(text, "t.py")
    assert text.splitlines()[4][diag.col:diag.end_col] == "out.item()"
