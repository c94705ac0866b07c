"""A tiny Hugging Face Trainer run (on the CPU; `-- --device cuda` on a GPU): a 2-layer GPT-2 built from
its config (no download) on synthetic tokens, with the loss computed here (`compute_loss_func`).

The loop and the step are the Trainer's, so the step is its method, in the installed package:
    stepscope profile examples/hf_trainer_tiny.py --function transformers.trainer:Trainer.training_step
    stepscope measure examples/hf_trainer_tiny.py --function transformers.trainer:Trainer.training_step
With gradient accumulation the step is one optimizer step (its micro-batches):
    stepscope profile examples/hf_trainer_tiny.py --function transformers.trainer:Trainer.training_step \\
        -- --accumulate 4

The program times its own optimizer steps (a TrainerCallback, from one `on_step_begin` to the next)
and prints each on stderr as `own step N: X ms` (docs/frameworks/hf-trainer.md).
"""

import argparse
import sys
import tempfile
import time

import torch
from torch.nn import functional as F
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

VOCAB, LENGTH = 128, 32


class Tokens(torch.utils.data.Dataset):
    """Synthetic token sequences; each is its own label (a language model's next-token task)."""

    def __init__(self, n: int):
        generator = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, VOCAB, (n, LENGTH), generator=generator)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int):
        ids = self.ids[i]
        return {"input_ids": ids, "labels": ids}


def next_token_loss(outputs, labels, num_items_in_batch=None):
    """Cross-entropy of each position's prediction of the next token."""
    logits = outputs.logits[:, :-1].reshape(-1, VOCAB)
    targets = labels[:, 1:].reshape(-1)
    return F.cross_entropy(logits, targets)


class OwnStepTimer(TrainerCallback):
    """The program's own step timer: one figure per optimizer step, printed on stderr."""

    def __init__(self):
        self.started, self.step = None, 0

    def on_step_begin(self, args, state, control, **kwargs):
        now = time.perf_counter()
        if self.started is not None:
            print(f"own step {self.step}: {(now - self.started) * 1e3:.3f} ms", file=sys.stderr)
            self.step += 1
        self.started = now


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40, help="optimizer steps")
    parser.add_argument("--accumulate", type=int, default=1, help="micro-batches per optimizer step")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--device", default="cpu", help="cpu (the tests), or gpu/cuda")
    args = parser.parse_args()
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=VOCAB, n_positions=LENGTH,
                        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config)
    with tempfile.TemporaryDirectory() as out:  # nothing is saved: the folder only satisfies the Trainer
        training = TrainingArguments(output_dir=out, max_steps=args.steps, per_device_train_batch_size=args.batch_size,
                                     gradient_accumulation_steps=args.accumulate, use_cpu=args.device == "cpu",
                                     report_to=[], logging_strategy="no", save_strategy="no", disable_tqdm=True,
                                     dataloader_num_workers=0)
        trainer = Trainer(model=model, args=training, compute_loss_func=next_token_loss,
                          train_dataset=Tokens(args.steps * args.accumulate * args.batch_size),
                          callbacks=[OwnStepTimer()])
        trainer.train()


if __name__ == "__main__":
    main()
