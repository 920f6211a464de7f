"""`SecretBox`: AES-256-GCM encryption of small secrets, and the key file `heym up` keeps."""

from __future__ import annotations

import base64
import binascii
import logging
import os
import re
import secrets
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

log = logging.getLogger(__name__)

KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
# The first byte of every blob names the key/format that sealed it, so a later key rotation
# can tell old blobs from new ones without a schema change.
VERSION = 1
_HEADER = bytes([VERSION])
_MIN_BLOB = 1 + NONCE_BYTES + TAG_BYTES
_KEY_TEXT = re.compile(r"[A-Za-z0-9_+/-]+={0,2}")
_HOW_TO_GENERATE = (
    "generate one with: python -c "
    '"import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())"'
)


class SecretKeyError(ValueError):
    """The configured encryption key is malformed (the message never contains the key)."""


class DecryptError(ValueError):
    """A blob could not be decrypted: wrong key, wrong associated data, or tampered bytes."""


def generate_key() -> str:
    """A fresh random key in the text form `SecretBox.from_setting` accepts."""
    return base64.urlsafe_b64encode(secrets.token_bytes(KEY_BYTES)).decode("ascii")


class SecretBox:
    """Seals strings as `version || nonce || ciphertext+tag`, bound to caller-given AAD."""

    __slots__ = ("_aead",)

    def __init__(self, key: bytes) -> None:
        if not isinstance(key, bytes) or len(key) != KEY_BYTES:
            raise SecretKeyError(f"the secret key must be exactly {KEY_BYTES} bytes")
        self._aead = AESGCM(key)

    @classmethod
    def from_setting(cls, value: str) -> SecretBox:
        """Build from URL-safe base64 text (standard base64 and missing padding also accepted)."""
        text = value.strip() if isinstance(value, str) else ""
        if not text or not _KEY_TEXT.fullmatch(text):
            raise SecretKeyError(
                f"the secret key must be {KEY_BYTES} bytes in URL-safe base64; {_HOW_TO_GENERATE}"
            )
        # `openssl rand -base64 32` emits the standard alphabet; mapping it keeps both working.
        normal = text.rstrip("=").replace("+", "-").replace("/", "_")
        try:
            key = base64.urlsafe_b64decode(normal + "=" * (-len(normal) % 4))
        except (binascii.Error, ValueError):
            raise SecretKeyError(
                f"the secret key is not valid base64; {_HOW_TO_GENERATE}"
            ) from None
        if len(key) != KEY_BYTES:
            raise SecretKeyError(
                f"the secret key decodes to {len(key)} bytes, not {KEY_BYTES}; {_HOW_TO_GENERATE}"
            )
        return cls(key)

    def __repr__(self) -> str:
        return "SecretBox(<key hidden>)"

    def __reduce__(self) -> tuple[object, ...]:
        # Pickling would write the raw key wherever the pickle goes.
        raise TypeError("SecretBox cannot be pickled")

    def encrypt(self, plaintext: str, *, aad: bytes) -> bytes:
        nonce = secrets.token_bytes(NONCE_BYTES)
        # The version byte is authenticated too, so it cannot be swapped to confuse a reader.
        sealed = self._aead.encrypt(nonce, plaintext.encode("utf-8"), _HEADER + aad)
        return _HEADER + nonce + sealed

    def decrypt(self, blob: bytes, *, aad: bytes) -> str:
        data = bytes(blob)
        if len(data) < _MIN_BLOB:
            raise DecryptError("the encrypted value is truncated")
        if data[0] != VERSION:
            raise DecryptError(f"the encrypted value has unknown version {data[0]}")
        nonce = data[1 : 1 + NONCE_BYTES]
        try:
            plain = self._aead.decrypt(nonce, data[1 + NONCE_BYTES :], data[:1] + aad)
        except InvalidTag:
            raise DecryptError(
                "the encrypted value does not match the key: the secret key changed, "
                "or the value was altered or moved"
            ) from None
        try:
            return plain.decode("utf-8")
        except UnicodeDecodeError:
            raise DecryptError("the decrypted value is not UTF-8 text") from None


def _read_key(path: Path) -> str:
    text = path.read_text(encoding="ascii", errors="replace").strip()
    try:
        SecretBox.from_setting(text)
    except SecretKeyError as exc:
        raise SecretKeyError(f"{path}: {exc}") from None
    if os.name == "posix" and path.stat().st_mode & 0o077:
        log.warning("secret key file %s is readable by other users; run chmod 600 on it", path)
    return text


def load_or_create_key(path: Path) -> str:
    """The key text stored at `path`, creating the file (mode 0600) with a new key if absent."""
    if path.exists():
        return _read_key(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    key = generate_key()
    # Write a private temporary file, then hard-link it into place: the link either appears
    # complete or fails because another starter won the race, whose key is then used instead.
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(key + "\n")
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return _read_key(path)
    finally:
        tmp.unlink(missing_ok=True)
    log.info("created a new secret key file at %s", path)
    return key
