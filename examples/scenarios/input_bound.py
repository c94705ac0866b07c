"""Input-bound: every sample waits on slow storage inside the DataLoader (num_workers=0).

The model is small, so the batch read holds most of the step. Expected finding: `input-bound`
(on a GPU: the GPU idles while the batch is read; on a CPU: the read dominates the step).
"""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowStorage(Dataset):
    def __init__(self, n: int, features: int, wait_s: float):
        self.n, self.features, self.wait_s = n, features, wait_s

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        time.sleep(self.wait_s)  # stands for a read from slow storage
        return torch.full((self.features,), float(i % 7)), i % 4


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = DataLoader(SlowStorage(args.steps * 4, 64, 0.003), batch_size=4, num_workers=0)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:  # the step
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
