import os
import subprocess
import sys

import pytest

from archaudit.config import (
    ModelConfig,
    Recipe,
    apply_overrides,
    build,
    load_config,
    parse_override,
)
from archaudit.data.identity import recipe_hash
from archaudit.errors import ConfigError


def test_recipe_hash_is_identical_across_processes_and_hash_seeds():
    code = (
        "from archaudit.config import Recipe; from archaudit.data.identity import recipe_hash; "
        "print(recipe_hash(Recipe(lr=1e-3)))"
    )
    hashes = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={
                "PYTHONHASHSEED": seed,
                "PATH": "",
                "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            },
        ).stdout.strip()
        for seed in ("0", "1", "12345")
    }
    assert hashes == {recipe_hash(Recipe(lr=1e-3))}


def test_recipe_hash_ignores_operational_fields_only():
    base = recipe_hash(Recipe())
    assert recipe_hash(Recipe(eval_every=7, checkpoint_every=3, device="cpu")) == base
    assert recipe_hash(Recipe(lr=1e-4)) != base
    assert recipe_hash(Recipe(warmup_frac=0.1)) != base


def test_unknown_key_suggests_close_match():
    with pytest.raises(ConfigError, match=r"model\.d_modle.*did you mean 'd_model'"):
        build(ModelConfig, {"d_modle": 3}, section="model")


@pytest.mark.parametrize(
    ("section", "values", "pattern"),
    [
        ("model", {"d_model": "big"}, r"model\.d_model = 'big' must be of type int"),
        ("model", {"n_layers": 0}, r"model\.n_layers = 0 must be >= 1"),
        ("model", {"n_heads": 3}, r"not divisible"),
        ("model", {"n_kv_heads": 3}, r"must divide model\.n_heads"),
        (
            "model",
            {"attention": {"qk_norm": 1}},
            r"model\.attention\.qk_norm = 1 must be of type bool",
        ),
        ("model", {"attention": {"window": 0}}, r"model\.attention\.window = 0 must be >= 1"),
        (
            "model",
            {"position": {"rope_fraction": 2}},
            r"model\.position\.rope_fraction = 2\.0 must",
        ),
        ("model", {"stream": {"n_streams": 0}}, r"model\.stream\.n_streams = 0 must be >= 1"),
        ("recipe", {"lr": -1.0}, r"recipe\.lr = -1\.0 must be > 0"),
        ("recipe", {"precision": "bf61"}, r"did you mean 'bf16'"),
        ("recipe", {"warmup_frac": 2}, r"must be in \[0, 1\]"),
        # issue 44: both were tracebacks at training time
        ("recipe", {"threads": -2}, r"recipe\.threads = -2 must be 0 \(torch's default\) to"),
        ("recipe", {"val_fraction": 1.0}, r"recipe\.val_fraction = 1\.0 must be in \(0, 1\)"),
    ],
)
def test_bad_values_name_key_value_and_rule(section, values, pattern):
    cls = ModelConfig if section == "model" else Recipe
    with pytest.raises(ConfigError, match=pattern):
        build(cls, values, section=section)


def test_overrides_parse_toml_values_and_keep_paths_as_strings():
    assert parse_override("model.d_model=128") == (["model", "d_model"], 128)
    assert parse_override("recipe.lr=3e-4") == (["recipe", "lr"], 3e-4)
    assert parse_override("model.attention.qk_norm=true") == (
        ["model", "attention", "qk_norm"],
        True,
    )
    assert parse_override("recipe.corpus=data/x.txt") == (["recipe", "corpus"], "data/x.txt")
    with pytest.raises(ConfigError, match="section"):
        apply_overrides({}, ["modle.d_model=3"], sections=("model", "recipe"))


def test_load_config_applies_file_then_overrides(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[model]\nd_model = 96\nn_heads = 4\n[recipe]\nsteps = 5\n")
    model, recipe = load_config(path, overrides=["recipe.steps=9"])
    assert (model.d_model, recipe.steps) == (96, 9)
    path.write_text("[model\nd_model = 1\n")
    with pytest.raises(ConfigError, match=r"c\.toml: malformed TOML.*line 1"):
        load_config(path)


def test_batch_tokens_must_split_into_sequences():
    assert Recipe(batch_tokens=4096).sequences_per_step(256) == 16
    with pytest.raises(ConfigError, match="grad_accumulation"):
        Recipe(batch_tokens=4096, grad_accumulation=3).sequences_per_step(256)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--set", "model.d_modle=3"], "unknown key model.d_modle (did you mean 'd_model'?)"),
        (["--set", "model.norm.name=rmsnrm"], "model.norm.name = 'rmsnrm'"),
        (["--set", "model.score=softpick"], "did you mean 'model.attention.score'"),
        (["--set", "model.attention=differential"], "write model.attention.name = 'differential'"),
        (["--set", "recipe.lr=abc"], "recipe.lr = 'abc' must be of type float"),
        (["--preset", "tinyy"], "unknown preset 'tinyy'"),
    ],
)
def test_cli_config_errors_are_one_line_exit_2_no_traceback(tmp_path, args, needle):
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "archaudit.cli", "train", "--out", str(out), "--quiet", *args],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()
