"""specdec: exact speculative decoding (Leviathan et al. 2022, arXiv 2211.17192), run on real models."""

from .decoding import GenerationTrace, StepRecord, autoregressive_generate, speculative_generate
from .models import (
    DEFAULT_DRAFT,
    DEFAULT_TARGET,
    ModelLoadError,
    TokenizerMismatchError,
    check_same_tokenizer,
    load_model,
    load_pair,
)
from .fast import pack_linear_layers, quantize_draft
from .sampling import SamplingConfig, probs_from_logits
from .verify import VerifyResult, acceptance_probability, residual_distribution, verify_draft

__version__ = "0.1.0"
__all__ = [
    "DEFAULT_DRAFT", "DEFAULT_TARGET", "GenerationTrace", "ModelLoadError", "SamplingConfig", "StepRecord",
    "TokenizerMismatchError", "VerifyResult", "acceptance_probability", "autoregressive_generate",
    "check_same_tokenizer", "load_model", "load_pair", "pack_linear_layers", "probs_from_logits", "quantize_draft",
    "residual_distribution", "speculative_generate", "verify_draft",
]
