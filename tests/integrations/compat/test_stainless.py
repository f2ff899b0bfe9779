"""What `flink_agents.integrations._compat.stainless` assumes holds in the installed openai
and anthropic SDKs, and that a connection's new client knows its platform before its first
request."""

from __future__ import annotations

import pytest

from flink_agents._compat import Assumption
from flink_agents.integrations._compat import stainless
from flink_agents.integrations._compat.stainless import preset_platform
from flink_agents.integrations.chat_models.anthropic.anthropic_chat_model import (
    AnthropicChatModelConnection,
)
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
)


@pytest.mark.parametrize("assumption", stainless.ASSUMPTIONS, ids=lambda a: a.dependency)
def test_the_installed_sdks_are_as_assumed(assumption: Assumption) -> None:
    assumption.check()


@pytest.mark.parametrize(
    "connection_class",
    [OpenAIChatModelConnection, AnthropicChatModelConnection],
    ids=["openai", "anthropic"],
)
async def test_a_new_sdk_client_knows_its_platform_before_its_first_request(
    connection_class: type,
) -> None:
    # Without it, every call of a burst on a new client would compute the platform in a
    # worker thread of its own, and the burst would go out when those threads answer.
    connection = connection_class(api_key="sk-test", base_url="http://127.0.0.1:9")
    client = connection._sdk_client()
    assert client._platform is not None


def test_other_objects_are_left_alone() -> None:
    class Client:
        _platform = None

    client = Client()
    preset_platform(client)
    assert client._platform is None
