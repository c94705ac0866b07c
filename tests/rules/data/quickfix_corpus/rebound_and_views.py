# An accumulator rebound every micro-batch, a scale changed through a view, and a temperature
# that asks for gradients: none may be shared between steps.
import torch

torch.manual_seed(6)
device = torch.device("cpu")
model = torch.nn.Linear(3, 1)
lr = 0.05
grads = []

for step in range(12):
    x = torch.randn(4, 3)
    total = torch.tensor(0.0, device=device)
    for part in x.split(2):
        total = total + model(part).mean()
    scale = torch.tensor(2.0, device=device)
    scale.view(1).mul_(0.5)
    temperature = torch.tensor(1.0, device=device, requires_grad=True)
    loss = total * scale / temperature
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
            p.grad = None
    grads.append(repr(temperature.grad.item()))
    print(step, repr(loss.item()), repr(scale.item()))
print(grads)
