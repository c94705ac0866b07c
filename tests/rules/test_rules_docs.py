"""Every rule has a page, and the page's examples behave as the page says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stepscope.rules import RULES, Config, check_source

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules"


def block_after(text: str, heading: str) -> str:
    match = re.search(rf"^## {heading}\n```python\n(.*?)```", text, re.S | re.M)
    assert match, f"no python example under '## {heading}'"
    return match.group(1)


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_page_examples(code: str):
    page = DOCS / f"{code}.md"
    text = page.read_text(encoding="utf-8")
    for section in ("## Why it matters", "## Bad", "## Good", "## What it reports on"):
        assert section in text
    assert RULES[code].url.endswith(f"docs/rules/{code}.md")
    assert ("Off by default" in text) == (not RULES[code].default_on)
    only = Config(select=(code,))
    bad = check_source(block_after(text, "Bad"), f"/docs/{code}_bad.py", only, strict=True)
    good = check_source(block_after(text, "Good"), f"/docs/{code}_good.py", only, strict=True)
    assert [d.code for d in bad] and {d.code for d in bad} == {code}
    assert good == []


def test_index_lists_every_rule_with_its_default():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for code, rule in RULES.items():
        row = next(line for line in index.splitlines() if line.startswith(f"| [{code}]"))
        assert ("| on |" in row) == rule.default_on and rule.severity in row
