"""Target passwords sealed for one client host (libsodium sealed boxes, PyNaCl).

A client host holds no field key (campaigns.crypto): it cannot read a target's password at rest. Its worker makes a
key pair in memory when it joins (host_key: never written anywhere) and registers the public half with its
ClientHost row. When the server sends a job or a client to that host it seals the target's password with that
public key (password_seal); only the worker holding the private key opens it (password_open), in memory, right
before it connects. A worker that restarts makes a new key pair: what was sealed for its old one cannot be opened
(SealError), and the job's client is sent and sealed again.

Pure: no ORM, no settings; the execution package decides what is sealed for whom (campaigns.execution.sealed).
"""
from __future__ import annotations

import base64
import binascii
from functools import lru_cache

from nacl.exceptions import CryptoError
from nacl.public import PrivateKey, PublicKey, SealedBox


class SealError(Exception):
    """A sealed password cannot be opened here (sealed for another key, or not a sealed box at all)."""


@lru_cache(maxsize=1)
def host_key() -> PrivateKey:
    """This process's key pair, made on first use (a worker's join) and held in memory only."""
    return PrivateKey.generate()


def public_key_text(key: PrivateKey | None = None) -> str:
    """The public half of a key pair, as stored on a ClientHost row (base64 of its 32 bytes)."""
    return base64.b64encode(bytes((key or host_key()).public_key)).decode()


def public_key_valid(text: str) -> bool:
    try:
        return len(base64.b64decode(text, validate=True)) == PublicKey.SIZE
    except (binascii.Error, ValueError):
        return False


def password_seal(plain: str, public_key: str) -> str:
    """`plain` sealed for the holder of the private half of `public_key`: base64 text, anonymous sender."""
    box = SealedBox(PublicKey(base64.b64decode(public_key, validate=True)))
    return base64.b64encode(box.encrypt(plain.encode())).decode()


def password_open(token: str, key: PrivateKey | None = None) -> str:
    """A password sealed for this process's key (or `key`); SealError if it was sealed for another one."""
    try:
        return SealedBox(key or host_key()).decrypt(base64.b64decode(token, validate=True)).decode()
    except (CryptoError, binascii.Error, ValueError, UnicodeDecodeError):
        raise SealError("the target's password was sealed for another key than this worker's (it restarted since "
                        "it was sent): the client is sent again") from None
