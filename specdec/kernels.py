"""Faster CPU kernels for the same models: oneDNN-packed float32 Linear layers.

On CPU, a forward pass of a 1-2B model is dominated by its Linear layers. PyTorch's default float32
path (MKL sgemm) re-packs each weight matrix on every call and is slow for the 1..9-row inputs of
decoding: here scoring 5 tokens cost ~2x scoring one. oneDNN with weights packed once ahead of time
scores 1..9 rows in nearly the time of one (and one row faster than MKL), which is exactly what a
verification pass needs. The weights and the math are unchanged; only the kernel and its summation
order are, so outputs agree with the unpacked model to float32 rounding (tested).

Fewer than MIN_ROWS rows are padded with zero rows up to MIN_ROWS, and the padding's outputs dropped: on
the build's 2-core AVX-512 host oneDNN takes a slower path for 1 and 2 rows than for 4, so the target
scored one token (plain decoding) more slowly than five (a k = 4 verification), which flattered every
speedup. Rows of a matrix product are independent, so padding changes no real row's arithmetic beyond
the kernel's own summation order. `python scripts/bench_kernels.py` measures it on any machine.

`pack_linear_layers` is applied to the target AND to the baseline it is compared with (the same model
object), so every speedup is measured against the same fast kernels.
"""

from __future__ import annotations

import torch

MIN_ROWS = 4  # inputs with fewer rows are zero-padded to this many (1 turns it off)


class PackedLinear(torch.nn.Module):
    """A float32 nn.Linear whose weight is pre-packed for oneDNN (CPU inference only)."""

    def __init__(self, linear: torch.nn.Linear, batch_hint: int | None = None, min_rows: int = MIN_ROWS):
        super().__init__()
        if not isinstance(min_rows, int) or min_rows < 1:
            raise ValueError(f"min_rows must be an int >= 1, got {min_rows!r}")
        self.in_features, self.out_features, self.min_rows = linear.in_features, linear.out_features, min_rows
        weight = linear.weight.detach().float().contiguous()
        self.register_buffer("packed", torch.ops.mkldnn._reorder_linear_weight(weight, batch_hint), persistent=False)
        bias = linear.bias.detach().float().clone() if linear.bias is not None else None  # its own memory: own_small_tensors
        self.register_buffer("bias", bias, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        rows = x.reshape(-1, shape[-1])  # (m, in_features)
        m = rows.shape[0]
        if m < self.min_rows:  # the faster kernel of min_rows rows; the zero rows' outputs are dropped
            rows = torch.cat([rows, rows.new_zeros(self.min_rows - m, shape[-1])])
        out = torch.ops.mkldnn._linear_pointwise(rows.contiguous(), self.packed, self.bias, "none", [None], "")
        return out[:m].reshape(*shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"min_rows={self.min_rows}")


def can_pack() -> bool:
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def pack_linear_layers(model: torch.nn.Module, batch_hint: int | None = None,
                       min_rows: int = MIN_ROWS) -> torch.nn.Module:
    """Replace every float32 CPU nn.Linear of `model` (in place) by a PackedLinear; returns the model."""
    if not can_pack():
        raise RuntimeError("this PyTorch build has no oneDNN (mkldnn) linear kernels")
    # (parent, name) slots, not the Linear modules themselves: each old weight is freed as soon as it is
    # replaced, so packing never holds two float32 copies of the model (peak memory of the build).
    slots = [(module, name) for module in model.modules() for name, child in module.named_children()
             if type(child) is torch.nn.Linear and child.weight.device.type == "cpu"
             and child.weight.dtype == torch.float32]
    own_small_tensors(model)  # first: then each shard's file mapping closes as soon as its last weight is packed
    for module, name in slots:
        setattr(module, name, PackedLinear(getattr(module, name), batch_hint, min_rows))
        trim_heap()  # the old weight's heap pages, at once: else the holes add up to a second copy (peak memory)
    return model


def own_small_tensors(model: torch.nn.Module) -> torch.nn.Module:
    """Copy the tensors of every module but the embeddings and the Linear layers into this process's memory.

    A model loaded memory-mapped (models.load_model) has its tensors on the shards' file mappings, and a mapping
    stays resident, counted in the process's memory, while any tensor on it lives: after packing, the norms and
    biases alone kept the pages of every weight packing had copied out (6 GB of the default pair). Those tensors
    are small (a few MB); an embedding stays mapped, as a lookup reads only the rows it needs, and Linear layers
    are packed (PackedLinear owns its copies) or left as they are.
    """
    for module in model.modules():
        if isinstance(module, (torch.nn.Embedding, torch.nn.Linear, PackedLinear)):
            continue
        for name, t in list(module._parameters.items()):
            if t is not None:
                module._parameters[name] = torch.nn.Parameter(t.detach().clone(), requires_grad=t.requires_grad)
        for name, t in list(module._buffers.items()):
            if t is not None:
                module._buffers[name] = t.clone()
    return model


def release_freed_memory() -> None:
    """Collect garbage, then give the freed heap pages back to the OS (trim_heap)."""
    import gc

    gc.collect()
    trim_heap()


def trim_heap() -> None:
    """Return glibc's free heap pages to the OS (elsewhere a no-op).

    A 0.5B draft's weight matrices are under glibc's 32 MB mmap threshold, so they live on the heap; their
    packed copies are allocated beside them, and each freed matrix leaves a hole glibc keeps until asked to
    trim. Untrimmed, packing the default draft held both copies at its peak (2 GB more) and 0.7 GB after.
    """
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
