"""``peft`` LoRA adapters wrapped around HuggingFace models built from small
configs (no downloads): the adapted forward, and a training step where only
the adapter weights get gradients."""
from __future__ import annotations

from benchmarks.models import Case, Entry, register
from benchmarks.models.hf import causal_lm, gpt2_config, lm_case, lm_train_case, quiet

PEFT = ("peft", "transformers")


def _lora(model, targets: list[str]):
    from peft import LoraConfig, get_peft_model

    return get_peft_model(model, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=targets))


def lora_gpt2() -> Case:
    model = _lora(quiet().GPT2LMHeadModel(gpt2_config()), ["c_attn"]).eval()
    return lm_case(model)


def lora_llama_train() -> Case:
    model = _lora(causal_lm("Llama"), ["q_proj", "v_proj"]).train()

    return lm_train_case(model)


register(Entry("lora_gpt2", lora_gpt2, "peft LoRA (r=4) on HF GPT-2 attention, inference", requires=PEFT))
register(Entry("lora_llama_train", lora_llama_train, "peft LoRA (r=4) on HF Llama q/v, training step (labels)",
               requires=PEFT))
