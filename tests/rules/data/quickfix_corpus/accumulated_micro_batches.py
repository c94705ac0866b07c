# A loss summed over micro-batches in a tensor built every step, then one backward per step.
# Hoisting the accumulator shares it between steps: the second backward fails.
import torch

torch.manual_seed(0)
device = torch.device("cpu")
model = torch.nn.Linear(4, 1)
lr = 0.05
data = [torch.randn(6, 4) for _ in range(12)]

for step in range(12):
    loss_sum = torch.tensor(0.0, device=device)
    for chunk in data[step].split(2):
        loss_sum += model(chunk).pow(2).mean()
    loss_sum.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
            p.grad = None
    print(step, repr(loss_sum.item()))
print([p.detach().tolist() for p in model.parameters()])
