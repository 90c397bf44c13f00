"""Token trees: the draft proposes a tree of continuations, the target scores every node in one pass.

SpecInfer (Miao et al. 2023, arXiv 2305.09781), Medusa (Cai et al. 2024, arXiv 2401.10774), EAGLE-2 (Li et al. 2024,
arXiv 2406.16858). A node's children are the draft's top-b tokens after the node's root-to-node path: chosen, not
sampled, so the rule that verifies them is "sample and match" (`verify.verify_tree`), and each child's q is one-hot
(the draft's own probability of it is kept for the record, in the proposal's confidences). With `sampled=True` (a
static shape), the children are drawn from the draft's q without replacement instead (SpecInfer), each child's q row
is the q it was drawn from, and the rule is recursive rejection sampling (`verify.verify_tree_sampled`).

Two shapes, as the field uses them:
- static: a list of rank paths (Medusa's `medusa_choices`): (0,) is the draft's top-1 after the prefix, (0, 1) the
  top-2 after that, and so on; every prefix of a path is a path of the tree (`TreeShape`).
- dynamic (EAGLE-2): depth by depth, the `width` nodes of highest cumulative draft probability (the product of the
  draft's probabilities along the path) are expanded with their top-`width` children; of everything drafted, the
  `nodes` of highest cumulative probability are kept (an ancestor's is never lower, so the kept set is a tree).

The draft drafts one depth per pass (the nodes of a depth that get children fed in one forward, with the tree mask;
the others never are): depth passes, not node passes. Nodes are numbered depth by depth (parents before children),
which the tree mask, the target's cache compaction and the record all rely on.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

import torch

from .cache import CachedLM
from .checks import ArgumentError, as_count, shown
from .drafters import MAX_TREE_NODES as MAX_NODES
from .drafters import Drafter, Proposal
from .sampling import SamplingConfig, probs_from_logits, sample


@dataclass(frozen=True)
class TreeShape:
    """A static tree as rank paths (Medusa's medusa_choices): path (r1, ..., rd) is the rank-rd token after the
    rank-r1, ... path; ranks from 0. Every prefix of a path must be a path too."""

    paths: tuple[tuple[int, ...], ...]

    def __post_init__(self):
        # Counted before anything is built: a shape of a million paths (or one path a million deep) is refused
        # at once, not after it has filled memory.
        if isinstance(self.paths, (str, bytes)) or not isinstance(self.paths, Iterable):
            raise ArgumentError(f"a tree shape's paths must be a sequence of rank paths, got {type(self.paths).__name__}")
        given = list(itertools.islice(self.paths, MAX_NODES + 1))
        if not given or len(given) > MAX_NODES:
            raise ArgumentError(f"a tree shape needs 1 to {MAX_NODES} paths, got "
                                f"{len(given) if given else 0}{'+' if len(given) > MAX_NODES else ''}")
        paths = []
        for p in given:
            if isinstance(p, (str, bytes)) or not isinstance(p, (tuple, list)):
                raise ArgumentError(f"each path of a tree shape is a tuple of ranks, got {type(p).__name__} {shown(p)}")
            if not 1 <= len(p) <= MAX_NODES:
                raise ArgumentError(f"each path of a tree shape has 1 to {MAX_NODES} ranks, got {len(p)}")
            paths.append(tuple(as_count(r, "each path of a tree shape is a tuple of integer ranks >= 0", 0) for r in p))
        paths = tuple(paths)
        if len(set(paths)) != len(paths):
            raise ArgumentError("a tree shape lists each path once")
        known = set(paths)
        missing = [p for p in paths if len(p) > 1 and p[:-1] not in known]
        if missing:
            raise ArgumentError(f"the tree shape lacks the parent of {shown(missing[0])} (every prefix of a path is a "
                                "path)")
        # depth by depth, then by rank path: parents before children, siblings in rank order
        object.__setattr__(self, "paths", tuple(sorted(paths, key=lambda p: (len(p), p))))

    @classmethod
    def chain(cls, depth: int) -> TreeShape:
        """The chain of top-1 tokens: what greedy chain drafting proposes."""
        depth = as_count(depth, f"a chain's depth must be an integer in [1, {MAX_NODES}]", 1, MAX_NODES)
        return cls(tuple((0,) * d for d in range(1, depth + 1)))

    @classmethod
    def full(cls, width: int, depth: int) -> TreeShape:
        """Every node has the top-`width` children, down to `depth`."""
        width = as_count(width, "a full tree's width must be an integer >= 1", 1)
        depth = as_count(depth, "a full tree's depth must be an integer >= 1", 1)
        nodes = full_tree_nodes(width, depth)
        if nodes > MAX_NODES:
            raise ArgumentError(f"TreeShape.full({width}, {depth}) has {'over ' if nodes > 10 ** 12 else ''}"
                                f"{min(nodes, 10 ** 12):,} nodes, over the {MAX_NODES} a tree may have")
        return cls(tuple(p for d in range(1, depth + 1) for p in itertools.product(range(width), repeat=d)))

    @property
    def depth(self) -> int:
        return max(len(p) for p in self.paths)

    @property
    def parents(self) -> list[int]:
        index = {p: i for i, p in enumerate(self.paths)}
        return [index[p[:-1]] if len(p) > 1 else -1 for p in self.paths]


def full_tree_nodes(width: int, depth: int) -> int:
    """width + width^2 + ... + width^depth, counted only until it passes MAX_NODES (then any larger number)."""
    total, level = 0, 1
    for _ in range(depth):
        level *= width
        total += level
        if total > MAX_NODES:
            return total
    return total


# A dynamic tree drafts `width` children of each of `width` frontier nodes per depth: width + (depth - 1) width^2
# candidates a step, of which `nodes` are kept. Past this many the step's Python bookkeeping alone takes seconds.
MAX_CANDIDATES = 1 << 16


class TreeDrafter(Drafter):
    """A draft model proposing a token tree: static (`shape`) or dynamic (`width`, `depth`, `nodes`, EAGLE-2).

    The step's budget (the policy's, capped so that a step never emits past max_new_tokens) caps the tree's depth:
    a tree step emits at most depth + 1 tokens, as a chain step of k drafts emits k + 1."""

    name = "tree"
    drafts_trees = True

    def __init__(self, model: torch.nn.Module, shape: TreeShape | None = None, *, width: int | None = None,
                 depth: int | None = None, nodes: int | None = None, sampled: bool = False):
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"draft must be a torch model, got {type(model).__name__}")
        if (shape is None) == (width is None):
            raise ValueError("give a static shape (TreeShape) or a dynamic tree's width, depth and nodes, not both")
        if shape is not None and not isinstance(shape, TreeShape):
            raise TypeError(f"shape must be a TreeShape, got {type(shape).__name__}")
        if width is not None:
            width = as_count(width, f"width must be an integer in [1, {MAX_NODES}]", 1, MAX_NODES)
            depth = as_count(depth, f"depth must be an integer in [1, {MAX_NODES}]", 1, MAX_NODES)
            nodes = as_count(nodes, f"nodes must be an integer in [1, {MAX_NODES}]", 1, MAX_NODES)
            candidates = width + (depth - 1) * width * width
            if candidates > MAX_CANDIDATES:
                raise ArgumentError(f"a dynamic tree of width {width} and depth {depth} drafts {candidates:,} candidate "
                                    f"nodes a step, over the {MAX_CANDIDATES:,} this drafter takes: a smaller width "
                                    "or depth")
        if sampled is not True and sampled is not False:
            raise TypeError(f"sampled must be True or False, got {sampled!r}")
        if sampled and shape is None:
            raise ValueError("sampled children need a static shape (a dynamic tree ranks its children by q)")
        if sampled and any(sorted(p[-1] for p in shape.paths if p[:-1] == path) != list(range(
                sum(1 for p in shape.paths if p[:-1] == path))) for path in {(), *shape.paths}):
            raise ValueError("with sampled children each node's children must be its draws 0, 1, ..., m - 1: a draw "
                             "left out would change the q its later siblings were drawn from")
        self.sampled = sampled
        self.model, self.shape, self.width, self.depth, self.nodes = model, shape, width, depth, nodes
        self.lm = None
        self.n_prefix, self.slots = 0, []  # this step's prefix length, each proposed node's draft-cache slot (None:
        # never fed)

    @property
    def max_depth(self) -> int:
        return self.shape.depth if self.shape is not None else self.depth

    def start(self, vocab_size: int) -> None:
        self.lm = CachedLM(self.model, vocab_size, "draft")

    def propose(self, context, budget, config, generator, policy) -> Proposal:
        # context (1, n): the tokens so far. Nodes are drafted depth by depth; each pass feeds the previous depth.
        n_prefix = context.shape[1]
        max_depth = min(budget, self.max_depth)
        tokens: list[int] = []
        parents: list[int] = []
        shown: list[float] = []  # the draft's probability of each node's token (the record's q)
        cumulative: list[float] = []  # the product of those along the node's path (the dynamic tree's score)
        rank_paths: list[tuple[int, ...]] = []  # each node's ranks from the prefix (the static shape's paths)
        q_rows: list[torch.Tensor | None] = []  # with sampled children, the q each node was drawn from
        frontier = [-1]  # the nodes whose children the next depth drafts (-1: the prefix's last token)
        fed: list[int] = []  # the nodes the draft has read, in its cache's order after the prefix
        expandable = {p[:-1] for p in self.shape.paths} if self.shape is not None else None  # static: has children
        # the draft's probabilities rank the children: its plain softmax when decoding greedily (a one-hot ranks
        # nothing), else its warped distribution (a token it cannot draw is never proposed)
        ranking = SamplingConfig(1.0) if config.greedy else config
        for depth in range(1, max_depth + 1):
            # 1. One draft pass: the logits after each frontier node (after the prefix alone at depth 1). The pass
            #    feeds the frontier alone, with the tree mask: the draft never reads a node that gets no children.
            if frontier == [-1]:
                logits = self.lm.logits(context, 1)  # (1, V)
            else:
                fed = fed + frontier  # every frontier node's parent was a frontier node of the depth before: fed
                slot = {node: j for j, node in enumerate(fed)}
                seq = torch.cat([context, torch.tensor([[tokens[i] for i in fed]], dtype=torch.int64,
                                                       device=context.device)], 1)
                # (len(frontier), V): the frontier is the pass's last rows
                logits = self.lm.logits(seq, len(frontier), [slot.get(parents[i], -1) for i in fed])
            probs = probs_from_logits(logits, config if self.sampled else ranking)
            # 2. The children of each frontier node: the ranks its shape lists (static) or the top `width` (dynamic);
            #    with sampled children, its first draws from q without replacement.
            new = []
            for row, parent in enumerate(frontier):
                path = rank_paths[parent] if parent >= 0 else ()
                ranks = ([p[-1] for p in self.shape.paths if len(p) == depth and p[:-1] == path]
                         if self.shape is not None else list(range(self.width)))
                if not ranks:
                    continue
                if self.sampled:
                    left = probs[row].clone()
                    for r in ranks:  # 0, 1, ..., m - 1
                        if not bool(left.sum() > 0):
                            break  # q has no token left to draw
                        x = int(sample(left, generator))
                        left[x] = 0.0
                        new.append((parent, x, float(probs[row, x]), 1.0, path + (r,), probs[row]))
                    continue
                top = torch.topk(probs[row], min(max(ranks) + 1, probs.shape[-1]))
                for r in ranks:
                    if r >= top.values.shape[0] or float(top.values[r]) <= 0:
                        continue  # a token the draft cannot produce is never proposed
                    p_child = float(top.values[r])
                    new.append((parent, int(top.indices[r]), p_child,
                                p_child * (cumulative[parent] if parent >= 0 else 1.0), path + (r,), None))
            if self.shape is None:  # dynamic: the most probable paths first; the `width` best are expanded
                new.sort(key=lambda c: -c[3])
            first = len(tokens)
            for parent, token, p_child, cum, ranks, q_row in new:
                parents.append(parent)
                tokens.append(token)
                shown.append(p_child)
                cumulative.append(cum)
                rank_paths.append(ranks)
                q_rows.append(q_row)
            if self.shape is None:  # dynamic: the `width` most probable new nodes
                frontier = list(range(first, len(tokens)))[: self.width]
            else:  # static: the new nodes the shape gives children
                frontier = [i for i in range(first, len(tokens)) if rank_paths[i] in expandable]
            if not frontier:
                break
        # 3. The nodes proposed: all (static), or the `nodes` of highest cumulative probability (dynamic; an
        #    ancestor's is never below its descendant's and it comes first on a tie, so every kept node's parent is
        #    kept), in the order drafted. The draft's cache slot of each: the prefix, then the nodes as drafted.
        keep = list(range(len(tokens)))
        if self.shape is None:
            keep = sorted(sorted(keep, key=lambda i: (-cumulative[i], i))[: self.nodes])
        index = {old: new for new, old in enumerate(keep)}
        slot = {node: n_prefix + j for j, node in enumerate(fed)}
        self.n_prefix, self.slots = n_prefix, [slot.get(i) for i in keep]
        ids = torch.tensor([tokens[i] for i in keep], dtype=torch.int64, device=context.device)
        n = len(keep)
        if self.sampled:  # (V,) rows: the q each node was drawn from (its siblings share it)
            q_draft = torch.stack([q_rows[i] for i in keep]) if n else torch.zeros(0, self.lm.vocab_size)
        else:
            q_draft = torch.zeros(n, self.lm.vocab_size, dtype=torch.float32, device=context.device)
            q_draft[torch.arange(n, device=context.device), ids] = 1.0  # chosen, not drawn: one-hot
        return Proposal(ids, q_draft.to(torch.float32), [shown[i] for i in keep], "model",
                        [index[parents[i]] if parents[i] >= 0 else -1 for i in keep], self.sampled)

    def commit(self, length: int, path: list[int] | None = None) -> None:
        if path is None:
            self.lm.rollback(length)
            return
        # path: the accepted nodes' indices. The draft read only the nodes that got children (self.slots; None for
        # the others): it keeps the accepted nodes it read, a prefix of the path (every ancestor of a node was read).
        seen = [self.slots[i] for i in path if self.slots[i] is not None]
        self.lm.commit(self.n_prefix + len(seen), seen)

    def rollback(self, length: int) -> None:
        self.lm.rollback(length)

    def cached_lms(self) -> list:
        return [self.lm]
