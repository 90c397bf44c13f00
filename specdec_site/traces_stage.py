"""Stage `traces`: recorded speculative_generate runs for the Step Visualizer (every step: drafts, q, p, draws,
fates, top-10s, timings), fixed k on every trace prompt and the adaptive policy on the first of each domain."""

from __future__ import annotations

from .prompts import PROMPTS, encode, eos_ids


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
    """(domain, prompt, mode, policy, k): fixed k on every trace prompt, the adaptive policy on the first."""
    jobs = [(domain, p, mode, "fixed", cfg.trace_k) for domain in PROMPTS
            for p in PROMPTS[domain][: cfg.trace_prompts[domain]] for mode in cfg.modes]
    jobs += [(domain, PROMPTS[domain][0], mode, "adaptive", cfg.adaptive_trace_k) for domain in PROMPTS
             for mode in cfg.modes]
    return jobs


def run(ctx, cfg) -> dict:
    tok = ctx.target.tokenizer
    eos = eos_ids(tok)  # traces stop at the end-of-turn token, as a user's generation would
    runs = []
    for domain, prompt, mode, policy, k in ctx.tqdm(trace_jobs(cfg), desc="traces", unit="run"):
        ids = encode(tok, prompt, ctx.device)
        sampling = cfg.modes[mode]
        seconds, (tokens, trace) = ctx.run_spec(ctx.default_draft, ids, cfg.trace_tokens, k, sampling, ctx.seed,
                                                eos=eos, policy=policy)
        record = trace.to_dict()
        greedy_equal, target_seconds = None, None
        if mode == "greedy":
            target_seconds, reference = ctx.run_target(ids, cfg.trace_tokens, sampling, ctx.seed, eos=eos)
            greedy_equal = reference.tolist() == tokens.tolist()
        suffix = "" if policy == "fixed" else f"-{policy}"
        runs.append({
            "id": f"{prompt['id']}-{mode}{suffix}", "domain": domain, "mode": mode, "policy": policy,
            "prompt": prompt, "sampling": sampling, "prompt_tokens": ids.tolist(), "prompt_text": tok.decode(ids),
            "tokens": tokens.tolist(), "text": tok.decode(tokens), "seconds": seconds,
            "target_seconds": target_seconds, "eos_token_ids": eos, "equals_target_greedy": greedy_equal,
            "vocab": trace_vocab(tok, ids, tokens, record), "trace": record,
        })
    return {"draft_variant": ctx.default_draft_name, "runs": runs}
