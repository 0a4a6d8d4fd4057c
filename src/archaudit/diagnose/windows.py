"""Token windows of a text file: the inputs every per-token diagnostic runs on."""

from __future__ import annotations

from pathlib import Path

import torch

from archaudit.diagnose.access import ModelView
from archaudit.errors import DataError


def read_text(path: str | Path) -> str:
    file = Path(path)
    if not file.is_file():
        raise DataError(f"data file {str(file)!r} not found; pass an existing UTF-8 text file")
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"data file {str(file)!r} is not UTF-8 text ({err.reason})") from None


def token_windows(view: ModelView, text: str, *, tokens: int, window: int) -> torch.Tensor:
    """Rows (n, window + 1) of consecutive tokens from the start of `text`, each led by the
    model's prefix token (BOS) when it has one, so position 0 is the same kind of token in every
    row, as where real models put their sink. Enough rows for `tokens` predictions."""
    window = min(window, view.context_length - 1)
    prefix = view.prefix_token_id
    n_rows = -(-tokens // window)
    need = n_rows * window + 1
    chars = 8 * need
    while True:
        ids = view.encode(text[:chars])
        if len(ids) >= need or chars >= len(text):
            break
        chars *= 2
    width = window if prefix is not None else window + 1
    n_rows = min(len(ids) // width, n_rows)
    if n_rows < 1:
        raise DataError(f"the text has {len(ids)} tokens: too short for one window of {width}")
    body = torch.tensor(ids[: n_rows * width], dtype=torch.long).view(n_rows, width)
    if prefix is None:
        return body
    return torch.cat((torch.full((n_rows, 1), prefix, dtype=torch.long), body), dim=1)
