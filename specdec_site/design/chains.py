"""Draft chains: recording them with the real pair (`collect`), reading the files `collect` wrote, and what a
replayed step costs (the committed runs' draft seconds per token and verify line, or the costs a chains file stores)."""

from __future__ import annotations

import gzip
import json
import math
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from specdec_site.paths import ROOT


def record_chains(target, draft, ids, n: int, k: int, vocab_size: int | None = None) -> list[dict]:
    """For each start t of the target's greedy continuation of ids (n tokens): the draft's greedy chain of
    up to k tokens from the target's prefix, its confidences, and how many the target accepts."""
    import torch

    from specdec import autoregressive_generate
    from specdec.cache import CachedLM, resolve_vocab_size
    from specdec.drafters import NgramDrafter, draft_confidence, draft_entropy, draft_margin
    from specdec.sampling import SamplingConfig

    V = resolve_vocab_size(target, draft, vocab_size)
    cont = autoregressive_generate(target, ids, max_new_tokens=n, temperature=0.0, vocab_size=V,
                                   generator=torch.Generator().manual_seed(0)).tolist()
    padded = cont + [0] * k
    seq = torch.cat([ids, torch.tensor(padded)])[None]  # (1, n_prompt + n + k)
    lm, n0, chains, greedy = CachedLM(draft, V, "draft"), ids.shape[0], [], SamplingConfig(0.0)
    ngram = NgramDrafter()
    for t in range(len(cont)):
        start = n0 + t
        lm.rollback(start - 1)  # as the decoder leaves it: every final token but the last one cached
        tokens, confidences, margins, entropies, lookups = [], [], [], [], []
        for i in range(min(k, len(cont) - t)):
            logits = lm.logits(seq[:, : start + i], 1)[0]  # (V,)
            tokens.append(int(logits.argmax()))
            confidences.append(draft_confidence(logits, None, greedy))
            margins.append(draft_margin(logits))
            entropies.append(draft_entropy(logits))
            # what a prompt lookup would propose here: agrees (1), differs (0), or has no match (-1)
            proposal = ngram.lookup(seq[0, : start + i].tolist(), 1)
            lookups.append(-1 if not proposal else int(proposal[0] == tokens[-1]))
            seq[0, start + i] = tokens[-1]  # the chain goes on from its own token, as a draft does
        accepted = 0
        while accepted < len(tokens) and tokens[accepted] == cont[t + accepted]:
            accepted += 1
        chains.append({"confidences": [round(c, 5) for c in confidences], "margins": [round(m, 5) for m in margins],
                       "entropies": [round(e, 4) for e in entropies], "lookup": lookups, "accepted": accepted})
        seq[0, start:start + k] = torch.tensor(padded[t:t + k])  # back to the target's tokens
    return chains


def collect(args) -> None:
    from specdec.fileio import write_json_atomic
    from specdec_site.prompts import encode
    from specdec_site.public_prompts import public_prompts

    ctx = default_pair()
    out = {"k": args.k, "tokens": args.tokens, "prompts": []}
    for domain in args.domains:
        for prompt in public_prompts(domain, args.start, args.count):
            ids = encode(ctx.target.tokenizer, prompt, ctx.device)
            chains = record_chains(ctx.target.model, ctx.default_draft, ids, args.tokens, args.k, ctx.vocab_size)
            out["prompts"].append({"domain": domain, "id": prompt["id"], "chains": chains})
            print(f"{prompt['id']}: mean accepted run {statistics.mean(c['accepted'] for c in chains):.2f}", flush=True)
            write_json_atomic(Path(args.out), out)  # after every prompt: a killed run keeps what it recorded


MIN_STEPS = 5  # a k is costed at its own median verify time only with at least this many recorded steps


@dataclass(frozen=True)
class Costs:
    """What a replayed step costs: `draft` seconds per draft token, and a verify pass of k drafts `per_k[k]`
    seconds, or the line intercept + slope k for a k without a measured median."""
    draft: float  # seconds per draft token
    intercept: float  # the verify line's a
    slope: float  # the verify line's b
    per_k: dict = field(default_factory=dict)  # k -> median verify seconds measured at that k

    def verify(self, k: int) -> float:
        return self.per_k.get(k, self.intercept + self.slope * k)


def costs(domain: str, per_k: bool = True, data: dict | None = None) -> Costs:
    """The committed adaptive runs' costs (of every domain, for one they lack): medians over the prompts of each
    run's draft seconds per token and
    verify line, and (per_k) the median verify seconds of every step after the first (the prefill) at each k
    drafted by at least MIN_STEPS of them. Measured verify time need not be a straight line in k: the padded
    kernels (specdec.kernels.MIN_ROWS) score the 2 to 4 rows of k = 1 to 3 in one time."""
    if data is None:
        data = json.loads((ROOT / "docs" / "data" / "cpu" / "policies.json").read_text())
    # a domain the committed runs do not have is costed on all of theirs (the target and draft are the same)
    rows = data["domains"][domain]["rows"] if domain in data["domains"] else \
        [r for d in data["domains"].values() for r in d["rows"]]
    runs = [r["variants"]["adaptive"] for r in rows]
    line = [statistics.median(run["oracle"][key] for run in runs)
            for key in ("draft_seconds_per_token", "verify_intercept", "verify_slope")]
    by_k = {}
    for run in runs:
        for step in run["steps"][1:]:
            by_k.setdefault(step["k"], []).append(step["verify_seconds"])
    medians = {k: statistics.median(v) for k, v in sorted(by_k.items()) if len(v) >= MIN_STEPS} if per_k else {}
    return Costs(*line, medians)


def with_depth(prompts: list[dict]) -> list[dict]:
    """The chains with each draft's depth in its step as one more signal, "depth"."""
    for p in prompts:
        for chain in p["chains"]:
            chain["depth"] = list(range(1, len(chain["confidences"]) + 1))
    return prompts


def read_chains_file(path: str) -> dict:
    """One file that `collect` wrote, or an exit in one line that says what it is instead (empty, binary, JSON of
    another shape: each gave a traceback)."""
    try:
        text = gzip.open(path, "rt").read() if str(path).endswith(".gz") else Path(path).read_text()
        data = json.loads(text)
    except (OSError, EOFError, UnicodeDecodeError, ValueError) as err:
        sys.exit(f"{path}: not a chains file written by `collect` (it is not {'gzipped ' if str(path).endswith('.gz') else ''}"
                 f"JSON: {err})")
    if not isinstance(data, dict) or not isinstance(data.get("prompts"), list) or not data["prompts"] \
            or not isinstance(data.get("k"), int):
        sys.exit(f"{path}: not a chains file written by `collect` (it needs a non-empty 'prompts' list and 'k')")
    for domain, c in (data.get("costs") or {}).items():
        numbers = [c.get("draft"), c.get("intercept"), c.get("slope")] if isinstance(c, dict) else [None]
        if not all(isinstance(x, (int, float)) and math.isfinite(x) and x >= 0 for x in numbers) or not numbers[1]:
            sys.exit(f"{path}: the costs stored for {domain} are not finite non-negative seconds with a positive "
                     f"intercept ({c!r}): record the chains again")
    return data


def load_chains(paths: list[str]) -> dict:
    """The prompts of one or more collect files, with their common cap k (the smallest) and depth as a signal."""
    files = [read_chains_file(path) for path in paths]
    prompts, stored = {}, {}
    for f in files:
        for p in f["prompts"]:
            prompts.setdefault(p["id"], p)  # a prompt recorded twice (overlapping --start ranges) counts once
        stored.update({domain: Costs(c["draft"], c["intercept"], c["slope"], {int(k): v for k, v in c["per_k"].items()})
                       for domain, c in f.get("costs", {}).items()})
    return {"k": min(f["k"] for f in files), "prompts": with_depth(list(prompts.values())), "costs": stored,
            "costs_from": "; ".join(f["costs_from"] for f in files if "costs_from" in f),
            "recorded": [f["recorded"] for f in files if "recorded" in f]}


def domain_costs(data: dict, domain: str, per_k: bool = True) -> Costs:
    """The costs the chains file stores for the domain (design_chains.json.gz keeps the ones its prior was fitted
    at, so that a rebuild of the data does not change the fit), else the committed runs' (costs)."""
    if domain in data["costs"]:
        cost = data["costs"][domain]
        return cost if per_k else Costs(cost.draft, cost.intercept, cost.slope)
    return costs(domain, per_k)


def default_pair():
    """The run's context for the pair the build runs by default, on the CPU: the engine's model options at their
    defaults (collect and probe record with it)."""
    from specdec_site.engine.options import OneLineParser, add_model_options, make_context, resolve_models

    parser = OneLineParser(prog="simulate_policies.py")
    add_model_options(parser)
    args = parser.parse_args(["--device", "cpu"])
    resolve_models(parser, args)  # the default pair's names, as the build resolves them
    return make_context(args)


def provenance(tool: str, chains: list[str]) -> dict:
    """What a design artifact records so that a test can tell it from a stale one: the digest of the code its command
    runs (engine.freshness.tool_code_hash), the sha256 of each chains file it read, and the commit."""
    from specdec.fileio import sha256_file
    from specdec_site.engine.freshness import tool_code_hash
    from specdec_site.engine.meta import git_state

    return {"code_sha256": tool_code_hash(tool), "git": git_state(),
            "inputs": {_relative(c): sha256_file(Path(c)) for c in chains}}


def _relative(path) -> str:
    """A chains file's path from the repository root where it lies inside it (the committed files), else as given."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(path)
