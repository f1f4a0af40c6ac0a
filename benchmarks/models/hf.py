"""HuggingFace ``transformers`` entries, built from small configs (random
weights, no downloads). Models are called as users call them (keyword
arguments, default ``use_cache``), so outputs include HF ``Cache`` objects."""
from __future__ import annotations

import torch

from benchmarks.models import Case, Entry, Inputs, register

VOCAB = 1000


def quiet():
    """``transformers``, its logging set to errors only."""
    import transformers
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    return transformers


def ids(*shape: int) -> torch.Tensor:
    """Random token ids (no special tokens)."""
    return torch.randint(1, VOCAB, shape)


def gpt2_config(**extra):
    """A 2-layer GPT-2 config, d=64."""
    t = quiet()
    return t.GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=VOCAB, n_positions=128,
                        bos_token_id=0, eos_token_id=0, **extra)


def lm_case(model) -> Case:
    """A language model called with ``input_ids`` (2x16, then 2x24)."""
    return Case(model, Inputs(kwargs={"input_ids": ids(2, 16)}), Inputs(kwargs={"input_ids": ids(2, 24)}))


def lm_train_case(model) -> Case:
    """A language-model training step: ``labels`` (the input ids) make the
    model compute the shifted cross-entropy itself."""
    def batch(b: int, s: int) -> Inputs:
        tokens = ids(b, s)
        return Inputs(kwargs={"input_ids": tokens, "labels": tokens})

    return Case(model, batch(2, 16), batch(2, 24), loss=lambda out: out.loss, atol=1e-4)


def gpt2() -> Case:
    t = quiet()
    model = t.GPT2LMHeadModel(gpt2_config()).eval()
    return lm_case(model)


def gpt2_train() -> Case:
    """GPT-2 language-model training step: ``labels`` make the model compute the
    shifted cross-entropy itself; dropout is off so eager and compiled agree."""
    t = quiet()
    model = t.GPT2LMHeadModel(gpt2_config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)).train()
    return lm_train_case(model)


def bert() -> Case:
    t = quiet()
    config = t.BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=128, max_position_embeddings=128)
    model = t.BertModel(config).eval()

    def batch(b: int, s: int) -> Inputs:
        mask = torch.ones(b, s, dtype=torch.long)
        mask[0, s // 2:] = 0  # one padded sequence
        return Inputs(kwargs={"input_ids": ids(b, s), "attention_mask": mask,
                              "token_type_ids": torch.zeros(b, s, dtype=torch.long)})

    return Case(model, batch(2, 16), batch(2, 24))


def causal_lm(family: str):
    """A small decoder-only LM of the Llama family (``family``: the class-name
    prefix, ``Llama`` or ``Mistral``) with grouped-query attention."""
    t = quiet()
    config = getattr(t, f"{family}Config")(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, bos_token_id=0, eos_token_id=0, pad_token_id=0)
    return getattr(t, f"{family}ForCausalLM")(config)


def _causal_lm(family: str) -> Case:
    model = causal_lm(family).eval()
    return lm_case(model)


def llama() -> Case:
    return _causal_lm("Llama")


def mistral() -> Case:
    return _causal_lm("Mistral")


def _seq2seq(model_cls: str, config) -> Case:
    """An encoder-decoder called with ``input_ids`` and ``decoder_input_ids``."""
    model = getattr(quiet(), model_cls)(config).eval()

    def batch(b: int, s: int, d: int) -> Inputs:
        return Inputs(kwargs={"input_ids": ids(b, s), "decoder_input_ids": ids(b, d)})

    return Case(model, batch(2, 16, 8), batch(2, 24, 12))


def t5() -> Case:
    config = quiet().T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
                               num_heads=4, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    return _seq2seq("T5ForConditionalGeneration", config)


def bart() -> Case:
    config = quiet().BartConfig(vocab_size=VOCAB, d_model=64, encoder_layers=2, decoder_layers=2,
                                 encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                                 decoder_ffn_dim=128, max_position_embeddings=128, pad_token_id=1,
                                 bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
    return _seq2seq("BartForConditionalGeneration", config)


def distilbert_train() -> Case:
    """Sequence classification training step: ``labels`` make the model compute
    the cross-entropy; dropout off."""
    t = quiet()
    config = t.DistilBertConfig(vocab_size=VOCAB, dim=64, n_layers=2, n_heads=4, hidden_dim=128, num_labels=3,
                                max_position_embeddings=128, dropout=0.0, attention_dropout=0.0,
                                seq_classif_dropout=0.0)
    model = t.DistilBertForSequenceClassification(config).train()

    def batch(b: int, s: int) -> Inputs:
        return Inputs(kwargs={"input_ids": ids(b, s), "attention_mask": torch.ones(b, s, dtype=torch.long),
                              "labels": torch.randint(0, 3, (b,))})

    return Case(model, batch(4, 16), batch(4, 24), loss=lambda out: out.loss, atol=1e-4)


def wav2vec2() -> Case:
    """Speech encoder on raw audio: a strided conv feature extractor, a
    weight-normed convolutional position embedding, 2 transformer layers."""
    t = quiet()
    config = t.Wav2Vec2Config(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                              conv_dim=(32, 32, 32), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
                              num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, vocab_size=32)
    model = t.Wav2Vec2ForCTC(config).eval()
    return Case(model, Inputs(kwargs={"input_values": torch.randn(2, 1600)}),
                Inputs(kwargs={"input_values": torch.randn(2, 2400)}))


def convnext() -> Case:
    t = quiet()
    config = t.ConvNextConfig(num_channels=3, hidden_sizes=[16, 32], depths=[1, 1], num_stages=2, num_labels=10,
                              patch_size=4, image_size=32)
    model = t.ConvNextForImageClassification(config).eval()
    return Case(model, Inputs(kwargs={"pixel_values": torch.randn(2, 3, 32, 32)}),
                Inputs(kwargs={"pixel_values": torch.randn(2, 3, 48, 48)}))


def vit() -> Case:
    t = quiet()
    config = t.ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=2,
                         num_attention_heads=4, intermediate_size=128, num_labels=10)
    model = t.ViTForImageClassification(config).eval()
    return Case(model, Inputs(kwargs={"pixel_values": torch.randn(2, 3, 32, 32)}),
                Inputs(kwargs={"pixel_values": torch.randn(5, 3, 32, 32)}))


def whisper() -> Case:
    """Whisper encoder-decoder. The encoder insists on exactly
    ``2 * max_source_positions`` input frames, so the second input changes the
    batch and the decoder length."""
    t = quiet()
    config = t.WhisperConfig(vocab_size=VOCAB, num_mel_bins=16, encoder_layers=2, decoder_layers=2,
                             encoder_attention_heads=4, decoder_attention_heads=4, d_model=64,
                             encoder_ffn_dim=128, decoder_ffn_dim=128, max_source_positions=32,
                             max_target_positions=64, decoder_start_token_id=1, pad_token_id=0,
                             bos_token_id=1, eos_token_id=2)
    model = t.WhisperForConditionalGeneration(config).eval()

    def batch(b: int, d: int) -> Inputs:
        return Inputs(kwargs={"input_features": torch.randn(b, 16, 64), "decoder_input_ids": ids(b, d)})

    return Case(model, batch(2, 8), batch(3, 12))


HF = ("transformers",)
register(Entry("gpt2", gpt2, "HF GPT-2 LM head, 2 layers, d=64", quick=True, requires=HF))
register(Entry("gpt2_train", gpt2_train, "HF GPT-2 training step (labels -> loss, backward)", requires=HF))
register(Entry("bert", bert, "HF BERT, 2 layers, d=64, padding mask", requires=HF))
register(Entry("llama", llama, "HF Llama causal LM, 2 layers, GQA 4/2 heads", requires=HF))
register(Entry("mistral", mistral, "HF Mistral causal LM, 2 layers, GQA 4/2 heads", requires=HF))
register(Entry("t5", t5, "HF T5 encoder-decoder, 2+2 layers", requires=HF))
register(Entry("bart", bart, "HF BART encoder-decoder, 2+2 layers", requires=HF))
register(Entry("distilbert_train", distilbert_train, "HF DistilBERT classifier training step (labels -> loss)",
               requires=HF))
register(Entry("wav2vec2", wav2vec2, "HF Wav2Vec2 CTC speech model on raw audio, 2 layers", requires=HF))
register(Entry("convnext", convnext, "HF ConvNeXt image classifier, 2 stages", requires=HF))
register(Entry("vit", vit, "HF ViT image classifier, 32x32, patch 8", requires=HF))
register(Entry("whisper", whisper, "HF Whisper encoder-decoder, 2+2 layers", requires=HF))
