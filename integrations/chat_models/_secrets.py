"""The adapters' API keys, registered with the process-wide redactor.

A key given to a connection (``api_key=...``) and the keys the SDKs read from the
environment are registered when a connection is built and when its SDK client is
made, so `flink_agents.api.redaction.redact` masks them in error messages, events,
tool errors and the event log, whatever their shape.
"""

from __future__ import annotations

from flink_agents.api.redaction import register_env_secrets, register_secret

__all__ = ["PROVIDER_SECRET_ENV_VARS", "register_client_secrets", "register_provider_secrets"]

PROVIDER_SECRET_ENV_VARS: tuple[str, ...] = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENAI_ADMIN_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
    "OLLAMA_API_KEY",
    "DASHSCOPE_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
)
"""Environment variables the provider SDKs (``anthropic``, ``openai``, ``ollama``,
``dashscope``, ``google-genai``, ``boto3``) read credentials from."""

_CLIENT_SECRET_ATTRIBUTES = ("api_key", "auth_token", "admin_api_key")


def register_provider_secrets(*values: str | None) -> None:
    """Register ``values`` (None and short values are skipped) and the environment's keys."""
    for value in values:
        register_secret(value)
    register_env_secrets(PROVIDER_SECRET_ENV_VARS)


def register_client_secrets(client: object) -> None:
    """Register the credentials an SDK client resolved (from arguments or environment)."""
    register_provider_secrets(
        *(_string(getattr(client, name, None)) for name in _CLIENT_SECRET_ATTRIBUTES)
    )


def _string(value: object) -> str | None:
    return value if isinstance(value, str) else None
