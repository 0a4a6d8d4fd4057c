"""The diagnostics' figures (matplotlib, Agg backend: files only, no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from archaudit.errors import ConfigError
from archaudit.files import atomic_write, check_output_file, file_signed

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike


def _pyplot() -> ModuleType:
    try:
        import matplotlib
    except ImportError:
        raise ConfigError(
            "figures need matplotlib: pip install 'archaudit[report]' (or pass --no-figure)"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def heatmaps(
    panels: Mapping[str, Sequence[Sequence[float]]], path: Path, *, xlabel: str, ylabel: str
) -> Path:
    """One heatmap per panel (rows = `ylabel`, columns = `xlabel`), side by side."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 4), squeeze=False)
    for ax, (title, matrix) in zip(axes[0], panels.items(), strict=True):
        image = ax.imshow(matrix, aspect="auto", origin="lower", cmap="viridis")
        ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
        fig.colorbar(image, ax=ax)
    return _save(fig, plt, path)


def curves(
    panels: Mapping[str, tuple[str, Mapping[str, tuple[Sequence[float], Sequence[float]]]]],
    path: Path,
    *,
    log_x: Sequence[str] = (),
) -> Path:
    """Line panels: {title: (x label, {series: (x, y)})}; titles in `log_x` get a log2 x axis."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.6), squeeze=False)
    for ax, (title, (xlabel, series)) in zip(axes[0], panels.items(), strict=True):
        for name, (x, y) in series.items():
            ax.plot(x, y, marker="o", label=name)
        if title in log_x:
            ax.set_xscale("log", base=2)
        ax.set(title=title, xlabel=xlabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, plt, path)


def _save(fig: Figure, plt: ModuleType, path: Path) -> Path:
    """Replaces only a figure matplotlib drew (a PNG that says so), never through a link."""
    check_output_file(path, "--out", file_signed(b"Software\x00Matplotlib", 512))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    plt.close(fig)
    return path


def histograms(panels: Mapping[str, ArrayLike], path: Path, *, bins: int = 50) -> Path:
    """One histogram per panel."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.6), squeeze=False)
    for ax, (title, values) in zip(axes[0], panels.items(), strict=True):
        ax.hist(values, bins=bins)
        ax.set(title=title, ylabel="tokens")
    return _save(fig, plt, path)


def scatter(
    points: Mapping[str, tuple[float, float]], path: Path, *, xlabel: str, ylabel: str, title: str
) -> Path:
    """Labelled points, one per name."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 4))
    for name, (x, y) in points.items():
        ax.scatter([x], [y])
        ax.annotate(name, (x, y), fontsize=8, xytext=(3, 3), textcoords="offset points")
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.grid(alpha=0.3)
    return _save(fig, plt, path)
