"""Encryption at rest for target passwords.

The Fernet key is derived from settings.FIELD_ENCRYPTION_KEY so that any string can serve as the
configured secret; the derivation is fixed, so the same setting always decrypts old rows.
"""
from __future__ import annotations

import base64
import hashlib
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


class DecryptionError(Exception):
    """The stored secret cannot be read with the configured key."""


@lru_cache(maxsize=4)
def _fernet(key: str) -> Fernet:
    digest = hashlib.sha256(("benchapp-field-key:" + key).encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def encrypt_secret(plain: str) -> str:
    if plain == "":
        return ""
    return _fernet(settings.FIELD_ENCRYPTION_KEY).encrypt(plain.encode()).decode()


def decrypt_secret(token: str) -> str:
    if token == "":
        return ""
    try:
        return _fernet(settings.FIELD_ENCRYPTION_KEY).decrypt(token.encode()).decode()
    except InvalidToken:
        raise DecryptionError(
            "the stored password cannot be decrypted with BENCHAPP_FIELD_KEY; re-enter it"
        ) from None
