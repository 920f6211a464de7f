"""Guardrails (Heym §4.1): the classification prompt and how its answer is read."""
