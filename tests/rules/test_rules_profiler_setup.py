"""Profiler set-up rules on the shapes public code writes: a profiler reached through an alias,
a trace exported inside the loop, and SS402's one proposed schedule."""

from __future__ import annotations

import re

from stepscope.rules.quickfix import real_fixes

from .helpers import apply_fix, check, src

UNSCHEDULED = """
    import torch
    from torch.profiler import profile

    with profile() as prof:
        for x, y in loader:
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
"""


def test_ss402_message_proposes_the_schedule_its_fix_inserts():
    (diag,) = [d for d in check(UNSCHEDULED) if d.code == "SS402"]
    proposed = re.search(r"schedule=(torch\.profiler\.schedule\([^)]*\))", diag.message).group(1)
    (fix,) = real_fixes(diag, src(UNSCHEDULED))
    fixed = apply_fix(src(UNSCHEDULED), fix)
    inserted = re.search(r"schedule=(torch\.profiler\.schedule\([^)]*\))", fixed).group(1)
    assert proposed == inserted == "torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1)"
    assert "wait 1, warm-up 1, active 3" in fix.title
