"""Analyses over judged tables: transfer, interactions, decoupling, aggregates, scaling,
stability."""
