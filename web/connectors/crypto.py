"""Encrypting connector secrets at rest with Fernet (AES-128-CBC + HMAC-SHA256) keyed by CDC_ENCRYPTION_KEY.

CDC_ENCRYPTION_KEY may list several comma-separated keys: the first encrypts, all decrypt (MultiFernet), so a key
is rotated by prepending the new one and re-saving the rows (`manage.py connector_reencrypt`), then dropping the
old key.
"""

from __future__ import annotations

import functools

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

TOKEN_PREFIX = "gAAAAA"  # noqa: S105 - every Fernet token starts so (version byte 0x80 + timestamp)


class DecryptionError(ImproperlyConfigured):
    """A stored secret cannot be decrypted: CDC_ENCRYPTION_KEY is not the key it was encrypted with."""


@functools.lru_cache(maxsize=4)
def _fernet_for(key_setting: str) -> MultiFernet:
    keys = [key.strip() for key in key_setting.split(",") if key.strip()]
    if not keys:
        raise ImproperlyConfigured("CDC_ENCRYPTION_KEY is empty; connector secrets cannot be encrypted")
    fernets = []
    for position, key in enumerate(keys, start=1):
        try:
            fernets.append(Fernet(key))
        except ValueError:
            raise ImproperlyConfigured(
                f"CDC_ENCRYPTION_KEY: key {position} is not a Fernet key (32 url-safe base64-encoded bytes); make one "
                "with: python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'"
            ) from None
    return MultiFernet(fernets)


def fernet() -> MultiFernet:
    return _fernet_for(settings.CDC_ENCRYPTION_KEY)


def encrypt(plaintext: str) -> str:
    return fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise DecryptionError(
            "A stored connector secret cannot be decrypted: CDC_ENCRYPTION_KEY is not the key it was encrypted with "
            "(keep the old key after the new one in CDC_ENCRYPTION_KEY while rotating)"
        ) from None


def looks_encrypted(value: str) -> bool:
    return value.startswith(TOKEN_PREFIX)
