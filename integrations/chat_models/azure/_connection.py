"""What both Azure OpenAI connections share: the ``AsyncAzureOpenAI`` client and its
settings; and what both setups share: the deployment (`AzureDeploymentSetup`).

`AzureOpenAIChatModelConnection` (Chat Completions) and
`AzureOpenAIResponsesChatModelConnection` (Responses) put `AzureOpenAIConnection` before
the OpenAI connection of their API, so they speak that API's wire module (reused, not
copied) through ``openai.AsyncAzureOpenAI``: a deployment's URL
(``{azure_endpoint}/openai/deployments/{model}/chat/completions``, or
``{azure_endpoint}/openai/responses``) with ``?api-version=``, and a key (``api-key``
header) or a Microsoft Entra ID token (``Authorization: Bearer``).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

import openai
from pydantic import Field, field_validator, model_validator

from flink_agents.api.chat_models.chat_model import BaseChatModelSetup, ToolSpec
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.message import ChatMessage
from flink_agents.api.redaction import register_secret
from flink_agents.integrations.chat_models._setup_options import add_options
from flink_agents.integrations.chat_models.openai._connection import OpenAIConnection

__all__ = ["PROVIDER", "AzureADTokenProvider", "AzureDeploymentSetup", "AzureOpenAIConnection"]

PROVIDER = "azure-openai"
"""Name used in `ChatModelError.provider` and error messages."""

AzureADTokenProvider = Callable[[], "str | Awaitable[str]"]
"""Returns a Microsoft Entra ID token (sync or async), e.g.
``azure.identity.get_bearer_token_provider(credential, "https://cognitiveservices.azure.com/.default")``."""


class AzureOpenAIConnection(OpenAIConnection):
    """Settings of an Azure OpenAI resource (upstream's names: ``api_key``,
    ``api_version``, ``azure_endpoint``, ``timeout``, ``max_retries``), plus Entra ID
    auth and an optional fixed deployment.

    Give one credential: ``api_key`` (else ``AZURE_OPENAI_API_KEY``), ``azure_ad_token``
    (else ``AZURE_OPENAI_AD_TOKEN``) or ``azure_ad_token_provider`` (called before every
    request). The deployment is the setup's ``model``, unless ``azure_deployment`` fixes
    one here. ``base_url`` (a gateway, or a full deployment URL) replaces
    ``azure_endpoint``. Keys and tokens are never dumped or shown, and masked in errors.
    """

    provider_name: ClassVar[str] = PROVIDER
    sdk_client_class: ClassVar[Callable[..., Any]] = openai.AsyncAzureOpenAI
    sdk_environment: ClassVar[tuple[str, ...]] = (
        "AZURE_OPENAI_API_KEY",
        "AZURE_OPENAI_AD_TOKEN",
        "AZURE_OPENAI_ENDPOINT",
        "OPENAI_API_VERSION",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
    )
    credential_environment: ClassVar[tuple[str, ...]] = (
        "AZURE_OPENAI_API_KEY",
        "AZURE_OPENAI_AD_TOKEN",
    )
    secret_fields: ClassVar[tuple[str, ...]] = ("api_key", "azure_ad_token")

    api_version: str | None = None
    """The REST API version (``"2024-10-21"``, ``"2025-04-01-preview"``...), sent as
    ``?api-version=``; else ``OPENAI_API_VERSION``. Required by the SDK."""
    azure_endpoint: str | None = None
    """``https://<resource>.openai.azure.com``; else ``AZURE_OPENAI_ENDPOINT``."""
    azure_deployment: str | None = None
    """A deployment for every call of this connection; ``None`` (the default): the
    deployment is the ``model`` of each call (upstream's way)."""
    azure_ad_token: str | None = Field(default=None, exclude=True, repr=False)
    """A Microsoft Entra ID token (instead of a key). Never dumped or shown."""
    azure_ad_token_provider: AzureADTokenProvider | None = Field(
        default=None, exclude=True, repr=False
    )
    """A function that returns an Entra ID token, called before every request (instead of
    a key); it travels to Flink workers with the connection (cloudpickle). Each token it
    returns is masked in errors."""

    @model_validator(mode="after")
    def _one_endpoint(self) -> AzureOpenAIConnection:
        if self.base_url is not None and self.azure_endpoint is not None:
            raise ValueError("give azure_endpoint or base_url, not both")
        credentials = [self.api_key, self.azure_ad_token, self.azure_ad_token_provider]
        if sum(value is not None for value in credentials) > 1:
            raise ValueError(
                "give one credential: api_key, azure_ad_token or azure_ad_token_provider"
            )
        return self

    def _client_options(self) -> dict[str, Any]:
        options = super()._client_options()
        if options["base_url"] is None:
            del options["base_url"]  # the SDK builds it from azure_endpoint
        options.update(
            api_version=self.api_version,
            azure_endpoint=self.azure_endpoint,
            azure_deployment=self.azure_deployment,
            azure_ad_token=self.azure_ad_token,
            azure_ad_token_provider=self.azure_ad_token_provider,
        )
        return options

    def _has_credentials(self) -> bool:
        return (
            self.azure_ad_token is not None
            or self.azure_ad_token_provider is not None
            or super()._has_credentials()
        )

    def _new_client(self, options: dict[str, Any]) -> Any:
        provider = options.get("azure_ad_token_provider")
        if provider is not None:
            options = {**options, "azure_ad_token_provider": _masking(provider)}
        return super()._new_client(options)

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        """Send the conversation to the deployment named by ``model`` (or
        ``azure_deployment``): the OpenAI API's ``achat`` and its parameters, plus
        ``model_of_azure_deployment``, which names the model behind the deployment and is
        not sent: the result's ``model`` when the response names none. The deployment
        goes in ``metadata["azure_deployment"]``."""
        underlying = params.pop("model_of_azure_deployment", None)
        result = await super().achat(messages, tools, **params)
        if result.model is None and underlying is not None:
            result.model = underlying
        deployment = self.azure_deployment or params.get("model")
        if deployment is not None:
            result.metadata["azure_deployment"] = deployment
        return result


def _masking(provider: AzureADTokenProvider) -> Callable[[], Awaitable[str]]:
    """``provider`` as the async function the SDK calls, registering each token it gives
    with the redactor."""

    async def token() -> str:
        value = provider()
        if inspect.isawaitable(value):
            value = await value
        register_secret(value)
        return value

    return token


class AzureDeploymentSetup(BaseChatModelSetup):
    """What a setup of an Azure OpenAI deployment adds to its OpenAI setup (put it first
    among the bases): ``model`` required, the deployment's name, and
    ``model_of_azure_deployment``."""

    model: str | None = Field(default=None, validate_default=True)
    """The deployment's name (not the model behind it); required."""
    model_of_azure_deployment: str | None = None
    """The model behind the deployment (``gpt-4o``): the result's ``model`` when the
    response names none (Azure usually does). Not sent."""

    @field_validator("model")
    @classmethod
    def _deployment_required(cls, value: str | None) -> str:
        if value is None or not value.strip():
            raise ValueError("model is required: the name of the Azure OpenAI deployment")
        return value

    @property
    def model_kwargs(self) -> dict[str, Any]:
        return add_options(super().model_kwargs, self, ("model_of_azure_deployment",))
