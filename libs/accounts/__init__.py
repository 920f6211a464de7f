"""Users and API keys: generation, hashing, lookup, and the admin account `heym up` ensures."""

from libs.accounts.api_keys import (
    ADMIN_EMAIL,
    AccountUser,
    ensure_admin,
    generate_api_key,
    hash_api_key,
    user_for_api_key,
)

__all__ = [
    "ADMIN_EMAIL",
    "AccountUser",
    "ensure_admin",
    "generate_api_key",
    "hash_api_key",
    "user_for_api_key",
]
