"""The adapters' API keys, registered with the process-wide redactor.

A key given to a connection (``api_key=...``) and the keys the SDKs read from the
environment (`flink_agents.api.redaction.PROVIDER_SECRET_ENV_VARS`, also registered when
a runner starts) are registered when a connection is built and when its SDK client is
made, so `flink_agents.api.redaction.redact` masks them in error messages, events,
tool errors and the event log, whatever their shape.
"""

from __future__ import annotations

from flink_agents.api.redaction import register_provider_env_secrets, register_secret

__all__ = ["register_client_secrets", "register_provider_secrets"]

_CLIENT_SECRET_ATTRIBUTES = ("api_key", "auth_token", "admin_api_key")


def register_provider_secrets(*values: str | None) -> None:
    """Register ``values`` (None and short values are skipped) and the environment's keys."""
    for value in values:
        register_secret(value)
    register_provider_env_secrets()


def register_client_secrets(client: object) -> None:
    """Register the credentials an SDK client resolved (from arguments or environment)."""
    register_provider_secrets(
        *(_string(getattr(client, name, None)) for name in _CLIENT_SECRET_ATTRIBUTES)
    )


def _string(value: object) -> str | None:
    return value if isinstance(value, str) else None
