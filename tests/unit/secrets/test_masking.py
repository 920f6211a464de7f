"""Masking of known secret values in text, JSON values and this process's log records."""

from __future__ import annotations

import io
import logging

import pytest

from libs.secrets import install_log_masking, mask_secrets, mask_value, remember

pytestmark = pytest.mark.unit

KEY = "my-own-key/with+chars=1"


def test_every_encoded_form_of_a_value_is_masked() -> None:
    text = f"raw {KEY} url my-own-key%2Fwith%2Bchars%3D1 json {KEY}"
    assert mask_secrets(text, [KEY]) == "raw [REDACTED] url [REDACTED] json [REDACTED]"
    assert mask_secrets('"k\\u00e9y-secret-1"', ["kéy-secret-1"]) == '"[REDACTED]"'


def test_short_or_empty_values_mask_nothing() -> None:
    assert mask_secrets("a short abc", ["abc", "", None]) == "a short abc"


def test_values_inside_json_are_masked() -> None:
    value = {"content": f"echo {KEY}", "calls": [{"arguments": KEY}], "n": 1}
    assert mask_value(value, [KEY]) == {
        "content": "echo [REDACTED]",
        "calls": [{"arguments": "[REDACTED]"}],
        "n": 1,
    }


def test_remembered_values_never_reach_a_log_line() -> None:
    secret = "remembered-secret-0x51"
    remember(secret)
    install_log_masking()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("tests.masking")
    logger.addHandler(handler)
    try:
        logger.error("provider said: %s", f"bad key {secret}")
        try:
            raise ValueError(f"key {secret} refused")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    logged = stream.getvalue()
    assert secret not in logged
    assert "provider said: bad key [REDACTED]" in logged
    assert "ValueError: key [REDACTED] refused" in logged
