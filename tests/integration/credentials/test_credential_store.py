"""Credential store and `load_credential` against a real, migrated Postgres."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from libs.accounts import AccountUser
from libs.accounts.api_keys import create_user
from libs.db import create_pool
from libs.secrets import DecryptError, SecretBox, generate_key, load_credential
from services.gateway import credential_store as store

pytestmark = pytest.mark.integration

KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz"


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool[Any]]:
    p = await create_pool(database_url, max_size=4)
    try:
        yield p
    finally:
        await p.close()


@pytest.fixture
def box() -> SecretBox:
    return SecretBox.from_setting(generate_key())


@pytest.fixture
async def alice(pool: asyncpg.Pool[Any]) -> AccountUser:
    async with pool.acquire() as conn:
        return await create_user(conn, email="alice@example.com")


@pytest.fixture
async def bob(pool: asyncpg.Pool[Any]) -> AccountUser:
    async with pool.acquire() as conn:
        return await create_user(conn, email="bob@example.com")


async def add(
    pool: asyncpg.Pool[Any], box: SecretBox, user: AccountUser, name: str = "main", **kw: Any
) -> store.CredentialRow:
    fields: dict[str, Any] = {"type": "openai", "base_url": None, "api_key": KEY, **kw}
    return await store.insert_credential(pool, box, user.id, name=name, **fields)


async def test_create_read_list_update_delete(
    pool: asyncpg.Pool[Any], box: SecretBox, alice: AccountUser
) -> None:
    row = await add(pool, box, alice, "b-openai")
    assert (row.name, row.type, row.base_url, row.key_hint) == (
        "b-openai",
        "openai",
        None,
        "sk-...wxyz",
    )
    assert row.owner_id == alice.id
    other = await add(
        pool, box, alice, "a-local", type="custom", base_url="http://localhost:11434", api_key="k"
    )
    assert other.key_hint == "****"
    assert await store.get_credential(pool, alice.id, row.id) == row
    assert [r.name for r in await store.list_credentials(pool, alice.id)] == ["a-local", "b-openai"]

    renamed = await store.update_credential(
        pool, box, alice.id, row.id, name="renamed", base_url=None, api_key=None
    )
    assert renamed is not None
    assert (renamed.name, renamed.key_hint, renamed.created_at) == (
        "renamed",
        row.key_hint,
        row.created_at,
    )
    assert renamed.updated_at >= row.updated_at
    loaded = await load_credential(pool, box, row.id, alice.id)
    assert loaded is not None
    assert loaded.api_key == KEY  # the key is kept when none is given

    new_key = "sk-new-0123456789-ABCD"
    rekeyed = await store.update_credential(
        pool, box, alice.id, row.id, name="renamed", base_url=None, api_key=new_key
    )
    assert rekeyed is not None
    assert rekeyed.key_hint == "sk-...ABCD"
    loaded = await load_credential(pool, box, row.id, alice.id)
    assert loaded is not None
    assert loaded.api_key == new_key

    assert await store.delete_credential(pool, alice.id, row.id) is True
    assert await store.delete_credential(pool, alice.id, row.id) is False
    assert await store.get_credential(pool, alice.id, row.id) is None
    assert await load_credential(pool, box, row.id, alice.id) is None
    assert [r.id for r in await store.list_credentials(pool, alice.id)] == [other.id]


async def test_names_are_unique_per_user(
    pool: asyncpg.Pool[Any], box: SecretBox, alice: AccountUser, bob: AccountUser
) -> None:
    first = await add(pool, box, alice, "main")
    with pytest.raises(store.CredentialNameTaken):
        await add(pool, box, alice, "main")
    assert (await add(pool, box, bob, "main")).owner_id == bob.id
    second = await add(pool, box, alice, "second")
    with pytest.raises(store.CredentialNameTaken):
        await store.update_credential(
            pool, box, alice.id, second.id, name="main", base_url=None, api_key=None
        )
    assert [r.id for r in await store.list_credentials(pool, alice.id)] == [first.id, second.id]


async def test_secret_column_holds_ciphertext_bound_to_the_row(
    pool: asyncpg.Pool[Any], box: SecretBox, alice: AccountUser
) -> None:
    a = await add(pool, box, alice, "a")
    b = await add(pool, box, alice, "b", api_key="sk-another-key-for-b-0000")
    secret = await pool.fetchval("SELECT secret FROM credentials WHERE id = $1", uuid.UUID(a.id))
    assert isinstance(secret, bytes)
    assert KEY.encode() not in secret
    assert KEY[-8:].encode() not in secret
    # A ciphertext copied onto another row does not decrypt there (the row id is the AAD).
    await pool.execute("UPDATE credentials SET secret = $1 WHERE id = $2", secret, uuid.UUID(b.id))
    with pytest.raises(DecryptError) as info:
        await load_credential(pool, box, b.id, alice.id)
    assert KEY not in str(info.value)


async def test_load_credential_only_for_the_owner(
    pool: asyncpg.Pool[Any], box: SecretBox, alice: AccountUser, bob: AccountUser
) -> None:
    row = await add(pool, box, alice, "local", type="custom", base_url="http://h:1/")
    cred = await load_credential(pool, box, row.id, alice.id)
    assert cred is not None
    assert (cred.id, cred.name, cred.type, cred.base_url, cred.api_key) == (
        row.id,
        "local",
        "custom",
        "http://h:1/",
        KEY,
    )
    assert KEY not in repr(cred)
    async with pool.acquire() as conn:
        assert await load_credential(conn, box, row.id, alice.id) == cred
    assert await load_credential(pool, box, row.id, bob.id) is None
    assert await load_credential(pool, box, str(uuid.uuid4()), alice.id) is None
    assert await load_credential(pool, box, "not-a-uuid", alice.id) is None
    # Another user can neither see, change nor delete it through the store.
    assert await store.get_credential(pool, bob.id, row.id) is None
    assert await store.list_credentials(pool, bob.id) == []
    assert (
        await store.update_credential(
            pool, box, bob.id, row.id, name="x", base_url=None, api_key="y"
        )
        is None
    )
    assert await store.delete_credential(pool, bob.id, row.id) is False
    assert await store.get_credential(pool, alice.id, "nope") is None
    assert await load_credential(pool, box, row.id, alice.id) == cred


async def test_wrong_key_raises_decrypt_error(
    pool: asyncpg.Pool[Any], box: SecretBox, alice: AccountUser
) -> None:
    row = await add(pool, box, alice)
    with pytest.raises(DecryptError):
        await load_credential(pool, SecretBox.from_setting(generate_key()), row.id, alice.id)


async def test_credentials_go_with_their_owner(
    pool: asyncpg.Pool[Any], box: SecretBox, alice: AccountUser
) -> None:
    await add(pool, box, alice)
    await pool.execute("DELETE FROM users WHERE id = $1", uuid.UUID(alice.id))
    assert await pool.fetchval("SELECT count(*) FROM credentials") == 0


async def test_type_is_checked_by_the_database(
    pool: asyncpg.Pool[Any], box: SecretBox, alice: AccountUser
) -> None:
    with pytest.raises(asyncpg.CheckViolationError):
        await add(pool, box, alice, type="anthropic")
