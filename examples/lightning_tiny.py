"""A tiny Lightning training run (on the CPU; `-- --device gpu` on a GPU): a small MLP on synthetic data,
nothing downloaded.

The loop is Lightning's, so the step is a hook, not a loop of this file:
    stepscope profile examples/lightning_tiny.py --function LitClassifier.training_step
    stepscope measure examples/lightning_tiny.py --function LitClassifier.training_step
With gradient accumulation the step is one optimizer step (its micro-batches):
    stepscope profile examples/lightning_tiny.py --function LitClassifier.training_step -- --accumulate 4

The program times its own optimizer steps (a Callback, from the first micro-batch of one optimizer
step to the first of the next) and prints each on stderr as `own step N: X ms`, so a run can be
compared with Stepscope's figures for the same steps (docs/frameworks/lightning.md).
"""

import argparse
import os
import sys
import time

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset

try:
    import lightning as L
except ImportError:  # the older package name
    import pytorch_lightning as L


class Points(Dataset):
    """Synthetic points in 64 dimensions, labelled by the sign of a fixed projection."""

    def __init__(self, n: int, features: int = 64, classes: int = 10):
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, features, generator=generator)
        self.y = torch.randint(0, classes, (n,), generator=generator)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        return self.x[i], self.y[i]


class MLP(nn.Module):
    def __init__(self, features: int = 64, width: int = 256, classes: int = 10):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU())
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        h = self.body(x)
        return self.head(h)


def classification_loss(logits, labels):
    return F.cross_entropy(logits, labels)


class LitClassifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = MLP()

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        loss = classification_loss(logits, y)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


class OwnStepTimer(L.Callback):
    """The program's own step timer: one figure per optimizer step, printed on stderr."""

    def __init__(self, accumulate: int):
        self.accumulate, self.micro_batches, self.started, self.step = accumulate, 0, None, 0

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if self.micro_batches % self.accumulate == 0:
            now = time.perf_counter()
            if self.started is not None:
                print(f"own step {self.step}: {(now - self.started) * 1e3:.3f} ms", file=sys.stderr)
                self.step += 1
            self.started = now
        self.micro_batches += 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40, help="optimizer steps")
    parser.add_argument("--accumulate", type=int, default=1, help="micro-batches per optimizer step")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="cpu", help="cpu (the tests), or gpu/cuda")
    args = parser.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(Points(args.steps * args.accumulate * args.batch_size), batch_size=args.batch_size)
    trainer = L.Trainer(max_steps=args.steps, accumulate_grad_batches=args.accumulate, accelerator=args.device,
                        devices=1, logger=False, enable_progress_bar=False, enable_model_summary=False,
                        enable_checkpointing=os.environ.get("STEPSCOPE_RUN") != "1",
                        callbacks=[OwnStepTimer(args.accumulate)])
    trainer.fit(LitClassifier(), loader)


if __name__ == "__main__":
    main()
