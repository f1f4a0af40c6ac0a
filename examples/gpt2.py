"""GPT-2 from HuggingFace ``transformers`` (random weights from a small config,
no downloads), compiled with ``torch.compile`` and compared with eager.

Run it through bytegraph with ``bytegraph run examples/gpt2.py``.
"""
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.utils import logging as hf_logging

hf_logging.set_verbosity_error()
torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=1000, n_positions=128,
                    bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(config).eval()
input_ids = torch.randint(0, config.vocab_size, (2, 16))

compiled = torch.compile(model, backend="eager")
start = time.perf_counter()
out = compiled(input_ids)
first_call = time.perf_counter() - start
ref = model(input_ids)
diff = (out.logits - ref.logits).abs().max().item()
print(f"GPT-2 (2 layers, 64 wide), backend=eager: max abs diff vs eager {diff:.2e} (first call {first_call:.2f} s)")
assert diff < 1e-5, diff
