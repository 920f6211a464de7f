"""Users and API keys: generation, hashing, lookup, and the admin account `heym up` ensures."""

from libs.accounts.api_keys import (
    ADMIN_EMAIL,
    AccountUser,
    ApiKeyRow,
    EmailTaken,
    create_user,
    ensure_admin,
    generate_api_key,
    get_user,
    hash_api_key,
    issue_api_key,
    list_api_keys,
    list_users,
    revoke_api_key,
    user_for_api_key,
)

__all__ = [
    "ADMIN_EMAIL",
    "AccountUser",
    "ApiKeyRow",
    "EmailTaken",
    "create_user",
    "ensure_admin",
    "generate_api_key",
    "get_user",
    "hash_api_key",
    "issue_api_key",
    "list_api_keys",
    "list_users",
    "revoke_api_key",
    "user_for_api_key",
]
