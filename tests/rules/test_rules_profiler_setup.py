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


def codes_and_lines(text: str, code: str) -> list[int]:
    return [d.line for d in check(text) if d.code == code]


def test_ss401_and_ss402_follow_a_profiler_through_an_alias():
    # a benchmark helper that picks its profiler once at module level, then profiles through it
    aliased = """
        import torch
        from torch.profiler import profile, ProfilerActivity

        profile_fn = profile

        def bench(model, inputs):
            with profile_fn(activities=[ProfilerActivity.CPU], record_shapes=True) as p:
                model(inputs)
            print("done")

        def train(model, loader, optimizer):
            with profile_fn() as prof:
                for x in loader:
                    model(x).sum().backward()
                    optimizer.step()
    """
    assert codes_and_lines(aliased, "SS401") == [7]
    assert codes_and_lines(aliased, "SS402") == [12]
    renamed = """
        import torch.profiler as tp
        from torch.profiler import profile as prof_ctx

        def one(model, x):
            with prof_ctx(record_shapes=True) as p:
                model(x)

        def two(model, x):
            with tp.profile(with_stack=True) as p:
                model(x)
    """
    assert codes_and_lines(renamed, "SS401") == [5, 9]
    # a name bound to another library's `profile`, or rebound away from torch's, is left alone
    rebound = """
        from torch.profiler import profile
        profile_fn = profile
        profile_fn = line_profiler.profile

        def bench(model, x):
            with profile_fn(record_shapes=True) as p:
                model(x)
    """
    assert codes_and_lines(rebound, "SS401") == []


PER_STEP_EXPORT = """
    import os
    from torch.profiler import profile

    def train(model, loader, optimizer, out_dir):
        for step, (x, y) in enumerate(loader):
            with profile() as prof:
                loss = model(x).sum()
                loss.backward()
                optimizer.step()
            prof.export_chrome_trace(os.path.join(out_dir, "trace.json"))
"""


def test_ss405_an_export_to_the_same_path_on_every_pass_of_the_loop():
    (diag,) = [d for d in check(PER_STEP_EXPORT) if d.code == "SS405"]
    assert diag.line == 10
    assert "on every pass of the loop at line 5" in diag.message
    assert "only the last trace is kept" in diag.message
    periodic = PER_STEP_EXPORT.replace(
        "            prof.export_chrome_trace(",
        "            if step % 100 == 0:\n                prof.export_chrome_trace(")
    (diag,) = [d for d in check(periodic) if d.code == "SS405"]
    assert (diag.line, "every few passes" in diag.message) == (11, True)


def test_ss405_leaves_exports_that_differ_per_pass_or_run_once():
    per_step_name = PER_STEP_EXPORT.replace('"trace.json"', 'f"trace_{step}.json"')
    first_only = PER_STEP_EXPORT.replace(
        "            prof.export_chrome_trace(",
        "            if step == 3:\n                prof.export_chrome_trace(")
    then_stop = PER_STEP_EXPORT + "            break\n"
    one_pass = PER_STEP_EXPORT.replace("enumerate(loader)", "[(0, first_batch)]")
    for text in (per_step_name, first_only, then_stop, one_pass):
        assert codes_and_lines(text, "SS405") == [], text
