# Per-key metric sums built in a dict comprehension every step, added to in place.
import torch

torch.manual_seed(1)
device = torch.device("cpu")
model = torch.nn.Linear(3, 2)
lr = 0.01
keys = ("mse", "l1")
history = []

for step in range(12):
    x, y = torch.randn(5, 3), torch.randn(5, 2)
    sums = {k: torch.tensor(0.0, device=device) for k in keys}
    out = model(x)
    sums["mse"] += torch.nn.functional.mse_loss(out, y)
    sums["l1"] += torch.nn.functional.l1_loss(out, y)
    loss = sums["mse"] + 0.1 * sums["l1"]
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
            p.grad = None
    history.append({k: v.item() for k, v in sums.items()})
print(history[0], history[-1])
