"""HuggingFace ``transformers`` entries, built from small configs (random
weights, no downloads). Models are called as users call them (keyword
arguments, default ``use_cache``), so outputs include HF ``Cache`` objects."""
from __future__ import annotations

import torch

from benchmarks.models import Case, Entry, Inputs, register

VOCAB = 1000


def _quiet():
    import transformers
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    return transformers


def _ids(*shape: int) -> torch.Tensor:
    return torch.randint(1, VOCAB, shape)


def _gpt2_config(**extra):
    t = _quiet()
    return t.GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=VOCAB, n_positions=128,
                        bos_token_id=0, eos_token_id=0, **extra)


def gpt2() -> Case:
    t = _quiet()
    model = t.GPT2LMHeadModel(_gpt2_config()).eval()
    return Case(model, Inputs(kwargs={"input_ids": _ids(2, 16)}), Inputs(kwargs={"input_ids": _ids(2, 24)}))


def gpt2_train() -> Case:
    """GPT-2 language-model training step: ``labels`` make the model compute the
    shifted cross-entropy itself; dropout is off so eager and compiled agree."""
    t = _quiet()
    model = t.GPT2LMHeadModel(_gpt2_config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)).train()

    def batch(b: int, s: int) -> Inputs:
        ids = _ids(b, s)
        return Inputs(kwargs={"input_ids": ids, "labels": ids})

    return Case(model, batch(2, 16), batch(2, 24), loss=lambda out: out.loss, atol=1e-4)


def bert() -> Case:
    t = _quiet()
    config = t.BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=128, max_position_embeddings=128)
    model = t.BertModel(config).eval()

    def batch(b: int, s: int) -> Inputs:
        mask = torch.ones(b, s, dtype=torch.long)
        mask[0, s // 2:] = 0  # one padded sequence
        return Inputs(kwargs={"input_ids": _ids(b, s), "attention_mask": mask,
                              "token_type_ids": torch.zeros(b, s, dtype=torch.long)})

    return Case(model, batch(2, 16), batch(2, 24))


def llama() -> Case:
    t = _quiet()
    config = t.LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                           bos_token_id=0, eos_token_id=0, pad_token_id=0)
    model = t.LlamaForCausalLM(config).eval()
    return Case(model, Inputs(kwargs={"input_ids": _ids(2, 16)}), Inputs(kwargs={"input_ids": _ids(2, 24)}))


def t5() -> Case:
    t = _quiet()
    config = t.T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
                        num_heads=4, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    model = t.T5ForConditionalGeneration(config).eval()

    def batch(b: int, s: int, d: int) -> Inputs:
        return Inputs(kwargs={"input_ids": _ids(b, s), "decoder_input_ids": _ids(b, d)})

    return Case(model, batch(2, 16, 8), batch(2, 24, 12))


def vit() -> Case:
    t = _quiet()
    config = t.ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=2,
                         num_attention_heads=4, intermediate_size=128, num_labels=10)
    model = t.ViTForImageClassification(config).eval()
    return Case(model, Inputs(kwargs={"pixel_values": torch.randn(2, 3, 32, 32)}),
                Inputs(kwargs={"pixel_values": torch.randn(5, 3, 32, 32)}))


def whisper() -> Case:
    """Whisper encoder-decoder. The encoder insists on exactly
    ``2 * max_source_positions`` input frames, so the second input changes the
    batch and the decoder length."""
    t = _quiet()
    config = t.WhisperConfig(vocab_size=VOCAB, num_mel_bins=16, encoder_layers=2, decoder_layers=2,
                             encoder_attention_heads=4, decoder_attention_heads=4, d_model=64,
                             encoder_ffn_dim=128, decoder_ffn_dim=128, max_source_positions=32,
                             max_target_positions=64, decoder_start_token_id=1, pad_token_id=0,
                             bos_token_id=1, eos_token_id=2)
    model = t.WhisperForConditionalGeneration(config).eval()

    def batch(b: int, d: int) -> Inputs:
        return Inputs(kwargs={"input_features": torch.randn(b, 16, 64), "decoder_input_ids": _ids(b, d)})

    return Case(model, batch(2, 8), batch(3, 12))


HF = ("transformers",)
register(Entry("gpt2", gpt2, "HF GPT-2 LM head, 2 layers, d=64", quick=True, requires=HF))
register(Entry("gpt2_train", gpt2_train, "HF GPT-2 training step (labels -> loss, backward)", requires=HF))
register(Entry("bert", bert, "HF BERT, 2 layers, d=64, padding mask", requires=HF))
register(Entry("llama", llama, "HF Llama causal LM, 2 layers, GQA 4/2 heads", requires=HF))
register(Entry("t5", t5, "HF T5 encoder-decoder, 2+2 layers", requires=HF))
register(Entry("vit", vit, "HF ViT image classifier, 32x32, patch 8", requires=HF))
register(Entry("whisper", whisper, "HF Whisper encoder-decoder, 2+2 layers", requires=HF))
