"""Issue 44, item 4: an HF folder's config.json is sized before transformers allocates what it
says (`vocab_size = 1e9` allocated 128 GB before refusing), and read only as a regular file."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from archaudit.cli import main
from archaudit.errors import DataError
from archaudit.evals.hf_config import check_hf_config

SMALL = {
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 32,
    "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64, "vocab_size": 256,
}  # fmt: skip


def hf_folder(folder: Path, **config: object) -> Path:
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(SMALL | config))
    return folder


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"vocab_size": 10**9}, r"vocab_size = 1,000,000,000.*GiB of float32 weights"),
        ({"num_hidden_layers": 10**7, "hidden_size": 4096}, r"GiB of float32 weights"),
        ({"vocab_size": 1e9}, r"vocab_size = 1000000000.0 must be a positive whole number"),
        ({"hidden_size": -3}, r"hidden_size = -3 must be a positive whole number"),
        ({"hidden_size": True}, r"hidden_size = True must be a positive whole number"),
        ({"num_local_experts": 10**6, "intermediate_size": 10**5}, r"float32 weights"),
    ],
)
def test_an_hf_config_is_sized_before_anything_is_allocated(tmp_path, config, message):
    with pytest.raises(DataError, match=message) as refused:
        check_hf_config(hf_folder(tmp_path / "hf", **config))
    (line,) = str(refused.value).splitlines()
    assert str(tmp_path / "hf" / "config.json") in line


def test_a_small_config_passes(tmp_path):
    check_hf_config(hf_folder(tmp_path / "hf"))


def test_a_config_json_fifo_is_not_waited_on(tmp_path):
    (tmp_path / "hf").mkdir()
    os.mkfifo(tmp_path / "hf" / "config.json")
    with pytest.raises(DataError, match=r"config\.json is a FIFO, not a regular file"):
        check_hf_config(tmp_path / "hf")


def test_eval_refuses_a_huge_hf_config_in_one_line(monkeypatch, capsys, tmp_path):
    pytest.importorskip("transformers")
    folder = hf_folder(tmp_path / "hf", vocab_size=10**9)
    monkeypatch.setattr(sys, "argv", ["archaudit", "eval", str(folder), "--suite", "demo"])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert "config.json" in err and "vocab_size" in err


@pytest.mark.parametrize(
    ("config", "message"),
    [({"rope_theta": 0}, r"rope_theta = 0 must be a finite number in \(0, ∞\)"),
     ({"rope_theta": float("nan")}, r"rope_theta = nan must be"),
     ({"rope_theta": "10000"}, r"rope_theta = '10000' must be"),
     ({"rms_norm_eps": -1}, r"rms_norm_eps = -1 must be a finite number in \(0, 1\]"),
     ({"layer_norm_eps": float("inf")}, r"layer_norm_eps = inf"),
     ({"attention_dropout": 1.5}, r"attention_dropout = 1.5 must be a finite number in \[0, 1\]")],
)  # fmt: skip
def test_the_numbers_a_forward_pass_uses_are_range_checked(tmp_path, config, message):
    """Issue 57: `rope_theta` 0 or NaN, or `rms_norm_eps` -1, was scored without a word."""
    with pytest.raises(DataError, match=message) as refused:
        check_hf_config(hf_folder(tmp_path / "hf", **config))
    (line,) = str(refused.value).splitlines()
    assert line.startswith(str(tmp_path / "hf" / "config.json")), line


def test_the_usual_numbers_pass(tmp_path):
    usual = {"rope_theta": 10000.0, "rms_norm_eps": 1e-6, "attention_dropout": 0.0,
             "partial_rotary_factor": 1.0, "final_logit_softcapping": None}  # fmt: skip
    check_hf_config(hf_folder(tmp_path / "hf", **usual))


def test_eval_refuses_a_nan_rope_theta_in_one_line(monkeypatch, capsys, tmp_path):
    pytest.importorskip("transformers")
    folder = hf_folder(tmp_path / "hf", rope_theta=float("nan"))
    monkeypatch.setattr(sys, "argv", ["archaudit", "eval", str(folder), "--suite", "demo"])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert "config.json" in err and "rope_theta = nan" in err
