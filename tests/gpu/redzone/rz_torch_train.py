# Ordinary PyTorch training steps (a 3-layer MLP, Adam), to run with red
# zones on: there must be no report at all.
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(512, 1024), torch.nn.ReLU(),
    torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
    torch.nn.Linear(1024, 10),
).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(256, 512, device="cuda")
y = torch.randint(0, 10, (256,), device="cuda")
for step in range(50):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print("loss %.4f" % float(loss))
print("done")
