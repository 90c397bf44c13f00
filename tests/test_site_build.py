"""scripts/build_site.py (specdec_site.site.build): which copies of the site a data layout makes, and its errors. The
builds themselves run in tests/test_artifact_sets.py (the committed data with a cuda copy) and tests/conftest.py."""

from __future__ import annotations

import pytest

from specdec_site.site import build as site_build


def layout(tmp_path, *devices):
    for device in devices:
        (tmp_path / "docs" / "data" / device).mkdir(parents=True)
        (tmp_path / "docs" / "data" / device / "traces.json").write_text("{}")
    return tmp_path


def test_a_copy_per_device_with_data_the_chosen_one_at_the_top(tmp_path):
    root = layout(tmp_path, "cpu", "cuda")
    copies = site_build.site_copies(root, "cpu")
    assert [(c.device, c.sub) for c in copies] == [("cpu", ""), ("cuda", "cuda/")]
    assert site_build.copies_env(copies) == "cpu=,cuda=cuda/"
    assert [(c.device, c.sub) for c in site_build.site_copies(root, "cuda")] == [("cuda", ""), ("cpu", "cpu/")]


def test_one_device_or_a_folder_of_your_own_makes_one_site(tmp_path):
    root = layout(tmp_path, "cpu")
    (root / "docs" / "data" / "cuda").mkdir()  # a folder without a traces artifact is no copy
    assert [c.device for c in site_build.site_copies(root, "cpu")] == ["cpu"]
    mine = root / "docs" / "data" / "mine"
    assert site_build.site_copies(root, "cpu", mine) == [site_build.SiteCopy("cpu", mine, "")]


def test_a_missing_artifact_folder_is_an_error_before_any_build(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        site_build.main(["--data", str(tmp_path / "nowhere")])
    assert exit_.value.code == 2 and "has no traces.json" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="has no traces.json"):
        site_build.build(layout(tmp_path, "cuda"), "cpu")  # the chosen device has no data
    with pytest.raises(SystemExit):
        site_build.main(["--device", "tpu"])
