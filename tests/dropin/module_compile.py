import torch
from rowlib import counting


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))

    def forward(self, x):
        return self.body(x).softmax(-1)


torch.manual_seed(0)
m = Net()
x = torch.ones(2, 3)
expected = m(x)
m.compile(backend=counting)
print(type(m).__name__, torch.allclose(m(x), expected), torch.allclose(m(x), expected))
print(sorted(m.state_dict())[:2])
