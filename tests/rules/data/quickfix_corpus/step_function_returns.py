# The loop inside a function: the running loss tensor is returned to the caller, which adds to
# it; a hoisted tensor would be shared between calls of the step.
import torch

torch.manual_seed(5)
device = torch.device("cpu")
model = torch.nn.Linear(2, 1)
lr = 0.1


def train_epoch(batches):
    for x in batches:
        penalty = torch.tensor(0.01, device=device)
        running = torch.tensor(0.0, device=device)
        loss = model(x).pow(2).mean() + penalty * model.weight.abs().sum()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
                p.grad = None
        running.add_(loss.detach())
        yield running


outputs = []
for r in train_epoch([torch.randn(3, 2) for _ in range(12)]):
    r.mul_(2)
    outputs.append(r)
print([repr(t.item()) for t in outputs])
