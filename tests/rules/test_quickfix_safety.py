"""Which quick fix each shape of code gets, where a fix could change what the program computes:
SS501 hoists only a value no step changes, keeps or returns (else builds it on the device, or
offers nothing); SS101 sums in the dtype Python summed in; SS502 and SS202 stay away from code
their rewrite would break. Each case is a snippet of the shape seen in public training code."""

from __future__ import annotations

import pytest

from stepscope.rules.quickfix import editor_fixes, real_fixes

from .helpers import apply_fix, check, src

HEAD = """
import torch
device = torch.device("cuda")
model = torch.nn.Linear(3, 1)
for x in loader:
    loss = model(x).mean()
    loss.backward()
"""


def fixed(body: str, code: str = "SS501") -> list[str]:
    """The text each fix of `code` gives, for a loop body (4-space indented lines after HEAD)."""
    text = src(HEAD) + "".join(f"    {line}\n" for line in src(body).splitlines())
    out = []
    for diag in check(text):
        if diag.code == code:
            fixes = [*real_fixes(diag, text), *(f for f in diag.fixes if not f.title.startswith("Ignore "))]
            out.extend(apply_fix(text, f) for f in fixes)
    for after in out:
        compile(after, "train.py", "exec")
    return out


def hoisted(body: str) -> bool:
    (after,) = fixed(body)
    return "const_tensor = " in after


@pytest.mark.parametrize("body", [
    "scale = torch.tensor(0.5, device=device)\ny = loss * scale",
    "w = torch.tensor([1.0, 2.0, 3.0]).to(device)\nprint(f'{w}', (x * w).sum())",
    "y = x - torch.tensor([0.5, 0.5, 0.5], device=device).view(1, 3)",
    "m = torch.tensor([1.0, 0.0, 1.0], device=device)\nys = [x * m for _ in range(3)]",
    "m = torch.tensor(2.0, device=device)\ntotal = 0\ntotal += m",  # `total += m` reads m
])
def test_a_value_only_read_is_built_once_before_the_loop(body):
    assert hoisted(body)


@pytest.mark.parametrize("body", [
    "acc = torch.tensor(0.0, device=device)\nacc += loss",
    "acc = torch.tensor(0.0, device=device)\nacc.add_(loss.detach())",
    "acc = torch.tensor(0.0, device=device)\nacc = acc + loss",  # rebound
    "acc = torch.tensor(0.0, device=device)\nother = acc\nother += loss",  # an alias
    "acc = torch.tensor(0.0, device=device)\nhistory.append(acc)",  # kept
    "acc = torch.tensor(0.0, device=device)\nstate['acc'] = acc",
    "acc = torch.tensor(0.0, device=device)\nacc.view(1)[0] = 3.0",  # through a view
    "acc = torch.tensor(0.0, device=device)\ntorch.add(acc, 1.0, out=acc)",
    "acc = torch.tensor(0.0, device=device)\nacc.grad = None",
    "acc = torch.tensor(0.0, device=device)\ntorch.nn.functional.relu(acc, inplace=True)",
    "sums = {k: torch.tensor(0.0, device=device) for k in keys}",  # a tensor per key
    "t = torch.tensor(1.0, device=device, requires_grad=True)\n(loss * t).backward()",
    "acc = torch.tensor(0.0, device=device)\nf = lambda: acc\nprint(f())",  # a closure
    "device = x.device\nacc = torch.tensor(0.0, device=device)\nprint(acc)",  # reads a name the loop sets
])
def test_a_value_a_step_changes_or_keeps_is_built_on_the_device_instead(body):
    assert not hoisted(body)
    (after,) = fixed(body)
    assert "torch.zeros((), device=device" in after or "torch.ones((), device=device" in after


def test_returned_or_yielded_out_of_the_step_is_not_shared():
    text = src("""
        import torch
        device = torch.device("cuda")
        def steps(model, loader):
            for x in loader:
                loss = model(x).mean()
                loss.backward()
                running = torch.tensor(0.0, device=device)
                running += loss.detach()
                yield running
        def step(model, loader):
            for x in loader:
                loss = model(x).mean()
                loss.backward()
                zero = torch.tensor(0, device=device)
                return zero
        """)
    afters = [apply_fix(text, f) for d in check(text) if d.code == "SS501" for f in real_fixes(d, text)]
    assert len(afters) == 2 and not any("const_tensor" in a for a in afters)
    assert "running = torch.zeros((), device=device)\n" in afters[0]
    assert "zero = torch.zeros((), dtype=torch.long, device=device)\n" in afters[1]


@pytest.mark.parametrize("body, becomes", [
    ("c = torch.tensor(0, device=device)\nc += 1", "torch.zeros((), dtype=torch.long, device=device)"),
    ("f = torch.tensor(True).to(device)\nf &= loss > 0", "torch.ones((), dtype=torch.bool, device=device)"),
    ("o = torch.tensor(-1.5).cuda()\no -= loss", 'torch.full((), -1.5, device="cuda")'),
    ("z = torch.tensor(-0.0, device=device)\nz += loss", "torch.full((), -0.0, device=device)"),
    ("h = torch.tensor(1.0, dtype=torch.float16, device=device)\nh *= loss",
     "torch.ones((), dtype=torch.float16, device=device)"),
])
def test_built_on_the_device_with_the_dtype_torch_tensor_gave_it(body, becomes):
    (after,) = fixed(body)
    assert becomes in after


@pytest.mark.parametrize("body", [
    "buf = torch.tensor([0.0, 0.0], device=device)\nbuf[0] = loss",  # no fill says [0.0, 0.0] as it is
    "acc = torch.tensor(0.0).to(x)\nacc += loss",  # .to(x) also takes x's dtype
])
def test_no_fix_where_none_keeps_the_results(body):
    assert fixed(body) == []
    assert [d.code for d in check(src(HEAD) + "".join(f"    {line}\n" for line in src(body).splitlines()))
            ].count("SS501") == 1  # the finding stays


def test_two_hoists_get_names_of_their_own_and_none_the_file_uses():
    text = src(HEAD).replace("import torch\n", "import torch\nconst_tensor = 'taken'\n") + \
        "    a = x * torch.tensor([1.0, 2.0, 3.0], device=device)\n" \
        "    b = x * torch.tensor([3.0, 2.0, 1.0], device=device)\n"
    names = []
    for diag in check(text):
        if diag.code == "SS501":
            (fix,) = real_fixes(diag, text)
            names.append(fix.edits[1].new_text)
    assert names == ["const_tensor_2", "const_tensor_3"]


def test_ss101_sums_in_the_dtype_python_summed_in():
    def fix_of(start: str, read: str) -> str | None:
        text = src(HEAD) + f"    total += {read}.item()\n"
        text = text.replace("for x in loader:", f"total = {start}\nfor x in loader:")
        fixes = [f for d in check(text) if d.code == "SS101" for f in real_fixes(d, text)]
        return fixes[0].edits[0].new_text if fixes else None

    assert fix_of("0.0", "loss") == "loss.detach().double()"
    assert fix_of("0.0", "model(x).sum()") == "model(x).sum().detach().double()"
    assert fix_of("0", "(x > 0).sum()") == "(x > 0).sum().detach()"
    assert fix_of("0", "loss") == "(loss.detach().double() if loss.is_floating_point() else loss.detach())"
    assert fix_of("0", "model(x).sum()") is None  # a float or an integer: cannot be told
    assert fix_of("start_value", "loss") is None


def test_ss502_no_single_iterator_for_a_loop_that_runs_every_epoch():
    head = ("import torch\nfrom torch.profiler import profile, schedule\n"
            "with profile(schedule=schedule(wait=0, warmup=0, active=3)) as prof:\n")
    once = head + "    for x in loader:\n        model(x).sum().backward()\n        prof.step()\n"
    every_epoch = head + ("    for epoch in range(3):\n        for x in loader:\n"
                          "            model(x).sum().backward()\n            prof.step()\n")

    def ss502_fixes(text):
        return [f.title for d in check(text) if d.code == "SS502" for f in d.fixes if not f.title.startswith("Ignore")]

    assert ss502_fixes(once) == ["Create the iterator before the profiled window"]
    assert [d.code for d in check(every_epoch)].count("SS502") == 1 and ss502_fixes(every_epoch) == []


def test_ss202_leaves_a_reading_also_used_as_a_timestamp():
    text = src("""
        import time
        t0 = time.time()
        work()
        elapsed = time.time() - t0
        """)
    (diag,) = [d for d in check(text) if d.code == "SS202"]
    assert [f.title for f in editor_fixes(diag, text)][0] == "Use time.perf_counter() for this duration"
    stamped = text.replace("work()\n", "work()\nprint('started at', time.ctime(t0))\n")
    (diag,) = [d for d in check(stamped) if d.code == "SS202"]
    assert [f.title for f in editor_fixes(diag, stamped)] == ["Ignore SS202 on this line"]


def test_ss405_keeps_the_name_of_a_trace_the_program_reads_back():
    export = 'import json\nimport torch\nprof = None\nprof.export_chrome_trace("trace.json")\n'

    def renames(text):
        return [f.title for d in check(text) if d.code == "SS405" for f in editor_fixes(d, text)
                if not f.title.startswith("Ignore")]

    assert renames(export) == ["Add the time and the process id to the trace name"]
    read_back = export + 'events = json.load(open("trace.json"))\n'
    assert [d.code for d in check(read_back)].count("SS405") == 1 and renames(read_back) == []
