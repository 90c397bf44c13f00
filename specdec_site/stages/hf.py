"""Hugging Face assisted generation with the same target object, draft object and prompt (greedy).

The baseline of every comparison is specdec's own target-only run (`autoregressive_generate`) of the
same target object, which reproduces `target.generate`'s greedy output token for token."""

from __future__ import annotations

# transformers 5's assisted generation: by default the draft proposes up to 20 tokens and stops early
# when its confidence drops below 0.4 (assistant_confidence_threshold). "constant" pins it to k.
HF_SCHEDULES = {
    "constant": lambda k: {"num_assistant_tokens": k, "num_assistant_tokens_schedule": "constant",
                           "assistant_confidence_threshold": 0.0},
    "default": lambda k: {},
}
# Prompt lookup (Saxena 2023): transformers' n-gram candidate generator, no draft model. transformers has no
# default number of tokens; 10 is the value its documentation uses. The n-gram size keeps its default (2).
HF_PROMPT_LOOKUP = {"prompt_lookup_num_tokens": 10}
HF_DEFAULT_DESCRIPTION = "transformers defaults: up to 20 draft tokens per step, stopping early below 0.4 draft confidence"


def generation_config(tokenizer, n: int, **extra):
    """Plain greedy, exactly n tokens, nothing else (no repetition penalty or sampling defaults)."""
    from transformers import GenerationConfig

    return GenerationConfig(max_new_tokens=n, min_new_tokens=n, do_sample=False, num_beams=1,
                            pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id,
                            eos_token_id=tokenizer.eos_token_id, **extra)


def hf_assisted(ctx, ids, n: int, k: int | None, schedule: str | None, draft_model):
    """(seconds, new tokens) of target.generate(..., assistant_model=draft_model). The attention mask is given
    (all ones: one unpadded prompt), so generate never infers one from the pad id.

    schedule=None: the draft's own GenerationConfig is used and kept, as for a user calling generate
    repeatedly (transformers may tune its confidence threshold across calls); otherwise a fresh one
    with HF_SCHEDULES[schedule](k) for this call only.
    """
    import torch
    from transformers import GenerationConfig

    saved = draft_model.generation_config if hasattr(draft_model, "generation_config") else None
    if schedule is not None:
        draft_model.generation_config = GenerationConfig(**HF_SCHEDULES[schedule](k))
    try:
        config = generation_config(ctx.target.tokenizer, n)
        seconds, out = ctx.timed(lambda: ctx.target.model.generate(ids[None], attention_mask=torch.ones_like(ids[None]),
                                                                   generation_config=config, assistant_model=draft_model))
    finally:
        if schedule is not None:
            draft_model.generation_config = saved
    return seconds, out[0, ids.shape[0]:]


def hf_prompt_lookup(ctx, ids, n: int):
    """(seconds, new tokens) of target.generate(..., prompt_lookup_num_tokens=10): no draft model."""
    import torch

    config = generation_config(ctx.target.tokenizer, n, **HF_PROMPT_LOOKUP)
    seconds, out = ctx.timed(lambda: ctx.target.model.generate(ids[None], attention_mask=torch.ones_like(ids[None]),
                                                               generation_config=config))
    return seconds, out[0, ids.shape[0]:]
