"""Exports of trained runs into other ecosystems' formats (Hugging Face transformers)."""

from archaudit.export.hf import ExportResult, export_hf
from archaudit.export.stock import pick

__all__ = ["ExportResult", "export_hf", "pick"]
