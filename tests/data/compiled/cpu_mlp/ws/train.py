import torch

from model import MLP

torch.manual_seed(0)
model = MLP()
cmodel = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 32)
y = torch.randint(0, 4, (16,))
for i in range(8):
    out = cmodel(x)
    loss = torch.nn.functional.cross_entropy(out, y)
    loss.backward()
    opt.step()
    opt.zero_grad()
