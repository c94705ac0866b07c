"""Which loop or function of a file is the step, when no flag names it: the sources are made here, in
the shapes real programs have (a LightningModule trained by `trainer.fit`, an HF Trainer, a loop that
calls a method doing backward); what is chosen, or listed, is what `stepscope profile FILE` does."""

from __future__ import annotations

import textwrap

import pytest

from stepscope.source.candidates import NoClearStep, choose, step_function_at, step_functions, step_loops


def _src(text: str) -> str:
    return textwrap.dedent(text)


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


LIGHTNING = _src("""\
    import lightning as L
    import torch
    from torch import nn


    class Generator(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = nn.Sequential(nn.Linear(4, 4))

        def forward(self, x):
            return self.model(x)


    class LitModel(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = Generator()

        def training_step(self, batch, batch_idx):
            loss = self.model(batch).sum()
            return loss

        def validation_step(self, batch, batch_idx):
            return self.model(batch).sum()

        def backward(self, loss):
            loss.backward()


    def main():
        model = LitModel()
        for name in ["a", "b"]:  # not a step
            print(name)
        trainer = L.Trainer(max_steps=10)
        trainer.fit(model, [torch.randn(2, 4)])


    main()
    """)


def test_a_lightning_module_trained_by_fit_is_its_training_step():
    chosen = choose(LIGHTNING)
    assert chosen.kind == "function" and chosen.function == "LitModel.training_step"
    assert chosen.line == _line(LIGHTNING, "def training_step") and chosen.defined_here
    assert chosen.flag == "--function LitModel.training_step"
    assert chosen.reason == (f"a LightningModule's training step, run by trainer.fit() at line "
                             f"{_line(LIGHTNING, 'trainer.fit(')}")
    # its validation step is one too (an inference step), but no helper around the step is, nor forward
    names = [f.function for f in step_functions(LIGHTNING)]
    assert names == ["LitModel.training_step", "LitModel.validation_step"]


def test_a_module_class_imported_from_elsewhere_is_named_with_its_module():
    source = _src("""\
        from lightning.pytorch import Trainer
        from models.lit import LitModel

        Trainer(max_epochs=1).fit(LitModel(), datamodule=None)
        """)
    chosen = choose(source)
    assert chosen.function == "models.lit:LitModel.training_step" and not chosen.defined_here
    assert chosen.line == 4 and chosen.reason == "the training_step of LitModel, run by Trainer(...).fit() at line 4"


def test_lightning_cli_runs_the_training_step_of_the_class_it_is_given():
    source = _src("""\
        from lightning.pytorch.cli import LightningCLI
        from lightning.pytorch import LightningModule


        class Base(LightningModule):
            def training_step(self, batch, batch_idx):
                return batch.sum()


        class AutoEncoder(Base):
            def test_step(self, batch, batch_idx):
                return batch.sum()


        LightningCLI(AutoEncoder)
        """)
    chosen = choose(source)
    assert chosen.function == "Base.training_step"  # where the method the class runs is defined
    assert chosen.reason.endswith("run by LightningCLI() at line 15")


HF = _src("""\
    from transformers import Trainer, TrainingArguments
    {subclass}

    def main(model, data):
        model.train()  # a module's train mode, not training
        args = TrainingArguments("out", max_steps=10)
        trainer = {cls}(model=model, args=args, train_dataset=data)
        trainer.train()
    """)


@pytest.mark.parametrize("subclass, cls, expected, here", [
    ("", "Trainer", "transformers.trainer:Trainer.training_step", False),
    ("\nclass MyTrainer(Trainer):\n    def compute_loss(self, model, inputs):\n        return model(**inputs).loss\n",
     "MyTrainer", "transformers.trainer:Trainer.training_step", False),
    ("\nclass MyTrainer(Trainer):\n    def training_step(self, model, inputs, n=None):\n        return 0.0\n",
     "MyTrainer", "MyTrainer.training_step", True),
])
def test_an_hf_trainers_train_runs_its_training_step(subclass: str, cls: str, expected: str, here: bool):
    source = HF.format(subclass=subclass, cls=cls)
    chosen = choose(source)
    assert (chosen.function, chosen.defined_here) == (expected, here)
    assert chosen.runs == ((_line(source, "trainer.train()"), 4, "trainer.train()"),)


def test_a_trainer_whose_framework_the_file_does_not_say_runs_nothing_known():
    source = _src("""\
        from mylib import Trainer

        trainer = Trainer()
        trainer.fit(model)
        trainer.train()
        """)
    assert step_functions(source) == []
    with pytest.raises(NoClearStep) as e:
        choose(source)
    assert e.value.candidates == [] and e.value.loops == []


DDP_TRAINER = _src("""\
    class Trainer:
        def _run_batch(self, source, targets):
            self.optimizer.zero_grad()
            loss = F.cross_entropy(self.model(source), targets)
            loss.backward()
            self.optimizer.step()

        def _run_epoch(self, epoch):
            for source, targets in self.train_data:
                self._run_batch(source, targets)

        def train(self, max_epochs):
            for epoch in range(max_epochs):
                self._run_epoch(epoch)
    """)


def test_a_loop_that_calls_the_files_step_function_is_the_step_and_the_function_part_of_it():
    chosen = choose(DDP_TRAINER)
    assert chosen.kind == "loop" and chosen.line == _line(DDP_TRAINER, "for source, targets")
    assert chosen.flag == f"--line {chosen.line}"
    assert chosen.reason == "for loop in Trainer._run_epoch() that calls a step function"
    # the function is step-like on its own too (the editor's lens), by what it does
    [function] = step_functions(DDP_TRAINER)
    assert function.function == "Trainer._run_batch" and function.reason == "calls backward and steps an optimizer"
    assert [lp.line for lp in step_loops(DDP_TRAINER) if lp.is_step] == [chosen.line]


def test_a_closure_an_optimizer_step_is_passed_belongs_to_the_loops_step():
    source = _src("""\
        for x in data:
            def closure():
                opt.zero_grad()
                loss = model(x).sum()
                loss.backward()
                return loss
            opt.step(closure)
        """)
    assert choose(source).kind == "loop"


def test_a_loop_that_only_calls_a_model_does_not_hide_a_training_step_apart_from_it():
    source = LIGHTNING + _src("""\
        for batch in test_data:
            preds = model(batch)
        """)
    with pytest.raises(NoClearStep) as e:
        choose(source)
    assert [c.flag for c in e.value.candidates] == ["--function LitModel.training_step",
                                                     f"--line {_line(source, 'for batch in test_data')}"]


def test_several_training_steps_are_listed_and_none_is_picked():
    source = _src("""\
        def train_step(model, batch):
            return model(batch).sum()

        class Agent:
            def train_step(self, batch):
                return batch

        def update(model, opt, batch):
            model(batch).sum().backward()
            opt.step()
        """)
    with pytest.raises(NoClearStep) as e:
        choose(source)
    assert [(c.flag, c.reason) for c in e.value.candidates] == [
        ("--function train_step", "named train_step"), ("--function Agent.train_step", "named train_step"),
        ("--function update", "calls backward and steps an optimizer")]


def test_a_function_that_only_calls_backward_is_listed_rather_than_picked():
    source = _src("""\
        def update(model, opt, batch):
            model(batch).sum().backward()
            opt.step()

        def evaluate(model, batch):
            return model(batch)
        """)
    with pytest.raises(NoClearStep) as e:
        choose(source)
    assert [c.flag for c in e.value.candidates] == ["--function update"]


def test_an_inference_step_is_picked_where_nothing_trains():
    source = _src("""\
        import pytorch_lightning as pl

        class Classifier(pl.LightningModule):
            def predict_step(self, batch, batch_idx):
                return self(batch)

        trainer = pl.Trainer()
        trainer.predict(Classifier(), dataloaders=[1])
        """)
    chosen = choose(source)
    assert chosen.function == "Classifier.predict_step" and not chosen.training
    assert chosen.reason == "a LightningModule's predict step, run by trainer.predict() at line 8"


def test_the_step_function_a_line_is_in():
    line = _line(LIGHTNING, "loss = self.model(batch).sum()")
    assert step_function_at(LIGHTNING, line).function == "LitModel.training_step"
    assert step_function_at(LIGHTNING, _line(LIGHTNING, "loss.backward()")) is None  # a helper, no step
    assert step_function_at(LIGHTNING, 1) is None
