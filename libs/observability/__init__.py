"""Observability: tracing, stored-copy redaction and truncation."""
