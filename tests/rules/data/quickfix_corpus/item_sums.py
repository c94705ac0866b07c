# Running sums read back with .item() every step (a float loss sum and an integer count), read
# once after the loop.
import torch

torch.manual_seed(7)
model = torch.nn.Linear(4, 2).to(torch.float16).float()
lr = 0.1
loss_total = 0.0
correct = 0
for step in range(12):
    x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, y)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
            p.grad = None
    loss_total += loss.item()
    correct += (logits.argmax(1) == y).sum().item()
print(repr(loss_total), repr(correct), type(loss_total).__name__, type(correct).__name__)
