"""Train a tiny GPT-2 (random weights, from a config) with HF's Trainer for a few
steps and print the losses (JSON). ``python hf_trainer.py compile|eager OUTPUT_DIR``;
``compile`` sets ``TrainingArguments(torch_compile=True)`` (accelerate then calls
torch.compile on the model)."""
import json
import sys
import warnings

import torch
import transformers

how, output_dir = sys.argv[1], sys.argv[2]
warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()

torch.manual_seed(0)
config = transformers.GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2)
model = transformers.GPT2LMHeadModel(config)
ids = torch.randint(0, 64, (16, 8))
dataset = [{"input_ids": row, "labels": row} for row in ids]
losses = []


class Record(transformers.TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            losses.append(logs["loss"])


arguments = transformers.TrainingArguments(
    output_dir=output_dir, max_steps=4, per_device_train_batch_size=4, learning_rate=1e-2, logging_steps=1,
    save_strategy="no", report_to=[], use_cpu=True, seed=0, dataloader_num_workers=0,
    torch_compile=how == "compile", torch_compile_backend="eager" if how == "compile" else None,
)
trainer = transformers.Trainer(model=model, args=arguments, train_dataset=dataset, callbacks=[Record()])
trainer.train()
wrapped = trainer.model_wrapped
print(json.dumps({"losses": losses, "wrapped": type(wrapped).__name__,
                  "unwrapped": type(trainer.accelerator.unwrap_model(wrapped)).__name__}))
