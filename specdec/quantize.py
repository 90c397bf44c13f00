"""A faster draft for the CPU: dynamic int8 quantization of its Linear layers.

Exactness is unaffected by any change to the draft: the verifier uses the q that the quantized model
actually produced (Leviathan et al. 2022, Sec. 3: any q works; a better q only raises acceptance).
"""

from __future__ import annotations

import copy
import warnings

import torch

from .kernels import own_small_tensors


def quantize_draft(model: torch.nn.Module) -> torch.nn.Module:
    """Dynamic int8 quantization of every Linear layer (CPU): a new model; the original is untouched."""
    from torch.ao.quantization import quantize_dynamic

    # The copy shares the float32 tensors with the original instead of copying them (a deepcopy memo): the Linear
    # layers' weights until quantize_dynamic replaces each Linear by an int8 one built from them, leaving them as they
    # were, and the embedding for good, as a new Parameter object on the same storage, so that moving or casting the
    # copy later leaves the original alone. The draft's float32 weights are never held twice (a whole deepcopy did:
    # 1.4 GB for the 0.5B draft, its 0.5 GB embedding included). The small tensors (norms, biases, rotary buffers)
    # end up copied (own_small_tensors): shared, they would keep a memory-mapped original's file mappings resident.
    shared = {}
    for m in model.modules():
        linear = type(m) is torch.nn.Linear
        for t in (*m.parameters(recurse=False), *m.buffers(recurse=False)):
            if linear:  # the weight shared; the bias copied, as the int8 layer keeps it
                shared[id(t)] = t if t is m.weight else t.detach().clone()
            elif isinstance(t, torch.nn.Parameter):
                shared[id(t)] = torch.nn.Parameter(t.detach(), requires_grad=t.requires_grad)
            else:
                shared[id(t)] = t.detach()
    twin = copy.deepcopy(model, memo=shared)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization is deprecated in favour of torchao
        # in place on our copy: quantize_dynamic would deep-copy again otherwise
        int8 = quantize_dynamic(twin, {torch.nn.Linear}, dtype=torch.qint8, inplace=True).eval()
    return own_small_tensors(int8)
