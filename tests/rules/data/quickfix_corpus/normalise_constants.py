# Image normalisation constants built and moved every step, only read: safe to build once.
import torch

torch.manual_seed(3)
device = torch.device("cpu")
model = torch.nn.Conv2d(3, 2, 3)
lr = 0.01

for step in range(12):
    images = torch.rand(2, 3, 6, 6)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1).to(device)
    std = torch.tensor([0.229, 0.224, 0.225], device=device).view(1, 3, 1, 1)
    x = (images.to(device) - mean) / std
    loss = model(x).abs().mean()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
            p.grad = None
    print(step, repr(loss.item()))
