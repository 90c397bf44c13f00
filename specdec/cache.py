"""A causal LM plus its KV cache: what the target and every model drafter feed tokens through, and the
vocabulary checks that decide which ids a pair may draw (`resolve_vocab_size`, `check_ids`).

Its own module so that imports run one way: `decoding` (the decoder) and `drafters` (the proposers) both
use it, and neither imports the other for it.

Two seams for token trees (SpecInfer, Medusa, EAGLE): `logits` scores the last tokens of a sequence either as a
chain (causal attention, positions in order) or as a tree of proposed nodes, given each node's parent (one pass:
each node attends to the prefix, its ancestors and itself, at position prefix + depth: `tree_attention`); and
`commit` keeps the final tokens: a chain's are a prefix of what was fed, a tree's the prefix and the accepted
path, moved into contiguous slots (their keys were computed at the path's own positions, so nothing is re-rotated).

Cache invariant (target and model drafters): the cache holds keys/values for a prefix of the tokens so
far, never a token that is not in the sequence. Each forward feeds exactly the tokens the cache lacks, so
the prefill, the normal step and the step after an all-accepted block (where the draft never saw its own
last token) are one code path. Rejected positions are cropped away after verification.
"""

from __future__ import annotations

import inspect

import torch

from .checks import as_count


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
    def logits(self, seq: torch.Tensor, n_logits: int, parents: list[int] | None = None) -> torch.Tensor:
        """seq (1, n) -> (n_logits, V) float32 logits of the last n_logits positions.

        With `parents`, the last len(parents) tokens of seq are the nodes of a tree (parents[i]: the index of node
        i's parent among them, -1 for a child of the last token before them; parents before children): each node is
        scored as if it followed its own root-to-node path (tree_attention). The cache may already hold some of the
        nodes (a draft growing its tree one depth per pass): the pass feeds the rest."""
        new = seq[:, self.cached:]  # (1, n_new): everything not yet in the cache
        if new.shape[1] < n_logits:
            raise RuntimeError(f"cache holds {self.cached} of {seq.shape[1]} tokens; cannot score {n_logits}")
        tree = {}
        if parents is not None:
            mask, positions = tree_attention(parents, seq.shape[1] - len(parents), self.cached, self.model.dtype,
                                             new.device)
            tree = {"attention_mask": mask, "position_ids": positions}
        out = self.model(input_ids=new, use_cache=True, logits_to_keep=n_logits, **tree,
                         **{self.cache_kwarg: self.cache})
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

    @torch.inference_mode()
    def commit(self, length: int, path: list[int] | None = None) -> None:
        """Only the first `length` tokens of the sequence are final; keep nothing else.

        A chain (path None): its final tokens are a prefix of what was fed, so this is `rollback(length)`. A tree:
        `path` lists the cache slots of the accepted nodes, in order (slots at or after the first node); they are
        moved to the slots right after the ones before it, then everything past `length` is dropped."""
        if path:
            start = length - len(path)  # the slot the path's first node moves to
            slots = torch.tensor(path, dtype=torch.long)
            if not (slots >= start).all() or (slots.diff() <= 0).any() or int(slots[-1]) >= self.cached:
                raise ValueError(f"path {path} is not increasing cache slots from {start} below {self.cached}")
            for layer in self.cache.layers:
                if layer.is_initialized:
                    index = slots.to(layer.keys.device)
                    layer.keys[..., start:length, :] = layer.keys.index_select(-2, index)
                    layer.values[..., start:length, :] = layer.values.index_select(-2, index)
        self.rollback(length)


def tree_attention(parents: list[int], n_prefix: int, past: int, dtype: torch.dtype,
                   device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The attention mask and positions of one pass over a sequence that ends in a tree of nodes.

    The sequence: n_prefix tokens (causal), then the nodes, node i at slot n_prefix + i; parents[i] is an earlier
    node's index, or -1 for a child of the last prefix token. The pass feeds the slots from `past` (those before it
    are cached) to the end: N = n_prefix + len(parents) - past rows. Returns an additive mask (1, 1, N, past + N) in
    the model's dtype (0 = attend, the dtype's min = masked: a prefix token sees the tokens up to itself, a node the
    whole prefix, its ancestors and itself, never a sibling or a cousin) and position_ids (1, N): a prefix token's
    slot, and a node's n_prefix + its depth - 1 (a child of the prefix sits where a chain's first draft would)."""
    n_nodes = len(parents)
    total = n_prefix + n_nodes
    if not 0 <= past <= total or past > n_prefix + n_nodes:
        raise ValueError(f"cannot feed from slot {past} of a sequence of {total}")
    allowed = torch.zeros(total, total, dtype=torch.bool)
    allowed[:n_prefix, :n_prefix] = torch.ones(n_prefix, n_prefix, dtype=torch.bool).tril()
    allowed[n_prefix:, :n_prefix] = True
    for i, parent in enumerate(parents):
        if not (isinstance(parent, int) and -1 <= parent < i):
            raise ValueError(f"node {i}'s parent must be -1 or an earlier node, got {parent!r}")
        row = n_prefix + i
        allowed[row, row] = True
        if parent >= 0:
            allowed[row, n_prefix:] |= allowed[n_prefix + parent, n_prefix:]
    mask = torch.zeros(1, 1, total - past, total, dtype=dtype, device=device)
    mask.masked_fill_(~allowed[past:].to(device), torch.finfo(dtype).min)
    depth = [d - 1 for d in node_depths(parents)]  # a child of the prefix sits where a chain's first draft would
    positions = list(range(n_prefix)) + [n_prefix + d for d in depth]
    return mask, torch.tensor([positions[past:]], dtype=torch.long, device=device)


def node_depths(parents: list[int]) -> list[int]:
    """Each node's depth, from 1 (a child of the prefix): parents[i] is -1 or an earlier node's index."""
    depths: list[int] = []
    for parent in parents:
        depths.append(1 if parent < 0 else depths[parent] + 1)
    return depths


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


def resolve_vocab_size(target: torch.nn.Module, draft: torch.nn.Module | None = None,
                       vocab_size: int | None = None) -> int:
    """V, the ids a token is drawn from: the target's output rows, or `vocab_size` (the tokenizer's size)
    when the rows beyond it are padding, in both models and in the baseline alike.

    A draft head with fewer rows is fine: ids it cannot produce get q = 0 (exact). Refused, naming the
    sizes: a draft head with MORE rows than V (it could propose ids the target cannot score), or a draft
    that cannot READ every id the target may emit (input embedding < V), unless `vocab_size` says the
    rows beyond it are padding (then every head is cut to it).
    """
    v_target = output_size(target)
    if vocab_size is None:
        V = v_target
    else:
        V = as_count(vocab_size, f"vocab_size must be an integer in [1, {v_target}] (the target's output rows)",
                     1, v_target)
    if draft is None:
        return V
    hint = ("If the rows beyond the tokenizer are padding, pass vocab_size=<the tokenizer's size>; "
            "otherwise this pair cannot be used")
    if vocab_size is None and output_size(draft) > V:
        raise ValueError(f"the draft's head has {output_size(draft)} rows, the target's {v_target}: the draft "
                         f"could propose ids the target cannot score. {hint}")
    if input_size(draft) < V:
        raise ValueError(f"the draft reads {input_size(draft)} ids, but the target may emit any of {V}: the "
                         f"draft could not read the target's tokens. {hint}")
    return V


def check_ids(input_ids: torch.Tensor, *models: torch.nn.Module | None) -> None:
    """Every id of the prompt is one that each model can read."""
    limit = min(input_size(m) for m in models if m is not None)
    low, high = int(input_ids.min()), int(input_ids.max())
    if low < 0 or high >= limit:
        bad = low if low < 0 else high
        raise ValueError(f"input_ids holds id {bad}, outside the models' vocabulary [0, {limit})")


def assert_cache_invariant(lm: CachedLM, n: int, lagging_ok: bool = False) -> None:
    """After a step: the cache holds exactly the first n - 1 positions (never a rejected or future token);
    with lagging_ok (a draft, which never fed its own last proposal, or a hybrid's model, idle during
    n-gram steps) it may hold fewer."""
    if lm.cached > n - 1 or (not lagging_ok and lm.cached != n - 1):
        raise AssertionError(f"cache holds {lm.cached} positions but only {n - 1} tokens are final")
    for layer in lm.cache.layers:
        if layer.is_initialized and layer.keys.shape[-2] != lm.cached:
            raise AssertionError(f"layer cache length {layer.keys.shape[-2]} != {lm.cached}")
