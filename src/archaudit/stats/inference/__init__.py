"""Tests and corrections: seed values → p-values, adjusted decisions, item tests."""
