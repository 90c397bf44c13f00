"""Faster CPU kernels for the same models: oneDNN-packed float32 Linear layers.

On CPU, a forward pass of a 1-2B model is dominated by its Linear layers. PyTorch's default float32
path (MKL sgemm) re-packs each weight matrix on every call and is slow for the 1..9-row inputs of
decoding: here scoring 5 tokens cost ~2x scoring one. oneDNN with weights packed once ahead of time
scores 1..9 rows in nearly the time of one (and one row faster than MKL), which is exactly what a
verification pass needs. The weights and the math are unchanged; only the kernel and its summation
order are, so outputs agree with the unpacked model to float32 rounding (tested).

`pack_linear_layers` is applied to the target AND to the baseline it is compared with (the same model
object), so every speedup is measured against the same fast kernels.
"""

from __future__ import annotations

import torch


class PackedLinear(torch.nn.Module):
    """A float32 nn.Linear whose weight is pre-packed for oneDNN (CPU inference only)."""

    def __init__(self, linear: torch.nn.Linear, batch_hint: int | None = None):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        weight = linear.weight.detach().float().contiguous()
        self.register_buffer("packed", torch.ops.mkldnn._reorder_linear_weight(weight, batch_hint), persistent=False)
        bias = linear.bias.detach().float().contiguous() if linear.bias is not None else None
        self.register_buffer("bias", bias, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        out = torch.ops.mkldnn._linear_pointwise(x.reshape(-1, shape[-1]).contiguous(), self.packed, self.bias,
                                                 "none", [None], "")
        return out.reshape(*shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def can_pack() -> bool:
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def pack_linear_layers(model: torch.nn.Module, batch_hint: int | None = None) -> torch.nn.Module:
    """Replace every float32 CPU nn.Linear of `model` (in place) by a PackedLinear; returns the model."""
    if not can_pack():
        raise RuntimeError("this PyTorch build has no oneDNN (mkldnn) linear kernels")
    # (parent, name) slots, not the Linear modules themselves: each old weight is freed as soon as it is
    # replaced, so packing never holds two float32 copies of the model (peak memory of the build).
    slots = [(module, name) for module in model.modules() for name, child in module.named_children()
             if type(child) is torch.nn.Linear and child.weight.device.type == "cpu"
             and child.weight.dtype == torch.float32]
    for module, name in slots:
        setattr(module, name, PackedLinear(getattr(module, name), batch_hint))
    return model


def prepare_cpu_drafts(target: torch.nn.Module, draft: torch.nn.Module, *, packed: bool = True,
                       int8: bool = True) -> dict[str, torch.nn.Module]:
    """The one place the CPU variants are made: {"fp32": draft, "int8": its int8 copy} (int8 if asked).

    The int8 copy is quantized from the unpacked float32 weights first; then the target (and so its
    target-only baseline, the very same object) and the fp32 draft get the packed kernels, in place.
    """
    from .quantize import quantize_draft

    drafts = {"int8": quantize_draft(draft)} if int8 else {}
    if packed:
        pack_linear_layers(target)
        pack_linear_layers(draft)
    return {"fp32": draft, **drafts}
