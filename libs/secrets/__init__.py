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
    credential_values,
    key_hint,
    load_credential,
    mentions_credentials,
)
from libs.secrets.masking import (
    Masker,
    install_log_masking,
    mask_known,
    mask_secrets,
    mask_value,
    masked_form,
    remember,
)

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
    "install_log_masking",
    "key_hint",
    "load_credential",
    "load_or_create_key",
    "mask_known",
    "mask_secrets",
    "mask_value",
    "masked_form",
    "mentions_credentials",
    "remember",
]
