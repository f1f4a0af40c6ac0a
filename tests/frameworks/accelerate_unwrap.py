"""accelerate's view of a compiled module: ``is_compiled_module``, ``unwrap_model``
(with and without ``keep_torch_compile``), ``has_compiled_regions``. Prints JSON."""
import json

import torch
from accelerate import Accelerator
from accelerate.utils import has_compiled_regions, is_compiled_module

model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())
compiled = torch.compile(model, backend="eager")
accelerator = Accelerator(cpu=True)
prepared = accelerator.prepare(compiled)
outer = torch.nn.Sequential(torch.compile(torch.nn.Linear(3, 3), backend="eager"))
print(json.dumps({
    "is_compiled": is_compiled_module(compiled),
    "unwrapped": type(accelerator.unwrap_model(prepared)).__name__,
    "unwrapped_params": [p is q for p, q in zip(accelerator.unwrap_model(prepared).parameters(), model.parameters())],
    "kept": type(accelerator.unwrap_model(prepared, keep_torch_compile=True)).__name__,
    "has_compiled_regions": has_compiled_regions(outer),
    "state_dict": sorted(compiled.state_dict()),
    "runs": prepared(torch.ones(2, 3)).shape[0],
}))
