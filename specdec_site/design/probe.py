"""A trained head? Score a linear probe on the draft's hidden state against its confidence as a predictor of
acceptance on the design prompts (`probe`: the real pair, then no model)."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

from specdec_site.design.chains import default_pair, load_chains, provenance

PROBE_RIDGES = (0.01, 0.1, 1.0, 10.0)  # ridge strengths on the hidden-state weights: every one is reported, none chosen
PROBE_BINS = 10  # the policy's calibration: acceptance per confidence bin (specdec.prior's bins)


def record_probe(target, draft, ids, n: int, vocab_size: int | None = None) -> dict:
    """At each position t of the target's greedy continuation of ids (n tokens): the draft's last hidden state (what
    its output head reads), its confidence, and whether its greedy token is the target's. The draft is fed one token
    per forward pass from the target's prefix, as for a step's first draft token (record_chains' first tokens)."""
    import torch

    from specdec import autoregressive_generate
    from specdec.cache import CachedLM, check_logits, resolve_vocab_size
    from specdec.drafters import draft_confidence
    from specdec.sampling import SamplingConfig

    V = resolve_vocab_size(target, draft, vocab_size)
    cont = autoregressive_generate(target, ids, max_new_tokens=n, temperature=0.0, vocab_size=V,
                                   generator=torch.Generator().manual_seed(0))
    seq = torch.cat([ids, cont])[None]  # (1, n_prompt + n)
    lm, n0, greedy = CachedLM(draft, V, "draft"), ids.shape[0], SamplingConfig(0.0)
    hidden, confidences, agree = [], [], []
    with torch.inference_mode():
        for t in range(n):
            new = seq[:, lm.cached: n0 + t]  # the prefix's tokens the cache lacks (the whole prompt at t = 0)
            out = lm.model(input_ids=new, use_cache=True, logits_to_keep=1, output_hidden_states=True,
                           **{lm.cache_kwarg: lm.cache})
            logits = out.logits[0, -1, : lm.rows].float()  # (V,) when the heads match (resolve_vocab_size)
            check_logits(logits[None], "draft")
            hidden.append(out.hidden_states[-1][0, -1].float())  # (d,): after the final norm, the head's input
            confidences.append(draft_confidence(logits, None, greedy))
            agree.append(int(logits.argmax()) == int(cont[t]))
    return {"hidden": torch.stack(hidden), "confidences": confidences, "agree": agree}


def fit_logistic(x, y, ridge: float, free: int = 1):
    """P(y = 1 | x) by logistic regression on standardized features (L-BFGS), the ridge penalty on every weight but
    the last `free` ones (the confidence's): returns the fitted predictor, x -> probabilities."""
    import torch

    mean, scale = x.mean(0), x.std(0) + 1e-3
    z = (x - mean) / scale
    w = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=300, tolerance_grad=1e-9, line_search_fn="strong_wolfe")
    penalized = slice(0, x.shape[1] - free)

    def loss():
        opt.zero_grad()
        value = torch.nn.functional.binary_cross_entropy_with_logits(z @ w + b, y) + ridge * (w[penalized] ** 2).sum()
        value.backward()
        return value

    opt.step(loss)
    w, b = w.detach(), b.detach()
    return lambda x_new: torch.sigmoid(((x_new - mean) / scale) @ w + b)


def log_loss(p, y) -> float:
    p = p.clamp(1e-6, 1 - 1e-6)
    return float(-(y * p.log() + (1 - y) * (1 - p).log()).mean())


def auc(p, y) -> float:
    """The area under the ROC curve: P(a random accepted position scores above a random rejected one), ties half."""
    pos, neg = p[y == 1], p[y == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    return float((pos[:, None] > neg[None]).double().mean() + 0.5 * (pos[:, None] == neg[None]).double().mean())


def probe_predictors(records: list[dict], ridges=PROBE_RIDGES) -> dict:
    """name -> [(record, its probabilities)]: each record's acceptance predicted by a model fitted on all the OTHER
    records (leave one prompt out), for the policy's calibration (acceptance per confidence bin), a logistic on the
    confidence, and a logistic on the hidden state and the confidence at each ridge strength."""
    import torch

    def features(r, with_hidden):
        c = torch.tensor(r["confidences"], dtype=torch.float64).clamp(1e-6, 1 - 1e-6)
        logit = (c / (1 - c)).log()[:, None]
        return torch.cat([r["hidden"].double(), logit], 1) if with_hidden else logit

    def labels(rs):
        return torch.tensor([float(a) for r in rs for a in r["agree"]], dtype=torch.float64)

    def bins(r):
        return [min(PROBE_BINS - 1, int(c * PROBE_BINS)) for c in r["confidences"]]

    out = {"confidence bins (the policy's calibration)": [], "logistic on the confidence": [],
           **{f"logistic on the hidden state and the confidence, ridge {ridge:g}": [] for ridge in ridges}}
    for i, r in enumerate(records):
        rest = records[:i] + records[i + 1:]
        tried, accepted = [1.0] * PROBE_BINS, [0.5] * PROBE_BINS  # half a pseudo-observation each way per bin
        for other in rest:
            for b, a in zip(bins(other), other["agree"]):
                tried[b] += 1
                accepted[b] += a
        names = iter(out)
        out[next(names)].append((r, torch.tensor([accepted[b] / tried[b] for b in bins(r)], dtype=torch.float64)))
        y = labels(rest)
        for name, with_hidden, ridge in [(next(names), False, 0.0), *((next(names), True, rg) for rg in ridges)]:
            x = torch.cat([features(o, with_hidden) for o in rest])
            out[name].append((r, fit_logistic(x, y, ridge)(features(r, with_hidden))))
    return out


def probe_table(records: list[dict], ridges=PROBE_RIDGES) -> dict:
    """name -> {set: {"log_loss", "auc", "positions"}}, per prompt set and over all ("all"), leave one prompt out."""
    import torch

    table = {}
    for name, predictions in probe_predictors(records, ridges).items():
        row = {}
        for domain in [*sorted({r["domain"] for r in records}), "all"]:
            mine = [(r, p) for r, p in predictions if domain in ("all", r["domain"])]
            p = torch.cat([p for _, p in mine])
            y = torch.tensor([float(a) for r, _ in mine for a in r["agree"]], dtype=torch.float64)
            row[domain] = {"log_loss": round(log_loss(p, y), 4), "auc": round(auc(p, y), 4), "positions": len(y)}
        table[name] = row
    return table


def design_prompts(data: dict) -> list[tuple[str, dict]]:
    """(set, prompt) for each prompt of a chains file, in its order: the public prompts from index 12 (collect's
    --start) whose ids the file lists."""
    from specdec_site.public_prompts import public_prompts

    out = []
    for domain in dict.fromkeys(p["domain"] for p in data["prompts"]):
        ids = [p["id"] for p in data["prompts"] if p["domain"] == domain]
        prompts = public_prompts(domain, 12, len(ids))
        if [p["id"] for p in prompts] != ids:
            sys.exit(f"the chains file's {domain} prompts are not the {len(ids)} public ones from index 12")
        out += [(domain, p) for p in prompts]
    return out


def probe(args) -> None:
    import platform

    import torch
    import transformers

    from specdec.fileio import write_json_atomic
    from specdec_site.prompts import encode

    data = load_chains(args.chains)
    prompts = design_prompts(data)  # before any model loads
    ctx = default_pair()
    tokens = {p["id"]: len(p["chains"]) for p in data["prompts"]}  # the continuation's length the chains were recorded at
    records = []
    for domain, prompt in prompts:
        ids = encode(ctx.target.tokenizer, prompt, ctx.device)
        record = record_probe(ctx.target.model, ctx.default_draft, ids, tokens[prompt["id"]], ctx.vocab_size)
        records.append({"domain": domain, "id": prompt["id"], **record})
        print(f"{prompt['id']}: the draft's first token agrees at {sum(record['agree'])} of {len(record['agree'])}", flush=True)
    table = probe_table(records)
    print(f"{'predictor (leave one prompt out)':<62}" + "".join(f"{d + ' log-loss · AUC':>28}" for d in table[next(iter(table))]))
    for name, row in table.items():
        print(f"{name:<62}" + "".join(f"{v['log_loss']:>19.4f} · {v['auc']:.4f}" for v in row.values()))
    write_json_atomic(Path(args.json), {
        "command": "python scripts/simulate_policies.py probe " + " ".join(args.argv),
        **provenance("probe", args.chains),
        "recorded": {"target": ctx.target.name, "draft": f"{ctx.draft.name} ({ctx.default_draft_name})",
                     "device": str(ctx.device), "dtype": str(ctx.dtype).replace("torch.", ""), "greedy": True,
                     "new_tokens": sorted(set(tokens.values())), "hidden_size": int(records[0]["hidden"].shape[1]),
                     "torch": torch.__version__, "transformers": transformers.__version__,
                     "python": platform.python_version(), "date": datetime.date.today().isoformat()},
        "prompts": {d: [r["id"] for r in records if r["domain"] == d] for d in dict.fromkeys(r["domain"] for r in records)},
        "ridges": list(PROBE_RIDGES), "bins": PROBE_BINS, "predictors": table})
