"""Secrets at rest: AES-256-GCM `SecretBox`, its key file, and stored model credentials."""

from libs.secrets.box import (
    DecryptError,
    SecretBox,
    SecretKeyError,
    generate_key,
    load_or_create_key,
)
from libs.secrets.credentials import (
    CREDENTIAL_TYPES,
    GOOGLE_OPENAI_BASE_URL,
    CredentialType,
    ResolvedCredential,
    client_base_url,
    credential_aad,
    credential_values,
    key_hint,
    load_credential,
    mentions_credentials,
)
from libs.secrets.masking import Masker, masked_form

__all__ = [
    "CREDENTIAL_TYPES",
    "GOOGLE_OPENAI_BASE_URL",
    "CredentialType",
    "DecryptError",
    "Masker",
    "ResolvedCredential",
    "SecretBox",
    "SecretKeyError",
    "client_base_url",
    "credential_aad",
    "credential_values",
    "generate_key",
    "key_hint",
    "load_credential",
    "load_or_create_key",
    "masked_form",
    "mentions_credentials",
]
