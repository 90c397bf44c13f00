"""specdec: exact speculative decoding (Leviathan et al. 2022, arXiv 2211.17192), run on real models.

Names are imported lazily (PEP 562), so that the torch-free modules (`specdec.theory`,
`specdec.fileio`) serve the site build, which has no torch.
"""

from __future__ import annotations

import importlib

__version__ = "0.2.0"

# public name -> the module that defines it
_EXPORTS = {
    "GenerationTrace": "trace", "StepRecord": "trace", "autoregressive_generate": "decoding",
    "speculative_generate": "decoding",
    "Drafter": "drafters", "ModelDrafter": "drafters", "NgramDrafter": "drafters", "HybridDrafter": "drafters",
    "DraftPolicy": "policies", "FixedPolicy": "policies", "ConfidencePolicy": "policies",
    "HeuristicPolicy": "policies", "AdaptivePolicy": "policies", "POLICIES": "policies",
    "DEFAULT_DRAFT": "models", "DEFAULT_TARGET": "models", "ModelLoadError": "models",
    "TokenizerMismatchError": "models", "check_same_tokenizer": "models", "load_model": "models",
    "load_pair": "models",
    "pack_linear_layers": "kernels", "prepare_cpu_drafts": "variants", "quantize_draft": "quantize",
    "SamplingConfig": "sampling", "probs_from_logits": "sampling",
    "VerifyResult": "verify", "acceptance_probability": "verify", "residual_distribution": "verify",
    "verify_draft": "verify", "verify_proposal": "verify", "verify_tree": "verify", "verify_tree_sampled": "verify",
    "verify_block": "verify", "block_terms": "verify",
    "Proposal": "drafters",
    "TreeDrafter": "tree", "TreeShape": "tree",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'specdec' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
