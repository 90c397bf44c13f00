"""What one forward pass costs against the rows it scores, and the cost model a token tree is chosen on.

A tree of N nodes is verified in one target pass of N + 1 rows (the last prefix token and the nodes, with the tree
mask), and drafted in one draft pass per depth (the rows of the depth before). Whether a tree pays is a race between
the tokens it adds per pass and what those rows cost: on a GPU at batch 1 a pass of tens of rows costs little more
than one (EAGLE-2's 60-node trees, Sequoia's hardware-aware trees, Chen et al. 2024, arXiv 2402.12374); on a CPU the
cost grows with the rows. `measure_pass_seconds` measures the curve with the decoder's own CachedLM and tree mask;
`tree_cost` and `predict` turn it, with the acceptance by draft rank, into the predicted speedup of a tree
(theory.best_tree's tree, or a chain: a tree of rank-0 paths). Used by the trees stage (the real pair, this machine)
and by scripts/measure_cost_curve.py (the same architectures on another device, timing only).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

ROWS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)  # rows of one pass: the figure's x axis
TREE_NODES = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 63)  # node budgets searched (a tree of N nodes: N + 1 rows)
MAX_TREE_DEPTH = 8  # depths searched, trees and chains
MAX_RANK = 8  # children ranks the acceptance model distinguishes (rank >= MAX_RANK: never accepted)


def binary_parents(n: int) -> list[int]:
    """Parents of an n-node binary tree, depth by depth: the mask of a bushy tree (cost hardly depends on it)."""
    return [(i - 1) // 2 if i > 0 else -1 for i in range(n)]


def measure_pass_seconds(model, vocab_size: int, rows: Sequence[int] = ROWS, n_prefix: int = 128, reps: int = 5,
                         seed: int = 0, device=None) -> dict:
    """Median wall time of one forward pass of `rows` rows after a cached prefix of n_prefix tokens, per row count.

    Each pass is the decoder's own: CachedLM.logits over the last prefix token and rows - 1 tree nodes (a binary
    tree, with the tree mask and positions prefix + depth), every row's logits kept, then the cache cut back to the
    prefix. Row counts are interleaved within each repetition (so host drift spreads over all of them), after one
    warm-up round. Random token ids: a pass's cost does not depend on which tokens it reads."""
    import torch

    from specdec.cache import CachedLM
    from specdec.timing import sync_device

    device = device or next(model.parameters()).device
    gen = torch.Generator().manual_seed(seed)
    lm = CachedLM(model, vocab_size, "model")
    prefix = torch.randint(0, vocab_size, (1, n_prefix), generator=gen).to(device)
    lm.logits(prefix[:, :-1], 1)  # the prefix but its last token is cached, as before a verify pass
    seconds: dict[int, list[float]] = {n: [] for n in rows}
    for rep in range(reps + 1):
        for n in rows:
            nodes = torch.randint(0, vocab_size, (1, n - 1), generator=gen).to(device)
            seq = torch.cat([prefix, nodes], 1)
            sync_device(device)
            start = time.perf_counter()
            lm.logits(seq, n, binary_parents(n - 1) if n > 1 else None)
            sync_device(device)
            if rep:  # the first round warms the kernels and the allocator
                seconds[n].append(time.perf_counter() - start)
            lm.rollback(n_prefix - 1)
    return {"rows": list(rows), "seconds": [statistics.median(seconds[n]) for n in rows],
            "all_seconds": [seconds[n] for n in rows], "n_prefix": n_prefix, "reps": reps}


def interpolate(curve: dict, rows: float) -> float:
    """Seconds of a pass of `rows` rows: linear between measured row counts (past the last, its slope)."""
    xs, ys = curve["rows"], curve["seconds"]
    if rows <= xs[0]:
        return ys[0]
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if rows <= x1:
            return y0 + (y1 - y0) * (rows - x0) / (x1 - x0)
    return ys[-1] + (ys[-1] - ys[-2]) * (rows - xs[-1]) / (xs[-1] - xs[-2])


def level_sizes(paths: Sequence[Sequence[int]]) -> list[int]:
    """Nodes per depth of a tree given as rank paths."""
    sizes = [0] * max((len(p) for p in paths), default=0)
    for p in paths:
        sizes[len(p) - 1] += 1
    return sizes


def tree_cost(paths: Sequence[Sequence[int]], target_curve: dict, draft_curve: dict) -> float:
    """One step's cost in target passes of one row: a draft pass per depth (depth d feeds the nodes of depth d - 1;
    depth 1, the last token) and one target pass of N + 1 rows. A chain of k: k one-row draft passes and k + 1
    target rows, Leviathan's c k + verify cost."""
    unit = target_curve["seconds"][0]
    sizes = level_sizes(paths)
    drafting = sum(interpolate(draft_curve, rows) for rows in [1, *sizes[:-1]])
    return (drafting + interpolate(target_curve, len(paths) + 1)) / unit


def predict(accept_by_rank: Sequence[float], target_curve: dict, draft_curve: dict, chain: bool = False) -> dict:
    """The tree (or, with chain, the chain) of the most predicted tokens per unit cost, searched over node budgets
    (TREE_NODES) and depths (1..MAX_TREE_DEPTH): for each, Sequoia's best tree (theory.best_tree), costed by
    tree_cost. Returns its paths, expected tokens per pass (1 + accepted nodes), cost and predicted speedup over
    decoding with the target alone (per decoding step, prefill aside). When no tree is worth a node (the draft's
    top-1 never agreed on the design prompts: every a_r is 0 up to the ranks searched), the one-node chain, so that
    the benchmark still runs and shows what drafting then costs."""
    from specdec.theory import best_tree

    a = list(accept_by_rank[:1]) if chain else list(accept_by_rank[:MAX_RANK])
    def costed(accepted: float, paths: list) -> dict:
        cost = tree_cost(paths, target_curve, draft_curve)
        return {"paths": [list(p) for p in paths], "nodes": len(paths), "depth": max(len(p) for p in paths),
                "tokens_per_pass": 1.0 + accepted, "cost": cost, "speedup": (1.0 + accepted) / cost}

    best = None
    for depth in range(1, MAX_TREE_DEPTH + 1):
        for nodes in ([depth] if chain else [n for n in TREE_NODES if n >= depth]):
            accepted, paths = best_tree(a, nodes, depth)
            if not paths:
                continue
            entry = costed(accepted, paths)
            if best is None or entry["speedup"] > best["speedup"] + 1e-12:
                best = entry
    return best if best is not None else costed(a[0] if a else 0.0, [(0,)])


def accept_by_rank(ranks: Sequence[int], max_rank: int = MAX_RANK) -> list[float]:
    """Sequoia's positional acceptance from the draft's rank of each of the target's greedy tokens: a_r = P(rank = r),
    r < max_rank, the chance that a node's rank-r child is the target's next token (they sum to at most 1). Greedily,
    a node of rank path (r1, ..., rd) is accepted with probability a_r1 ... a_rd in this model (theory.best_tree)."""
    if not ranks:
        raise ValueError("no ranks to fit the acceptance on")
    return [sum(1 for x in ranks if x == r) / len(ranks) for r in range(max_rank)]


# An H200's datasheet rates (SXM): HBM3e bandwidth and dense bf16 matrix throughput. The GPU-like curve is a model
# built on them, labelled as such wherever it is shown; scripts/measure_cost_curve.py measures a real one.
H200 = {"name": "NVIDIA H200 (datasheet roofline)", "bandwidth": 4.8e12, "flops": 989e12, "bytes_per_weight": 2}


def weights_read(config: dict) -> float:
    """The weights a pass reads, which is also its multiply-adds per row, of a decoder-only transformer's config
    (Llama/Qwen2 shapes): the layers' projections and MLP and the output head; the input embedding is gathered, not
    read whole."""
    h, i, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    head_dim = config.get("head_dim") or h // config["num_attention_heads"]
    kv = config.get("num_key_value_heads", config["num_attention_heads"]) * head_dim
    per_layer = h * h + 2 * h * kv + h * h + 3 * h * i
    weights = layers * per_layer + config["vocab_size"] * h
    return float(weights)


def roofline_curve(config: dict, rows=ROWS, device: dict = H200) -> dict:
    """A pass's time on the device's roofline: the weights read once per pass at its bandwidth, or the rows'
    multiply-adds at its matrix rate, whichever is longer (attention over a short prefix and launch overheads left
    out: both add a cost that does not grow with the rows, so the measured curve is flatter still). Also its knee,
    the rows where the two meet."""
    weights = weights_read(config)
    memory = weights * device["bytes_per_weight"] / device["bandwidth"]
    per_row = 2 * weights / device["flops"]
    return {"rows": list(rows), "seconds": [max(memory, n * per_row) for n in rows], "knee_rows": memory / per_row,
            "model": device["name"]}
