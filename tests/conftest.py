"""Shared fixtures: offline environment and tiny random transformers models."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest
import torch


def make_tiny_lm(seed: int, vocab_size: int = 12, init_scale: float = 0.6, layers: int = 2):
    """A random Llama-style causal LM small enough to enumerate every sequence.

    A large init range makes the next-token distributions peaked and different between seeds, so
    a wrong verification rule shows up in the statistics.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size, hidden_size=16, intermediate_size=32, num_hidden_layers=layers,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
        initializer_range=init_scale, tie_word_embeddings=False,
        bos_token_id=0, eos_token_id=1, pad_token_id=None,
    )
    torch.manual_seed(seed)  # model construction only; decoding uses explicit generators
    model = LlamaForCausalLM(config).eval()
    return model


@pytest.fixture(scope="session")
def tiny_pair():
    return make_tiny_lm(seed=1), make_tiny_lm(seed=2)
