"""SmolLM2-135M (GGUF, from ../shared/data): the gradient bottleneck and the attention sinks of a
real pretrained LM on ≥ 2,000 tokens of Tiny Shakespeare."""

from __future__ import annotations

from pathlib import Path

import pytest

from archaudit.diagnose import diagnose_attention, diagnose_bottleneck

pytestmark = pytest.mark.slow

MODEL = "models/smollm2-135m-instruct-q4/SmolLM2-135M-Instruct.Q4_1.gguf"
TEXT = "corpora/tinyshakespeare/input.txt"


@pytest.fixture
def smollm2(shared_data: Path) -> Path:
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    path = shared_data / MODEL
    if not path.is_file() or not (shared_data / TEXT).is_file():
        pytest.skip("SmolLM2 GGUF or Tiny Shakespeare is absent from ../shared/data")
    return path


def test_bottleneck_suppresses_almost_all_of_the_gradient(
    smollm2: Path, shared_data: Path, tmp_path: Path
) -> None:
    result, written = diagnose_bottleneck(smollm2, shared_data / TEXT, tokens=2048, out=tmp_path)
    assert result.tokens >= 2000 and result.tied
    assert (result.vocab_size, result.d_model, result.rank) == (49152, 576, 576)
    # Published band for real LMs: 95-99% suppressed, cosine 0.1-0.2 (arXiv 2603.10145).
    assert 0.95 <= result.suppressed_fraction.mean <= 0.99
    assert 0.05 <= result.cosine.mean <= 0.25
    assert written.figure is not None and written.figure.is_file()


def test_first_token_sink_per_layer(smollm2: Path, shared_data: Path, tmp_path: Path) -> None:
    result, _ = diagnose_attention(smollm2, shared_data / TEXT, tokens=2048, out=tmp_path)
    assert len(result.sink_mass_per_layer) == 30
    # Attention sinks: deep layers put a large share on the first token, far above the
    # 1/(t+1) a uniform head would give on average over a 256-token window (about 0.02).
    assert max(result.sink_mass_per_layer) > 0.3
    assert all(0.0 <= m <= 1.0 for m in result.sink_mass_per_layer)
