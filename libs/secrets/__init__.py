"""Secrets: AES-256-GCM `SecretBox`, its key file, stored model credentials, and masking."""

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
    key_hint,
    load_credential,
)
from libs.secrets.masking import (
    install_log_masking,
    mask_known,
    mask_secrets,
    mask_value,
    remember,
)

__all__ = [
    "CREDENTIAL_TYPES",
    "GOOGLE_OPENAI_BASE_URL",
    "CredentialType",
    "DecryptError",
    "ResolvedCredential",
    "SecretBox",
    "SecretKeyError",
    "client_base_url",
    "credential_aad",
    "generate_key",
    "install_log_masking",
    "key_hint",
    "load_credential",
    "load_or_create_key",
    "mask_known",
    "mask_secrets",
    "mask_value",
    "remember",
]
