# An integer step counter and a boolean flag built from literals every step, then changed in
# place: built on the device they keep their dtypes (int64, bool).
import torch

torch.manual_seed(8)
device = torch.device("cpu")
model = torch.nn.Linear(2, 2)
lr = 0.1
seen = []

for step in range(12):
    x = torch.randn(3, 2)
    loss = model(x).square().mean()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
            p.grad = None
    skipped = torch.tensor(0, device=device)
    skipped += int(loss.item() > 0.5)
    finite = torch.tensor(True).to(device)
    finite &= torch.isfinite(loss)
    offset = torch.tensor(-1.5, device=device)
    offset -= loss.detach()
    seen.append((skipped.item(), skipped.dtype, finite.item(), finite.dtype, repr(offset.item()), offset.dtype))
print(seen[0], seen[-1])
