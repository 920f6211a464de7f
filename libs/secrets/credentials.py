"""Model credentials as the agent runtime uses them: load, decrypt, and pick a base URL."""

from __future__ import annotations

import uuid
from typing import Any, Final, Literal

import asyncpg
import msgspec

from libs.db.types import Conn
from libs.secrets.box import DecryptError, SecretBox
from libs.secrets.masking import remember

CredentialType = Literal["openai", "custom", "google"]
CREDENTIAL_TYPES: Final = ("openai", "custom", "google")
GOOGLE_OPENAI_BASE_URL: Final = "https://generativelanguage.googleapis.com/v1beta/openai/"
HIDDEN_HINT: Final = "****"
# Below this length the first 3 and last 4 characters would reveal most of the key.
_HINT_MIN_LENGTH: Final = 12


class ResolvedCredential(msgspec.Struct, frozen=True, kw_only=True):
    """A decrypted credential; its repr hides `api_key` so it is safe to log."""

    id: str
    name: str
    type: str
    base_url: str | None
    api_key: str

    def __repr__(self) -> str:
        return (
            f"ResolvedCredential(id={self.id!r}, name={self.name!r}, type={self.type!r}, "
            f"base_url={self.base_url!r}, api_key=<hidden>)"
        )

    def __rich_repr__(self) -> list[tuple[str, Any]]:
        # msgspec's default rich repr would list every field, the key included.
        return [
            ("id", self.id),
            ("name", self.name),
            ("type", self.type),
            ("base_url", self.base_url),
            ("api_key", "<hidden>"),
        ]


def credential_aad(credential_id: uuid.UUID) -> bytes:
    """The associated data that binds a ciphertext to its row (it cannot be moved elsewhere)."""
    return credential_id.bytes


def key_hint(api_key: str) -> str:
    """`sk-...wxyz` for keys of 12+ characters, else `****`: enough to recognise, not to use."""
    if len(api_key) < _HINT_MIN_LENGTH:
        return HIDDEN_HINT
    return f"{api_key[:3]}...{api_key[-4:]}"


def client_base_url(cred: ResolvedCredential) -> str | None:
    """The OpenAI-compatible base URL for a client; None means the OpenAI default."""
    if cred.type == "google":
        return GOOGLE_OPENAI_BASE_URL
    if cred.type == "custom":
        if not cred.base_url:
            return None
        url = cred.base_url.strip().rstrip("/")
        return url if url.endswith("/v1") else f"{url}/v1"
    return None


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        return None


async def load_credential(
    pool_or_conn: Conn | asyncpg.Pool[Any],
    box: SecretBox,
    credential_id: str,
    owner_id: str,
) -> ResolvedCredential | None:
    """The decrypted credential if it exists and belongs to `owner_id`, else None.

    Raises `DecryptError` when the row exists but cannot be decrypted (the key changed).
    """
    cid = _uuid(credential_id)
    oid = _uuid(owner_id)
    if cid is None or oid is None:
        return None
    row = await pool_or_conn.fetchrow(
        "SELECT id, name, type, base_url, secret FROM credentials WHERE id = $1 AND owner_id = $2",
        cid,
        oid,
    )
    if row is None:
        return None
    try:
        api_key = box.decrypt(row["secret"], aad=credential_aad(cid))
    except DecryptError as exc:
        raise DecryptError(f"credential {cid} ({row['name']!r}) cannot be used: {exc}") from None
    remember(api_key)  # this process's logs mask it from now on
    return ResolvedCredential(
        id=str(row["id"]),
        name=row["name"],
        type=row["type"],
        base_url=row["base_url"],
        api_key=api_key,
    )


def mentions_credentials(nodes: list[dict[str, Any]]) -> bool:
    """Whether any node's configuration refers to `$credentials` (only then are they loaded)."""
    return "$credentials" in msgspec.json.encode(nodes).decode()


async def credential_values(
    pool_or_conn: Conn | asyncpg.Pool[Any], box: SecretBox, owner_id: str
) -> dict[str, str]:
    """`$credentials`: each of the user's credentials by name, decrypted (never recorded: the
    caller resolves expressions with it and masks what it records)."""
    oid = _uuid(owner_id)
    if oid is None:
        return {}
    rows = await pool_or_conn.fetch(
        "SELECT id, name, secret FROM credentials WHERE owner_id = $1", oid
    )
    values: dict[str, str] = {}
    for row in rows:
        try:
            values[row["name"]] = box.decrypt(row["secret"], aad=credential_aad(row["id"]))
        except DecryptError:
            continue  # an undecryptable credential is simply not available
        remember(values[row["name"]])  # this process's logs mask it from now on
    return values
