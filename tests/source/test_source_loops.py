"""Finding loops and choosing the step, on sources written the way training scripts are."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from stepscope.source import (
    AmbiguousStep,
    NoStepFound,
    SourceSyntaxError,
    choose_step,
    find_loops,
    loop_at,
)

REPO = Path(__file__).resolve().parents[2]


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


EPOCH_BATCH = src("""
    def train(model, loader, optimizer, epochs):
        for epoch in range(epochs):
            for x, y in loader:
                optimizer.zero_grad()
                loss = model(x).sum()
                loss.backward()
                optimizer.step()
            val = model(x)
            print(epoch)
""")


def test_nested_epoch_and_batch_loops_pick_the_batch_loop():
    step = choose_step(EPOCH_BATCH)
    assert (step.line, step.kind, step.function) == (3, "for", "train")
    assert step.header_fetch is True
    assert step.body_lines == (4, 5, 6, 7)
    assert step.parent_line == 2 and step.depth == 1


def test_epoch_loop_with_a_validation_call_is_not_a_step():
    loops = {lp.line: lp for lp in find_loops(EPOCH_BATCH)}
    assert loops[2].is_step is False
    assert loops[2].header_fetch is False  # range(): no batch read in the header
    assert loops[3].is_step is True
    assert set(loops[3].reasons) >= {"calls backward", "steps an optimizer", "calls a model"}


def test_gradient_accumulation_picks_the_loop_that_steps_the_optimizer():
    source = src("""
        while True:
            for micro in range(accum):
                logits, loss = model(X, Y)
                scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            iter_num += 1
    """)
    step = choose_step(source)
    assert (step.line, step.kind) == (1, "while")
    inner = loop_at(source, 3)
    assert inner is not None and inner.line == 2 and inner.is_step


def test_profiler_step_marks_the_step_even_without_backward():
    source = src("""
        with torch.profiler.profile(schedule=s) as p:
            for batch in loader:
                out = encoder(batch)
                p.step()
    """)
    step = choose_step(source)
    assert step.line == 2 and "advances a profiler schedule" in step.reasons


def test_inference_loop_is_a_step():
    source = src("""
        with torch.no_grad():
            for images in loader:
                preds = model(images).argmax(1)
    """)
    assert choose_step(source).line == 2


def test_data_preparation_loops_are_not_steps():
    source = src("""
        def __getitem__(self, i):
            for _ in range(self.decode_work):
                x = torch.tanh(x * 1.0001)
            return x
        for path in files:
            data.append(load(path))
        for name, module in model.named_modules():
            print(name)
        for scheduler_step in range(3):
            scheduler.step()
    """)
    assert [lp.is_step for lp in find_loops(source)] == [False, False, False, False]
    with pytest.raises(NoStepFound):
        choose_step(source)


def test_two_training_loops_are_ambiguous_and_list_both():
    source = src("""
        def pretrain():
            for x in a:
                model(x).sum().backward(); opt.step()
        def finetune():
            for x in b:
                model(x).sum().backward(); opt.step()
    """)
    with pytest.raises(AmbiguousStep) as info:
        choose_step(source)
    assert [c.line for c in info.value.candidates] == [2, 5]
    assert "2, 5" in str(info.value)


def test_training_loop_wins_over_an_evaluation_loop():
    source = src("""
        for x, y in train_loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        for x, y in val_loader:
            out = model(x)
    """)
    assert choose_step(source).line == 1


def test_loop_at_returns_the_innermost_loop_and_none_outside():
    assert loop_at(EPOCH_BATCH, 5).line == 3
    assert loop_at(EPOCH_BATCH, 8).line == 2  # after the inner loop, still in the epoch loop
    assert loop_at(EPOCH_BATCH, 2).line == 2  # the header line itself
    assert loop_at(EPOCH_BATCH, 1) is None


def test_a_function_defined_in_a_loop_does_not_make_the_loop_a_step():
    source = src("""
        for cfg in configs:
            def closure():
                loss = model(x)
                loss.backward()
                return loss
            register(closure)
    """)
    assert [lp.is_step for lp in find_loops(source)] == [False]


def test_header_fetch_distinguishes_batch_reads_from_counters():
    source = src("""
        for i, batch in enumerate(loader): pass
        for i in range(10): pass
        for i, x in enumerate(range(3)): pass
        for x in tqdm(train_loader): pass
        for k, v in d.items(): pass
        for a, b in zip(range(3), [1, 2]): pass
        async def f():
            async for batch in stream: pass
    """)
    assert [lp.header_fetch for lp in find_loops(source)] == [True, False, False, True, False,
                                                              False, True]


def test_accepts_a_parsed_module_and_a_custom_model_name():
    tree = ast.parse("for x in loader:\n    out = denoiser(x)\n")
    assert find_loops(tree)[0].is_step is False
    assert find_loops(tree, model_names=["denoiser"])[0].is_step is True


def test_syntax_error_is_a_one_line_reason():
    with pytest.raises(SourceSyntaxError) as info:
        find_loops("for x in loader:\n    model(x\n")
    assert "\n" not in str(info.value) and info.value.line is not None


def test_project_example_step_is_the_training_loop():
    source = (REPO / "examples" / "train_cpu.py").read_text(encoding="utf-8")
    step = choose_step(source)
    lines = source.splitlines()
    assert lines[step.line - 1].strip() == "for x, y in loader:"
    assert step.function == "main" and step.header_fetch
    assert [lp for lp in find_loops(source) if lp.is_step] == [step]  # data loops are not steps
