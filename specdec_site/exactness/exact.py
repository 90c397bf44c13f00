"""Exact distributions, for the exactness tests and the Exactness page, and the objects they share.

Test machinery, so it lives in the build package, not in the library (`specdec/`): one home for what the
tests and the build's exactness stage both use: the tiny random models (`make_tiny_lm`), the wrong residual
(`naive_residual`, plugged into verify_draft by `specdec_site.exactness.mutants.naive_rule()`) and the counterexample
p, q (`COUNTEREXAMPLE_P/Q`).

`first_token_distribution` enumerates verify_draft's branches exactly: for each draft token x, the
acceptance probability verify_draft reports, the accept branch (replayed draw r = 0) and the reject
branch (replayed draw r = 1, where verify_draft returns the residual it resamples from). For the correct
rule the result is p_target[0] (Leviathan Thm 3.5 / Appendix A.1).
"""

from __future__ import annotations

import contextlib

import torch

from specdec.verify import acceptance_probability, verify_draft

# The math page's counterexample, eq. (9): p = (0.4, 0.3, 0.3), q = (0.6, 0.1, 0.3), k = 1. The second
# row of p is the (unused) distribution after the draft, which the bonus token would come from.
COUNTEREXAMPLE_P = ((0.4, 0.3, 0.3), (1 / 3, 1 / 3, 1 / 3))
COUNTEREXAMPLE_Q = ((0.6, 0.1, 0.3),)


@contextlib.contextmanager
def one_thread():
    """Run the tiny models on one torch thread (threads cost them more than they save), and give back the thread
    count found: the build's later stages, and the metadata that records it, see the machine's."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def counterexample() -> tuple[torch.Tensor, torch.Tensor]:
    """(p_target (2, 3), q_draft (1, 3)) float64 tensors of the counterexample."""
    return (torch.tensor(COUNTEREXAMPLE_P, dtype=torch.float64), torch.tensor(COUNTEREXAMPLE_Q, dtype=torch.float64))


def make_tiny_lm(seed: int, vocab_size: int = 12, init_scale: float = 0.6, layers: int = 2):
    """A random Llama-style causal LM small enough to enumerate every sequence.

    A large init range makes the next-token distributions peaked and different between seeds, so a wrong
    verification rule shows up in the statistics. The seed is used for construction only; decoding takes
    explicit generators.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size, hidden_size=16, intermediate_size=32, num_hidden_layers=layers,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
        initializer_range=init_scale, tie_word_embeddings=False,
        bos_token_id=0, eos_token_id=1, pad_token_id=None,
    )
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        return LlamaForCausalLM(config).eval()
    finally:
        torch.random.set_rng_state(state)  # leave the global RNG as it was


def naive_residual(p_row: torch.Tensor, q_row: torch.Tensor, draft_token) -> torch.Tensor:
    """WRONG on purpose: norm(max(0, p - alpha q)), alpha = min(1, p/q) of the rejected token.

    A formula seen in the wild; it is not exact. Kept only to show on the site what it breaks.
    """
    alpha = acceptance_probability(p_row[draft_token], q_row[draft_token])
    residual = (p_row - alpha * q_row).clamp_min(0.0)
    return residual / residual.sum()


def first_token_distribution(p_target: torch.Tensor, q_draft: torch.Tensor):
    """Exact distribution (V,) float64 of the first emitted token of verify_draft (as it is now: under
    `mutants.naive_rule()`, that of the wrong residual).

    For each draft token x, a = min(1, p(x)/q(x)) is computed HERE (not read from verify_draft), and
    verify_draft's comparison is replayed just below a (the draws in [0, a) must accept) and just above
    it (the draws in [a, 1) must reject, and give the residual resampled from): so the comparison itself
    is tested, not only the branches. A rule that breaks either is an AssertionError naming x.
    """
    k, V = q_draft.shape
    dist = torch.zeros(V, dtype=torch.float64)
    rest = q_draft[1:].argmax(-1)  # later draft tokens cannot change the first output (each one its q can draw)
    gen = torch.Generator().manual_seed(0)
    eps = 8 * torch.finfo(q_draft.dtype).eps  # "just" below or above, in the dtype verify_draft compares in
    for x in range(V):
        qx, px = float(q_draft[0, x]), float(p_target[0, x])
        if qx == 0.0:
            continue  # the draft never proposes x
        a = min(1.0, px / qx)
        draft_tokens = torch.cat([torch.tensor([x]), rest])

        def replay(r: float, draft_tokens=draft_tokens):
            uniforms = torch.full((k,), r, dtype=q_draft.dtype)
            uniforms[1:] = 1.0  # later positions reject: only the first matters here
            return verify_draft(draft_tokens, q_draft, p_target, gen, uniforms=uniforms)

        if a > 0:
            below = replay(a * (1 - eps))
            if below.n_accepted < 1 or int(below.tokens[0]) != x:
                raise AssertionError(f"token {x}: a draw just below min(1, p/q) = {a:.6g} was not accepted")
            dist[x] += qx * a
        if a < 1:
            above = replay(a + (1 - a) * eps)
            if above.n_accepted != 0 or above.residual is None:
                raise AssertionError(f"token {x}: a draw just above min(1, p/q) = {a:.6g} was not rejected")
            dist += qx * (1.0 - a) * above.residual.double()
    return dist


@torch.inference_mode()
def sequence_distribution(model, prompt: torch.Tensor, n_new: int, config) -> dict[tuple, float]:
    """Exact P(y_1..y_n | prompt) of sampling from `model` under `config`, for every sequence.

    One batched forward pass (no KV cache) per length over all prefixes, so it shares nothing with the
    decoder it checks. Only for tiny vocabularies: V^n sequences.
    """
    from specdec.sampling import probs_from_logits

    vocab = model.config.vocab_size
    probs = {(): 1.0}
    for _ in range(n_new):
        prefixes = list(probs)
        batch = torch.stack([torch.cat([prompt, torch.tensor(c, dtype=torch.int64)]) for c in prefixes])
        step = probs_from_logits(model(input_ids=batch).logits[:, -1], config).double()
        probs = {c + (y,): probs[c] * float(step[i, y]) for i, c in enumerate(prefixes) for y in range(vocab)}
    return probs


def sample_sequence_counts(target, draft, prompt: torch.Tensor, n_new: int, n_runs: int, seed: int,
                           **kwargs) -> dict[tuple, int]:
    """How often each sequence of n_new tokens came out of n_runs speculative_generate calls.

    One torch.Generator seeded with `seed` drives all runs, so the counts replay exactly. kwargs go to
    speculative_generate (k, temperature, top_k, top_p, policy, ...).
    """
    from specdec.decoding import speculative_generate

    gen = torch.Generator().manual_seed(seed)
    counts: dict[tuple, int] = {}
    for _ in range(n_runs):
        out = speculative_generate(target, draft, prompt, max_new_tokens=n_new, generator=gen, **kwargs)
        key = tuple(out.tolist())
        counts[key] = counts.get(key, 0) + 1
    return counts


def pooled_bins(counts: dict, exact: dict, min_expected: float = 5.0,
                extra_pooled: int = 0) -> tuple[list[int], list[float]]:
    """(observed, expected) counts of the chi-square test's bins: one per sequence expected at least `min_expected`
    times in sum(counts) draws, and one pooled bin for the rest (with `extra_pooled` more observations in it), as the
    test requires. The expected counts are renormalised to the draws (float32 model probabilities: the tiny rounding
    away)."""
    n = sum(counts.values())
    observed, expected, pooled_o, pooled_e = [], [], extra_pooled, 0.0
    for seq, p in exact.items():
        if n * p >= min_expected:
            observed.append(counts.get(seq, 0))
            expected.append(n * p)
        else:
            pooled_o += counts.get(seq, 0)
            pooled_e += n * p
    if pooled_e > 0 or pooled_o:
        observed.append(pooled_o)
        expected.append(pooled_e)
    total = sum(expected)
    return observed, [e * n / total for e in expected]


def chi_square_test(counts: dict, exact: dict, min_expected: float = 5.0) -> dict:
    """Pearson chi-square of sampled counts against an exact distribution, plus the TV distance.

    Sequences whose expected count is below `min_expected` are pooled into one bin (pooled_bins); a sampled
    sequence of probability 0 is an error, not a bin.
    """
    from scipy.stats import chisquare

    n = sum(counts.values())
    impossible = [s for s in counts if exact.get(s, 0.0) <= 0.0 and counts[s] > 0]
    if impossible:
        raise AssertionError(f"sampled sequences of probability 0: {impossible[:5]}")
    observed, expected = pooled_bins(counts, exact, min_expected)
    result = chisquare(observed, expected)
    return {
        "samples": n,
        "bins": len(observed),
        "chi_square": float(result.statistic),
        "p_value": float(result.pvalue),
        "tv_distance": 0.5 * sum(abs(counts.get(s, 0) / n - p) for s, p in exact.items()),
    }


def tree_outcomes(tokens: torch.Tensor, parents: list[int], p_target: torch.Tensor) -> float:
    """Every outcome of verify_tree (sample and match) on one tree, replayed: at each node, a draw in the middle of
    each token's share of the inverse CDF must emit that token, or descend to the child that holds it. Returns the
    total probability of the outcomes met (1 when every branch was reached); a wrong emission is an AssertionError
    naming the draws."""
    from specdec.verify import verify_tree

    ids = tokens.tolist()
    children: dict[int, dict[int, int]] = {}
    for i, parent in enumerate(parents):
        children.setdefault(parent, {})[ids[i]] = i
    gen = torch.Generator().manual_seed(0)
    total = 0.0

    def walk(node: int, draws: list[float], path: list[int], weight: float) -> None:
        nonlocal total
        p = p_target[node + 1].double()
        cdf = torch.cumsum(p, 0)
        for t in range(p.shape[0]):
            if float(p[t]) <= 0:
                continue
            u = (float(cdf[t - 1]) if t else 0.0) + float(p[t]) / 2
            here = draws + [u / float(cdf[-1])]
            child = children.get(node, {}).get(t)
            if child is not None:
                walk(child, here, path + [child], weight * float(p[t]))
                continue
            result = verify_tree(tokens, parents, p_target, gen, uniforms=torch.tensor(here, dtype=torch.float64))
            expected = [ids[c] for c in path] + [t]
            if result.path != path or result.tokens.tolist() != expected:
                raise AssertionError(f"draws {here}: emitted {result.tokens.tolist()} on path {result.path}, expected "
                                     f"{expected} on path {path}")
            if (result.bonus_token is not None) != (node not in children):
                raise AssertionError(f"draws {here}: a {'bonus' if result.bonus_token is not None else 'resampled'} "
                                     f"token where node {node} is {'a leaf' if node not in children else 'no leaf'}")
            total += weight * float(p[t])

    walk(-1, [], [], 1.0)
    return total


def sampled_tree_first_token_distribution(p_root: torch.Tensor, q: torch.Tensor, m: int) -> torch.Tensor:
    """Exact distribution (V,) float64 of the first token verify_tree_sampled emits when the prefix has m children
    drawn from q without replacement: every ordered draw of the children (its probability computed here), and for
    each, every branch of the rule's comparisons, replayed just below and just above each acceptance probability
    (the rule's own, read from the all-rejected replay). The rule is exact iff this is p_root."""
    import itertools

    from specdec.verify import verify_tree_sampled

    V = q.shape[0]
    gen = torch.Generator().manual_seed(0)
    eps = 1e-12
    dist = torch.zeros(V, dtype=torch.float64)
    p_target = p_root.double().expand(m + 1, V).clone()
    drawable = [x for x in range(V) if float(q[x]) > 0]
    for order in itertools.permutations(drawable, min(m, len(drawable))):
        weight, left = 1.0, 1.0
        for x in order:
            weight *= float(q[x]) / left
            left -= float(q[x])
        n = len(order)
        tokens = torch.tensor(order, dtype=torch.int64)
        q_draft = q.double().expand(n, V).clone()

        def replay(draws, tokens=tokens, n=n, q_draft=q_draft):
            return verify_tree_sampled(tokens, [-1] * n, q_draft, p_target, gen,
                                       uniforms=torch.tensor(draws + [0.5] * (n + 1 - len(draws)), dtype=torch.float64))

        rejected = replay([1.0] * n)  # every child rejected (a draw of 1 rejects): the acceptance probabilities, the residual
        a = [float(x) for x in rejected.accept_probs]
        reach = 1.0  # the probability of rejecting every child before this one
        for j in range(n):
            if a[j] > 0:
                result = replay([a[i] + (1 - a[i]) * eps for i in range(j)] + [a[j] * (1 - eps)])
                if result.path != [j] or int(result.tokens[0]) != order[j]:
                    raise AssertionError(f"children {order}: a draw just below {a[j]:.6g} did not accept child {j}")
                dist[order[j]] += weight * reach * a[j]
            reach *= 1 - a[j]
        if reach > 0:
            result = replay([a[i] + (1 - a[i]) * eps for i in range(n)])
            if result.path != [] or result.residual is None:
                raise AssertionError(f"children {order}: draws just above every acceptance probability accepted one")
            dist += weight * reach * result.residual.double()
    return dist


# ---------------------------------------------------------------- block verification, enumerated


def random_context_tables(V: int, k: int, seed: int) -> tuple[dict, dict]:
    """(p_of, q_of): a random target and draft as tables, context (a tuple of ids, up to k + 1 long) -> next-token
    distribution (V,) float64, peaked (cubed uniforms), so that ratios above and below 1 both occur."""
    import itertools

    gen = torch.Generator().manual_seed(seed)

    def table():
        out = {}
        for n in range(k + 2):
            for ctx in itertools.product(range(V), repeat=n):
                x = torch.rand(V, generator=gen, dtype=torch.float64) ** 3
                out[ctx] = x / x.sum()
        return out

    return table(), table()


def block_sequence_distribution(p_of: dict, q_of: dict, V: int, k: int) -> tuple[dict, dict]:
    """(spec, target): the exact distributions of the first k + 1 tokens of one block-verification step followed
    by the target's own sampling, and of the target's own sampling, from context tables (random_context_tables).

    For every draft block x (probability prod q), block verification's terms are computed HERE, by the paper's
    recursion (not read from verify_block): w_i = min(1, w_(i-1) p(x_i)/q(x_i)), h_i = m_i / (m_i + 1 - w_i) with
    m_i = sum max(0, w_i p - q) after prefix i, h_k = w_k; prefix tau is kept with probability h_tau prod_(i > tau)
    (1 - h_i). verify_block is then replayed with draws that keep exactly tau (eta_tau just below h_tau, every
    eta_i above it just above h_i): it must keep tau, and its residual is what the extra token is drawn from. A rule
    whose comparison or residual is wrong gives another distribution (or an AssertionError naming the block)."""
    import itertools

    from specdec.verify import verify_block

    eps = 1e-9
    gen = torch.Generator().manual_seed(0)
    spec: dict[tuple, float] = {}
    target: dict[tuple, float] = {}
    for seq in itertools.product(range(V), repeat=k + 1):
        prob = 1.0
        for i in range(k + 1):
            prob *= float(p_of[seq[:i]][seq[i]])
        target[seq] = prob
        spec[seq] = 0.0

    def add_continued(prefix: tuple, dist: torch.Tensor, weight: float):
        """Emit `prefix` then y ~ dist, then the target's own tokens up to k + 1."""
        for y in range(V):
            mass = weight * float(dist[y])
            if mass == 0.0:
                continue
            head = prefix + (y,)
            for tail in itertools.product(range(V), repeat=k + 1 - len(head)):
                prob, ctx = mass, head
                for t in tail:
                    prob *= float(p_of[ctx][t])
                    ctx = ctx + (t,)
                spec[ctx] += prob

    for block in itertools.product(range(V), repeat=k):
        q_block = 1.0
        for i in range(k):
            q_block *= float(q_of[block[:i]][block[i]])
        if q_block == 0.0:
            continue
        p_target = torch.stack([p_of[block[:i]] for i in range(k + 1)])
        q_draft = torch.stack([q_of[block[:i]] for i in range(k)])
        w, h = [1.0], [1.0]
        for i in range(1, k + 1):
            w.append(min(1.0, w[-1] * float(p_target[i - 1, block[i - 1]]) / float(q_draft[i - 1, block[i - 1]])))
        for i in range(1, k):
            m = float((w[i] * p_target[i] - q_draft[i]).clamp_min(0).sum())
            h.append(m / (m + 1.0 - w[i]) if m + 1.0 - w[i] > 0 else 1.0)
        h.append(w[k])
        tokens = torch.tensor(block)
        for tau in range(k + 1):
            keep = h[tau]
            for i in range(tau + 1, k + 1):
                keep *= 1.0 - h[i]
            if keep <= 0.0:
                continue
            uniforms = torch.tensor([min(1.0, h[i] + eps) if i > tau else h[i] * (1 - eps) if i == tau else 0.5
                                     for i in range(1, k + 1)], dtype=torch.float64)
            result = verify_block(tokens, q_draft, p_target, gen, uniforms=uniforms)
            if result.n_accepted != tau:
                raise AssertionError(f"block {block}: draws that keep prefix {tau} (h = {[round(x, 6) for x in h]}) "
                                     f"kept {result.n_accepted}")
            dist = p_target[k] if tau == k else result.residual.double()
            add_continued(tuple(block[:tau]), dist, q_block * keep)
    return spec, target
