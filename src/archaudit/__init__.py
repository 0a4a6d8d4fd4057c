"""archaudit: audit Transformer modifications against seed noise."""

__version__ = "0.1.0"
