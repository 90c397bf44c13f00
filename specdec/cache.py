"""A causal LM plus its KV cache: what the target and every model drafter feed tokens through.

Its own module so that imports run one way: `decoding` (the decoder) and `drafters` (the proposers) both
use it, and neither imports the other for it.

Cache invariant (target and model drafters): the cache holds keys/values for a prefix of the tokens so
far, never a token that is not in the sequence. Each forward feeds exactly the tokens the cache lacks, so
the prefill, the normal step and the step after an all-accepted block (where the draft never saw its own
last token) are one code path. Rejected positions are cropped away after verification.
"""

from __future__ import annotations

import inspect

import torch


class CachedLM:
    """A causal LM plus its KV cache, fed the part of a token sequence it has not seen yet."""

    def __init__(self, model: torch.nn.Module, vocab_size: int, role: str = "model"):
        from transformers import DynamicCache

        self.model = model
        self.role = role  # "target" or "draft", for error messages
        self.vocab_size = vocab_size  # V: the ids sampled from (the target's, see resolve_vocab_size)
        self.rows = min(output_size(model), vocab_size)  # logit rows this model scores (< V: ids it cannot produce)
        self.cache = DynamicCache(config=model.config)
        # transformers >= 5.2x renamed `past_key_values` to `cache`; accept both.
        params = inspect.signature(model.forward).parameters
        self.cache_kwarg = "cache" if "cache" in params else "past_key_values"

    @property
    def cached(self) -> int:
        return self.cache.get_seq_length()

    @torch.inference_mode()
    def logits(self, seq: torch.Tensor, n_logits: int) -> torch.Tensor:
        """seq (1, n) -> (n_logits, V) float32 logits of the last n_logits positions."""
        new = seq[:, self.cached:]  # (1, n_new): everything not yet in the cache
        if new.shape[1] < n_logits:
            raise RuntimeError(f"cache holds {self.cached} of {seq.shape[1]} tokens; cannot score {n_logits}")
        out = self.model(input_ids=new, use_cache=True, logits_to_keep=n_logits, **{self.cache_kwarg: self.cache})
        logits = out.logits[0, -n_logits:, : self.rows].float()
        check_logits(logits, self.role)
        if self.rows < self.vocab_size:
            # Ids this model cannot produce get logit -inf, so probability 0: for a draft that is q = 0,
            # which keeps verification exact (Leviathan et al. 2022: any q works).
            logits = torch.nn.functional.pad(logits, (0, self.vocab_size - self.rows), value=float("-inf"))
        return logits

    def rollback(self, length: int) -> None:
        """Drop cached positions >= length (rejected drafts)."""
        extra = self.cached - length
        if extra > 0:
            self.cache.crop(-extra)


def grown(buffer: torch.Tensor, size: int, dim: int = 0) -> torch.Tensor:
    """`buffer`, or a copy at least twice as long along `dim`, with room for `size` entries there: buffers grow
    with what a run makes, never with what it may make."""
    if buffer.shape[dim] >= size:
        return buffer
    shape = list(buffer.shape)
    shape[dim] = max(size, 2 * shape[dim])
    bigger = buffer.new_empty(shape)
    bigger.narrow(dim, 0, buffer.shape[dim]).copy_(buffer)
    return bigger


def check_logits(logits: torch.Tensor, role: str) -> None:
    """NaN or +inf logits (broken weights, overflow in half precision) are an error, never a token.

    -inf is legal (a masked token), but not on every token of a row. One host sync per forward pass.
    """
    if not bool(((logits < float("inf")).all() & (logits.amax(-1) > float("-inf")).all()).item()):
        kind = "NaN" if bool(torch.isnan(logits).any()) else "+inf" if bool(torch.isposinf(logits).any()) else "all -inf"
        raise FloatingPointError(
            f"the {role} model produced {kind} logits: its weights or dtype are broken "
            f"(no token can be drawn from them)")


def output_size(model: torch.nn.Module) -> int:
    """Rows of the model's output head (often padded beyond its tokenizer's size)."""
    emb = model.get_output_embeddings()
    return emb.out_features if hasattr(emb, "out_features") else model.config.vocab_size


def input_size(model: torch.nn.Module) -> int:
    """Rows of the model's input embedding: the ids it can read."""
    return model.get_input_embeddings().num_embeddings


def assert_cache_invariant(lm: CachedLM, n: int, lagging_ok: bool = False) -> None:
    """After a step: the cache holds exactly the first n - 1 positions (never a rejected or future token);
    with lagging_ok (a draft, which never fed its own last proposal, or a hybrid's model, idle during
    n-gram steps) it may hold fewer."""
    if lm.cached > n - 1 or (not lagging_ok and lm.cached != n - 1):
        raise AssertionError(f"cache holds {lm.cached} positions but only {n - 1} tokens are final")
    for layer in lm.cache.layers:
        if layer.is_initialized and layer.keys.shape[-2] != lm.cached:
            raise AssertionError(f"layer cache length {layer.keys.shape[-2]} != {lm.cached}")
