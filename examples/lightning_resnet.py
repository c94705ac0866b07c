"""A Lightning training run of torchvision's ResNet-18 on synthetic images.

The loop belongs to Lightning, so the step is a hook, not a loop in this file:
`stepscope profile examples/lightning_resnet.py --function training_step`
Needs `lightning` (or `pytorch_lightning`) and `torchvision`; uses a GPU when there is one.
"""

import os

import torch
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

try:
    import lightning as L
except ImportError:  # the older package name
    import pytorch_lightning as L
import torchvision


class ResNetClassifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torchvision.models.resnet18(num_classes=10)

    def training_step(self, batch, batch_idx):
        images, labels = batch
        logits = self.net(images)
        loss = F.cross_entropy(logits, labels)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)


def main() -> None:
    torch.manual_seed(0)
    images = torch.randn(64 * 24, 3, 96, 96)
    labels = torch.randint(0, 10, (64 * 24,))
    loader = DataLoader(TensorDataset(images, labels), batch_size=64, num_workers=2)
    trainer = L.Trainer(max_steps=24, logger=False, enable_progress_bar=False,
                        enable_checkpointing=os.environ.get("STEPSCOPE_RUN") != "1",
                        enable_model_summary=False, accelerator="auto", devices=1)
    trainer.fit(ResNetClassifier(), loader)


if __name__ == "__main__":
    main()
