"""A small DistributedDataParallel training script, launched one process per rank.

Run it as you would any DDP script:
    torchrun --nproc_per_node 2 examples/train_ddp.py
or profile its training loop on every rank (one trace per rank, one report):
    stepscope profile examples/train_ddp.py --nproc 2

Each process reads RANK, LOCAL_RANK and WORLD_SIZE (and MASTER_ADDR/MASTER_PORT) from its
environment, as torchrun and `stepscope profile --nproc` set them. It uses the nccl backend with
one GPU per rank when there are enough GPUs, else gloo on the CPU. The data is synthetic and
sharded between ranks by a DistributedSampler.
"""

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def build_model(features: int, classes: int) -> nn.Module:
    return nn.Sequential(nn.Linear(features, 256), nn.ReLU(), nn.Linear(256, classes))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--features", type=int, default=128)
    args = parser.parse_args()

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    # every rank must choose the same backend: GPUs only when each local rank has its own
    use_gpu = torch.cuda.is_available() and torch.cuda.device_count() >= local_world
    if use_gpu:
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if use_gpu else "gloo")  # reads the rank and the rendezvous from the env
    device = torch.device("cuda", local_rank) if use_gpu else torch.device("cpu")
    torch.manual_seed(0)  # the same synthetic data and initial weights on every rank

    classes = 10
    samples = args.steps * args.batch_size * dist.get_world_size()
    data = TensorDataset(torch.randn(samples, args.features), torch.randint(0, classes, (samples,)))
    sampler = DistributedSampler(data, shuffle=True, seed=0)  # each rank reads its own shard
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler, drop_last=True)
    model = DistributedDataParallel(build_model(args.features, classes).to(device),
                                    device_ids=[local_rank] if use_gpu else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()

    model.train()
    sampler.set_epoch(0)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()  # DDP averages the gradients across ranks here
        optimizer.step()

    if dist.get_rank() == 0 and os.environ.get("STEPSCOPE_RUN") != "1":
        print(f"last loss {loss.item():.4f} on {dist.get_world_size()} ranks")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
