"""Recorded outcomes encrypted at rest, with keys read from the environment.

A store given ``encryption_key_env="NAME"`` seals the payload of every outcome it writes (a
call's result, or its error's type and message) with Fernet (AES-128-CBC and HMAC-SHA256,
from the ``cryptography`` package) under the first key in the environment variable ``NAME``,
and opens payloads with any of its keys (comma separated: put a new key first to rotate, and
drop the old one once no record sealed with it is left). A sealed payload is stored as
``fernet:<token>``; a payload without that prefix is plain JSON, written before encryption
was turned on, and is read as it is. Only the variable's name is pickled with the store: the
keys never travel in a job graph, and each worker reads them from its own environment.

Generate a key with ``python -c 'from cryptography.fernet import Fernet;
print(Fernet.generate_key().decode())'``.
"""

from __future__ import annotations

import os
from typing import Any, Final

from flink_agents.runtime.errors import DurableStoreError

__all__ = ["SEALED_PREFIX", "PayloadCipher", "check_not_sealed"]

SEALED_PREFIX: Final = "fernet:"
"""How a sealed payload starts (no JSON text starts so)."""


class PayloadCipher:
    """Seals and opens payloads with the Fernet keys in the environment variable ``key_env``."""

    def __init__(self, key_env: str) -> None:
        if not key_env:
            raise ValueError("key_env names an environment variable")
        self.key_env = key_env
        self._fernet: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"key_env": self.key_env, "_fernet": None}

    def __repr__(self) -> str:
        return f"PayloadCipher(key_env={self.key_env!r})"

    def check(self) -> None:
        """Raise :class:`DurableStoreError` unless the variable holds usable keys."""
        self._keys()

    def _keys(self) -> Any:
        if self._fernet is not None:
            return self._fernet
        try:
            from cryptography.fernet import Fernet, MultiFernet
        except ImportError:
            raise DurableStoreError(
                "an encrypted action-state store (durable-execution.store.encryption-key-env) "
                "needs the cryptography package: pip install cryptography"
            ) from None
        text = os.environ.get(self.key_env, "")
        keys = [part.strip() for part in text.split(",") if part.strip()]
        if not keys:
            raise DurableStoreError(
                f"the action-state store's encryption key variable {self.key_env} is not set "
                "(or empty) in this process's environment: set it on every worker to the "
                "Fernet key(s) the store's records are encrypted with"
            )
        try:
            fernets = [Fernet(key) for key in keys]
        except (ValueError, TypeError):
            raise DurableStoreError(
                f"the action-state store's encryption key variable {self.key_env} does not "
                "hold Fernet keys (each 32 bytes, url-safe base64; comma separated): make one "
                "with cryptography.fernet.Fernet.generate_key()"
            ) from None
        self._fernet = MultiFernet(fernets)
        return self._fernet

    def seal(self, payload: str) -> str:
        """The payload encrypted with the first key, as ``fernet:<token>``."""
        token = self._keys().encrypt(payload.encode("utf-8"))
        return SEALED_PREFIX + token.decode("ascii")

    def open(self, stored: str, where: str) -> str:
        """The plain payload of a stored one (sealed or plain); ``where`` names the record."""
        if not stored.startswith(SEALED_PREFIX):
            return stored
        from cryptography.fernet import InvalidToken

        try:
            plain = self._keys().decrypt(stored[len(SEALED_PREFIX) :].encode("ascii"))
        except (InvalidToken, UnicodeEncodeError):
            raise DurableStoreError(
                f"the recorded outcome at {where} cannot be decrypted with the keys in "
                f"{self.key_env} (sealed with another key, or altered)"
            ) from None
        return plain.decode("utf-8")


def check_not_sealed(stored: str, where: str) -> str:
    """``stored`` when it is plain; :class:`DurableStoreError` when it is sealed."""
    if stored.startswith(SEALED_PREFIX):
        raise DurableStoreError(
            f"the recorded outcome at {where} is encrypted, and this store has no key: set "
            "durable-execution.store.encryption-key-env (the store's encryption_key_env) to "
            "the environment variable that holds it"
        )
    return stored
