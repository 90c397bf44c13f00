"""A faster draft for the CPU: dynamic int8 quantization of its Linear layers.

Exactness is unaffected by any change to the draft: the verifier uses the q that the quantized model
actually produced (Leviathan et al. 2022, Sec. 3: any q works; a better q only raises acceptance).
"""

from __future__ import annotations

import copy
import warnings

import torch


def quantize_draft(model: torch.nn.Module) -> torch.nn.Module:
    """Dynamic int8 quantization of every Linear layer (CPU): a new model; the original is untouched."""
    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization is deprecated in favour of torchao
        # One copy: quantize_dynamic would deep-copy again unless told to work in place on ours.
        return quantize_dynamic(copy.deepcopy(model), {torch.nn.Linear}, dtype=torch.qint8, inplace=True).eval()
