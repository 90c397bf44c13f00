"""EAGLE's published tree rule, run on the audit's tiny pair (Li et al. 2024, arXiv 2401.15077; eagle-llm 1.2.1).

EAGLE's decode loop cannot run here as published: it drafts with a head trained on the target's features, which a
tiny random pair has no counterpart of. Its verification can: `evaluate_posterior` (eagle/model/utils.py) is a
function of the target's logits along every root-to-leaf path of the tree, the candidate tokens, the draft's
probabilities and the tree buffers that `generate_tree_buffers` makes from a tree given as rank paths (Medusa's
`choices`). This module lays the tiny draft's proposals out as EAGLE's drafter does and calls EAGLE's own two
functions, unchanged, from the installed wheel:

1. The draft proposes, at every node that has children, the top ranks of EAGLE's `Model.sample` (eagle/model/
   cnets.py, copied in `sample_children` with an explicit generator): tokens drawn without replacement from the
   processed draft distribution q, each with q of it renormalised over the tokens not drawn before it.
2. The target scores every node (plain forward passes of the tiny target: one per depth, every node's root-to-node
   path), laid out per path as EAGLE's `tree_decoding` returns them.
3. `evaluate_posterior` accepts a path and returns the distribution to draw the next token from; the next token is
   drawn from it as EAGLE's `update_inference_inputs` does.

EAGLE draws its uniforms from Python's global `random`; each step seeds it from the audit's torch.Generator, so a
row replays from its seed. The rule's known flaw (the distribution after a fully accepted path, or at a leaf, is the
target's plain softmax, without the temperature and top-p that every other draw uses) is specdec_site.exactness.mutants'
`tree_leaf_bonus_unwarped`; the audit's rows with and without a temperature show whether it matters.
"""

from __future__ import annotations

import importlib.util
import random
from collections.abc import Callable, Sequence

import torch

EAGLE_PACKAGE = "eagle-llm==1.2.1"  # installed without its pinned dependencies (scripts/install.sh)
# The first seven nodes of EAGLE's own tree (mc_sim_7b_63, 25 nodes to depth 5): four children of the root, two of
# its first child and one of its second. Three new tokens reach no deeper; the leaves at depth 1 are where the
# draw after an accepted path is reached most often on the tiny pair.
EAGLE_TREE = ((0,), (1,), (2,), (3,), (0, 0), (0, 1), (1, 0))


class EagleMissing(RuntimeError):
    """eagle-llm is not installed."""


def load_eagle_utils():
    """eagle/model/utils.py of the installed wheel, loaded alone: the package's other modules import its own
    Llama and Mixtral copies, which this project does not need."""
    spec = importlib.util.find_spec("eagle")
    if spec is None or not spec.submodule_search_locations:
        raise EagleMissing(f"EAGLE's rule is audited from its published code: pip install --no-deps {EAGLE_PACKAGE} "
                           "(its pins of accelerate, gradio and protobuf would downgrade this project's)")
    path = f"{list(spec.submodule_search_locations)[0]}/model/utils.py"
    module_spec = importlib.util.spec_from_file_location("eagle_model_utils", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def sample_children(probs: torch.Tensor, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """EAGLE's Model.sample (eagle/model/cnets.py) on processed probabilities, with a generator: n tokens drawn
    without replacement, and each one's probability renormalised over the tokens not yet drawn, q(x_i) / (1 - sum
    of q(x_j), j < i) (inf and NaN to -1, then clamped to [0, 1], as there).
    probs: (rows, V). Returns tokens and probabilities, both (rows, n)."""
    tokens = torch.multinomial(probs, n, replacement=False, generator=generator)
    drawn = torch.gather(probs, 1, tokens)
    before = torch.cat([torch.zeros(drawn.shape[0], 1), drawn.cumsum(1)[:, :-1]], dim=-1)
    conditional = drawn / (1 - before)
    conditional[torch.isinf(conditional) | torch.isnan(conditional)] = -1
    return tokens, conditional.clamp(0.0, 1.0)


def accepted_path_end(next_p: torch.Tensor, logits: torch.Tensor) -> bool:
    """Whether evaluate_posterior returned the plain softmax of the logits after the accepted path (its branch for a
    fully accepted path or a leaf) rather than a residual."""
    return bool(torch.allclose(next_p, torch.softmax(logits, dim=0), rtol=0, atol=1e-7))


def eagle_sampler(tree: Sequence[Sequence[int]] = EAGLE_TREE, repaired: bool = False) -> Callable:
    """The audit's sample function for EAGLE's rule on `tree` (rank paths, fewer than EAGLE's TOPK = 10 children
    per node). repaired: where evaluate_posterior returns the target's plain softmax (after an accepted path or at a
    leaf), draw from the processed distribution instead, as every other draw of the rule does: EAGLE's rule with
    its one known flaw mended, the audit's evidence that the flaw, not this driver, is what a failing row shows."""
    from specdec import TreeShape

    utils = load_eagle_utils()
    shape = TreeShape(tuple(tuple(p) for p in tree))  # the decoder's own check: ranks >= 0, every prefix a path
    if max(max(p) for p in shape.paths) >= utils.TOPK:
        raise ValueError(f"a tree of rank paths below EAGLE's TOPK = {utils.TOPK}, got {tree!r}")
    paths = sorted(shape.paths, key=lambda p: (len(p), p))  # EAGLE's order (generate_tree_buffers)
    buffers = utils.generate_tree_buffers([list(p) for p in paths], device="cpu")
    tree_indices, retrieve = buffers["tree_indices"], buffers["retrieve_indices"]
    depth = max(len(p) for p in paths)
    parents = sorted({p[:-1] for p in paths}, key=lambda p: (len(p), p))
    # the row of EAGLE's draft output (tree_logits[0], TOPK tokens a row) that holds a parent's children
    row_of = {p[:-1]: int(tree_indices[i + 1] - 1) // utils.TOPK for i, p in enumerate(paths)}
    width = {parent: 1 + max(p[-1] for p in paths if p[:-1] == parent) for parent in parents}

    def sample(target, draft, prompt, new_tokens, sampling, generator):
        processor = utils.prepare_logits_processor(temperature=sampling.temperature, top_p=sampling.top_p or 0.0,
                                                   top_k=sampling.top_k or 0)

        def processed(model, seqs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            logits = model(input_ids=seqs).logits[:, -1].float()  # (rows, V)
            return logits, torch.softmax(processor(None, logits), dim=-1)

        def extended(seq: torch.Tensor, level: list[tuple], token_of: dict) -> torch.Tensor:
            """The sequence followed by each rank path's tokens, one row per path (they have one length)."""
            return torch.stack([torch.cat([seq, torch.tensor([token_of[p[:i + 1]] for i in range(len(p))],
                                                             dtype=torch.int64)]) for p in level])

        seq = prompt.clone()
        while seq.numel() < prompt.numel() + new_tokens:
            # 1. the draft's children of every parent, depth by depth, in EAGLE's layout
            token_of: dict[tuple, int] = {}
            tree_tokens = torch.zeros(len(row_of), utils.TOPK, dtype=torch.int64)
            tree_probs = torch.zeros(len(row_of), utils.TOPK)
            op = []  # per depth: the processed draft distribution of each parent there, in EAGLE's order
            for d in range(depth):
                level = [p for p in parents if len(p) == d]
                _, q = processed(draft, extended(seq, level, token_of))
                op.append(q)
                for parent, q_row in zip(level, q):
                    tokens, probs = sample_children(q_row[None], width[parent], generator)
                    tree_tokens[row_of[parent], : width[parent]] = tokens[0]
                    tree_probs[row_of[parent], : width[parent]] = probs[0]
                    for rank in range(width[parent]):
                        token_of[parent + (rank,)] = int(tokens[0, rank])
            root = seq[-1:].view(1, 1)
            cart, cart_probs, tree_candidates = utils.generate_candidates(
                (tree_tokens, tree_probs), tree_indices, retrieve, root, processor)
            # 2. the target's logits along every path: column i, after the root and the path's first i tokens
            logits = torch.zeros(*cart.shape, target.config.vocab_size)
            node_logits = {(): processed(target, seq[None])[0][0]}
            for d in range(1, depth + 1):
                level = [p for p in paths if len(p) == d]
                node_logits.update(zip(level, processed(target, extended(seq, level, token_of))[0]))
            for j, row in enumerate(retrieve.tolist()):
                for i, index in enumerate(row):
                    if index >= 0:
                        logits[j, i] = node_logits[paths[index - 1] if index else ()]
            # 3. EAGLE's rule, its uniforms from Python's random seeded from the generator
            random.seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
            best, accepted, next_p = utils.evaluate_posterior(logits, cart, processor, cart_probs, op,
                                                              buffers["p_indices"], tree_candidates,
                                                              buffers["b_indices"])
            if repaired and accepted_path_end(next_p, logits[int(best), int(accepted)]):
                next_p = torch.softmax(processor(None, logits[int(best), int(accepted)][None])[0], dim=-1)
            kept = cart[int(best), 1: int(accepted) + 1]
            next_token = torch.multinomial(next_p, 1, generator=generator)
            seq = torch.cat([seq, kept, next_token])
        return seq[prompt.numel(): prompt.numel() + new_tokens]

    return sample
