"""Stage `traces`: recorded speculative_generate runs for the Step Visualizer (every step: drafts, q, p, draws,
fates, top-10s, timings), fixed k on every trace prompt and the adaptive policy on the first of each domain. The
prompt table is a setting (cfg.prompts: prompts.PROMPTS, or the user's --prompts), so a new prompt reruns this stage
alone. `record_run` is one run, which the one-prompt `trace` command (trace_command.py) shares."""

from __future__ import annotations

from specdec_site.prompts import encode, eos_ids, has_chat_template


def token_texts(tokenizer, ids: list[int]) -> list[str]:
    """Each token's own text (bytes of partial UTF-8 characters shown as the replacement char)."""
    return [tokenizer.decode([i]) for i in ids]


def trace_vocab(tokenizer, ids, tokens, record: dict) -> dict:
    """Text of every token id the visualizer can show for a run."""
    vocab = set(ids.tolist()) | set(tokens.tolist())
    for s in record["steps"]:
        vocab |= set(s["draft_tokens"])
        for top in s["top_p"] + s["top_q"] + ([s["top_residual"]] if s["top_residual"] else []):
            vocab |= set(top["ids"])
    return {str(i): t for i, t in zip(sorted(vocab), token_texts(tokenizer, sorted(vocab)))}


def trace_jobs(cfg) -> list[tuple]:
    """(domain, prompt, mode, policy, k, tree, verify): fixed k on every trace prompt, the adaptive policy on the
    first, on the first a token tree (tree: cfg.trace_tree's (width, depth), every node with its top-width children;
    k is its depth), and on the first, sampled, fixed k under block verification (verify "block"; at T = 0 it keeps
    what the token rule keeps), which the Step Visualizer draws."""
    prompts = cfg.prompts
    jobs = [(domain, p, mode, "fixed", cfg.trace_k, None, "token") for domain in prompts
            for p in prompts[domain][: cfg.trace_prompts[domain]] for mode in cfg.modes]
    jobs += [(domain, prompts[domain][0], mode, "adaptive", cfg.adaptive_trace_k, None, "token") for domain in prompts
             for mode in cfg.modes]
    if cfg.trace_tree is not None:
        jobs += [(domain, prompts[domain][0], mode, "fixed", cfg.trace_tree[1], tuple(cfg.trace_tree), "token")
                 for domain in prompts for mode in cfg.modes]
    jobs += [(domain, prompts[domain][0], "sampled", "fixed", cfg.trace_k, None, "block") for domain in prompts]
    return jobs


def tree_drafter(ctx, tree: tuple | None):
    """The Drafter of a job's tree ((width, depth): the full tree), or None (the default draft, a chain)."""
    if tree is None:
        return None
    from specdec import TreeDrafter, TreeShape

    return TreeDrafter(ctx.default_draft, TreeShape.full(*tree))


def record_run(ctx, domain: str, prompt: dict, mode: str, sampling: dict, policy, k: int, n_tokens: int,
               drafter=None, compare_greedy: bool = True, references: dict | None = None, verify: str = "token") -> dict:
    """One recorded run of the artifact's format: the trace, the texts, and at T = 0 whether it equals the target's
    own greedy run (compare_greedy). `drafter`: a model or Drafter (default: the build's default draft).
    `references`: the target-only greedy runs so far, by prompt id: a prompt's runs share one (one baseline per
    prompt: the race of the fixed and the adaptive run is against the same target-only time). `verify`: a chain's
    rule, "token" or "block"."""
    tok = ctx.target.tokenizer
    eos = eos_ids(tok)  # traces stop at the end-of-turn token, as a user's generation would
    ids = encode(tok, prompt, ctx.device)
    draft = ctx.default_draft if drafter is None else drafter
    seconds, (tokens, trace) = ctx.run_spec(draft, ids, n_tokens, k, sampling, ctx.seed, eos=eos, policy=policy,
                                         verify=verify)
    record = trace.to_dict()
    greedy_equal, target_seconds = None, None
    if mode == "greedy" and compare_greedy:
        references = {} if references is None else references
        if prompt["id"] not in references:
            references[prompt["id"]] = ctx.run_target(ids, n_tokens, sampling, ctx.seed, eos=eos)
        target_seconds, reference = references[prompt["id"]]
        greedy_equal = reference.tolist() == tokens.tolist()
    policy_name = trace.policy
    suffix = (("" if policy_name == "fixed" else f"-{policy_name}") + ("-tree" if trace.drafter == "tree" else "")
              + ("-block" if verify == "block" else ""))
    return {
        "id": f"{prompt['id']}-{mode}{suffix}", "domain": domain, "mode": mode, "policy": policy_name,
        "prompt": prompt, "chat_template": prompt["kind"] == "chat" and has_chat_template(tok),
        "sampling": sampling, "prompt_tokens": ids.tolist(), "prompt_text": tok.decode(ids),
        "tokens": tokens.tolist(), "text": tok.decode(tokens), "seconds": seconds,
        "target_seconds": target_seconds, "eos_token_ids": eos, "equals_target_greedy": greedy_equal,
        "vocab": trace_vocab(tok, ids, tokens, record), "trace": record,
    }


def run(ctx, cfg) -> dict:
    references: dict = {}  # one target-only greedy run per prompt, shared by its fixed and adaptive runs
    runs = [record_run(ctx, domain, prompt, mode, cfg.modes[mode], policy, k, cfg.trace_tokens, tree_drafter(ctx, tree),
                       references=references, verify=verify)
            for domain, prompt, mode, policy, k, tree, verify in ctx.tqdm(trace_jobs(cfg), desc="traces", unit="run")]
    return {"draft_variant": ctx.default_draft_name, "runs": runs}
