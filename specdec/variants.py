"""The CPU variants of a pair, made in one place: the int8 copy of the draft and the packed kernels.

Its own module so that imports run one way: it uses `quantize` (the int8 copy) and `kernels` (the packing), and
`quantize` uses `kernels` (own_small_tensors); nothing imports back.
"""

from __future__ import annotations

import torch

from .kernels import pack_linear_layers, release_freed_memory
from .quantize import quantize_draft


def prepare_cpu_drafts(target: torch.nn.Module, draft: torch.nn.Module, *, packed: bool = True,
                       int8: bool = True) -> dict[str, torch.nn.Module]:
    """The one place the CPU variants are made: {"fp32": draft, "int8": its int8 copy} (int8 if asked).

    The int8 copy is quantized from the unpacked float32 weights first; then the target (and so its
    target-only baseline, the very same object) and the fp32 draft get the packed kernels, in place.
    """
    drafts = {"int8": quantize_draft(draft)} if int8 else {}
    release_freed_memory()  # quantizing's temporaries, before packing allocates
    if packed:
        pack_linear_layers(target)
        pack_linear_layers(draft)
    release_freed_memory()
    return {"fp32": draft, **drafts}
