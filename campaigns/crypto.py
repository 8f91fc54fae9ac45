"""Encryption at rest for target passwords and webhook URLs.

Fernet keys are derived from the strings in settings.FIELD_ENCRYPTION_KEYS (any string can serve as the configured
secret; the derivation is fixed, so the same setting always decrypts old rows). The first key encrypts; every key,
and the decrypt-only FIELD_DECRYPTION_ONLY_KEYS (the development key the repository used to ship), decrypts:
MultiFernet. `manage.py rotate_field_key` re-encrypts every stored secret with the first key.
"""
from __future__ import annotations

import base64
import hashlib
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class DecryptionError(Exception):
    """The stored secret cannot be read with the configured key."""


@lru_cache(maxsize=16)
def fernet(key: str) -> Fernet:
    """The cipher of one configured key (any text: its SHA-256 is the Fernet key)."""
    digest = hashlib.sha256(("benchapp-field-key:" + key).encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def _keys() -> MultiFernet:
    names = [*settings.FIELD_ENCRYPTION_KEYS, *getattr(settings, "FIELD_DECRYPTION_ONLY_KEYS", [])]
    return MultiFernet([fernet(name) for name in dict.fromkeys(names)])


def encrypt_secret(plain: str) -> str:
    if plain == "":
        return ""
    return fernet(settings.FIELD_ENCRYPTION_KEYS[0]).encrypt(plain.encode()).decode()


def decrypt_secret(token: str) -> str:
    if token == "":
        return ""
    try:
        return _keys().decrypt(token.encode()).decode()
    except InvalidToken:
        raise DecryptionError(
            "the stored secret cannot be decrypted with BENCHAPP_FIELD_KEY(S); re-enter it"
        ) from None


def rotate_secret(token: str) -> str:
    """The same secret encrypted with the first key (DecryptionError if no key reads it)."""
    if token == "":
        return ""
    try:
        return _keys().rotate(token.encode()).decode()
    except InvalidToken:
        raise DecryptionError("a stored secret cannot be decrypted with any configured key") from None


def encrypted_with_first_key(token: str) -> bool:
    if token == "":
        return True
    try:
        fernet(settings.FIELD_ENCRYPTION_KEYS[0]).decrypt(token.encode())
    except InvalidToken:
        return False
    return True
