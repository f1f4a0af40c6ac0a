"""torch.nn.TransformerEncoder (torch's own module code), compiled with
``torch.compile`` and compared with eager.

Run it through bytegraph with ``bytegraph run examples/transformer_encoder.py``
(``torch.compile`` is then served by bytegraph), or with plain ``python`` to
compare against torch's own frontend.
"""
import time

import torch
import torch.nn as nn

torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)
model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
x = torch.randn(4, 16, 64)

for backend in ("eager", "inductor"):
    compiled = torch.compile(model, backend=backend)
    start = time.perf_counter()
    out = compiled(x)
    first_call = time.perf_counter() - start
    ref = model(x)
    diff = (out - ref).abs().max().item()
    print(f"TransformerEncoder, backend={backend}: max abs diff vs eager {diff:.2e} "
          f"(first call {first_call:.2f} s)")
    assert diff < 1e-5, diff

with torch.no_grad():  # inference: takes the module's fused fast path
    compiled = torch.compile(model, backend="eager")
    diff = (compiled(x) - model(x)).abs().max().item()
    print(f"TransformerEncoder under no_grad, backend=eager: max abs diff vs eager {diff:.2e}")
    assert diff < 1e-5, diff
