"""Strict options: an unknown keyword of a resource, or a configuration key that looks like
one of ours, raises when it is given, naming the closest known options."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from pydantic import ConfigDict, ValidationError

from flink_agents.api import (
    AgentConfiguration,
    AgentExecutionOptions,
    BaseChatModelConnection,
    BaseChatModelSetup,
    BaseTool,
    ConfigOption,
    FunctionChatModelConnection,
    FunctionTool,
    ResourceDescriptor,
    ToolMetadata,
)
from flink_agents.api.errors import UnknownOptionError
from flink_agents.integrations.chat_models.anthropic import (
    AnthropicChatModelConnection,
    AnthropicChatModelSetup,
)
from flink_agents.integrations.chat_models.openai import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
    OpenAIResponsesChatModelConnection,
    OpenAIResponsesChatModelSetup,
)

OPENAI_CHAT = "flink_agents.integrations.chat_models.openai.OpenAIChatModelConnection"


def lookup(ticket: str) -> str:
    """Look a ticket up.

    Args:
        ticket: The ticket id.
    """
    return ticket


# ---------------------------------------------------------------------------- resources


def test_a_misspelled_connection_option_raises_with_the_closest_name() -> None:
    with pytest.raises(UnknownOptionError) as raised:
        OpenAIChatModelConnection(bse_url="http://localhost:8000/v1")  # type: ignore[call-arg]
    assert str(raised.value) == (
        "OpenAIChatModelConnection has no option 'bse_url' (did you mean 'base_url' or 'api_base_url'?)"
    )
    assert isinstance(raised.value, ValueError)
    assert raised.value.option == "bse_url"
    assert raised.value.suggestions[0] == "base_url"


def test_a_descriptor_with_a_class_checks_its_options_when_made() -> None:
    with pytest.raises(UnknownOptionError, match=r"did you mean 'base_url'"):
        ResourceDescriptor(clazz=OpenAIChatModelConnection, bse_url="http://x")
    ResourceDescriptor(clazz=OpenAIChatModelConnection, base_url="http://x").build()


def test_a_descriptor_with_a_dotted_path_checks_them_when_built_or_checked() -> None:
    descriptor = ResourceDescriptor(clazz=OPENAI_CHAT, bse_url="http://x")  # not imported
    with pytest.raises(UnknownOptionError, match=r"'bse_url' \(did you mean 'base_url'"):
        descriptor.check()
    with pytest.raises(UnknownOptionError, match="bse_url"):
        descriptor.build()
    ResourceDescriptor(clazz=OPENAI_CHAT, base_url="http://x").check()


@pytest.mark.parametrize(
    "connection",
    [
        OpenAIChatModelConnection,
        OpenAIResponsesChatModelConnection,
        AnthropicChatModelConnection,
    ],
)
@pytest.mark.parametrize("option", ["tool_media", "additional_kwargs", "model"])
def test_setup_options_given_to_a_connection_raise(
    connection: type[BaseChatModelConnection], option: str
) -> None:
    options: dict[str, Any] = {option: "x"}
    with pytest.raises(UnknownOptionError) as raised:
        connection(**options)
    message = str(raised.value)
    assert message.startswith(f"{connection.__name__} has no option {option!r} (")
    assert "base_url" in message  # the known options are named
    assert "get_resource" not in message


@pytest.mark.parametrize(
    ("setup", "option", "closest"),
    [
        (OpenAIChatModelSetup, "temprature", "temperature"),
        (OpenAIChatModelSetup, "max_token", "max_tokens"),
        (OpenAIResponsesChatModelSetup, "reasoning_efort", "reasoning_effort"),
        (AnthropicChatModelSetup, "stop_sequence", "stop_sequences"),
        (BaseChatModelSetup, "tool", "tools"),
    ],
)
def test_a_misspelled_setup_option_raises(
    setup: type[BaseChatModelSetup], option: str, closest: str
) -> None:
    options: dict[str, Any] = {option: 1}
    with pytest.raises(UnknownOptionError, match=rf"did you mean {closest!r}"):
        setup(connection="c", **options)


def test_provider_extras_pass_through_params_or_additional_kwargs() -> None:
    by_params = OpenAIChatModelSetup(connection="c", params={"top_p": 0.5, "seed": 7})
    # The upstream project's name for the same field.
    by_upstream_name = OpenAIChatModelSetup(
        connection="c",
        additional_kwargs={"top_p": 0.5, "seed": 7},  # type: ignore[call-arg]
    )
    assert by_params.params == by_upstream_name.params == {"top_p": 0.5, "seed": 7}
    assert by_upstream_name.model_kwargs["top_p"] == 0.5
    assert by_upstream_name.model_kwargs["seed"] == 7
    descriptor = ResourceDescriptor(
        clazz=AnthropicChatModelSetup, connection="c", additional_kwargs={"top_k": 5}
    )
    built = descriptor.build()
    assert isinstance(built, AnthropicChatModelSetup) and built.model_kwargs["top_k"] == 5


def test_params_and_additional_kwargs_together_are_refused() -> None:
    with pytest.raises(ValueError, match="'params' and 'additional_kwargs' are the same option"):
        BaseChatModelSetup(connection="c", params={"a": 1}, additional_kwargs={"b": 2})  # type: ignore[call-arg]


def test_unknown_tool_and_test_model_options_raise() -> None:
    metadata = ToolMetadata(name="lookup")
    with pytest.raises(UnknownOptionError, match=r"FunctionTool has no option 'timeout'"):
        FunctionTool(metadata=metadata, func=lookup, timeout=3)  # type: ignore[call-arg]

    class Weather(BaseTool):
        units: str = "metric"

        async def acall(self, **arguments: Any) -> Any:
            return "sunny"

    assert Weather(metadata=metadata, units="imperial").units == "imperial"
    with pytest.raises(UnknownOptionError, match=r"did you mean 'units'"):
        Weather(metadata=metadata, unit="imperial")  # type: ignore[call-arg]
    with pytest.raises(UnknownOptionError, match=r"did you mean 'function'"):
        FunctionChatModelConnection(functon=lambda m, t: "hi")  # type: ignore[call-arg]


def test_a_resource_class_may_allow_extra_options() -> None:
    class Lenient(BaseChatModelConnection):
        model_config = ConfigDict(extra="allow")

    assert Lenient(anything=1).model_extra == {"anything": 1}  # type: ignore[call-arg]


def test_validating_a_dict_refuses_unknown_keys_too() -> None:
    with pytest.raises(ValidationError, match="bse_url"):
        OpenAIChatModelConnection.model_validate({"bse_url": "http://x"})


def test_the_error_survives_a_rebuild_from_its_message_and_pickling() -> None:
    with pytest.raises(UnknownOptionError) as raised:
        OpenAIChatModelConnection(bse_url="http://x")  # type: ignore[call-arg]
    message = str(raised.value)
    assert str(UnknownOptionError(message)) == message
    assert str(pickle.loads(pickle.dumps(raised.value))) == message


# ---------------------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    ("key", "closest"),
    [
        ("durable-execution.stor", "durable-execution.store"),
        ("max-retry", "max-retries"),
        ("agent.max-retires", "max-retries"),
        ("baselogdir", "baseLogDir"),
        ("tool-call.timout", "tool-call.timeout-s"),
        ("event-logs.level", "event-log.level"),
        ("max-in-flight", "max-in-flight-runs"),
    ],
)
def test_a_near_miss_of_a_project_key_raises(key: str, closest: str) -> None:
    with pytest.raises(UnknownOptionError, match=rf"did you mean {closest!r}"):
        AgentConfiguration({key: "1"})
    with pytest.raises(UnknownOptionError, match=rf"did you mean {closest!r}"):
        AgentConfiguration().set_str(key, "1")
    with pytest.raises(UnknownOptionError, match=rf"did you mean {closest!r}"):
        AgentConfiguration().set(key, "1")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("tool-call.timeout", "tool-call.timeout-s"),
        ("max-retry-wait-interval", "max-retry-wait-interval-s"),
        ("durable-execution.prune.interval", "durable-execution.prune.interval-s"),
        ("durable-execution.prune.clock-skew", "durable-execution.prune.clock-skew-s"),
        ("agent.tool-call.timeout", "tool-call.timeout-s"),
    ],
)
def test_a_renamed_key_raises_naming_its_new_name_first(old: str, new: str) -> None:
    with pytest.raises(UnknownOptionError) as raised:
        AgentConfiguration({old: "1"})
    assert raised.value.suggestions[0] == new
    assert f"has no option {old.removeprefix('agent.')!r} (did you mean {new!r}" in str(
        raised.value
    )


@pytest.mark.parametrize("key", ["chat.streaming", "tool-call.retries", "durable-execution.mode"])
def test_unknown_keys_in_a_project_namespace_raise(key: str) -> None:
    namespace = key.split(".")[0]
    with pytest.raises(UnknownOptionError) as raised:
        AgentConfiguration({key: "1"})
    message = str(raised.value)
    assert message.startswith(f"the agent configuration has no option {key!r} (")
    assert f"keys under '{namespace}.' are the project's" in message


@pytest.mark.parametrize(
    "key",
    ["e2e.control", "e2e.trace-dir", "my-action.threshold", "myapp.chat.async", "x", "retries"],
)
def test_keys_of_your_own_are_kept(key: str) -> None:
    config = AgentConfiguration({key: "v"})
    assert config.get(key) == "v"
    assert config.copy().get(key) == "v"
    assert AgentConfiguration().set(f"agent.{key}", "w").get(key) == "w"


def test_project_keys_are_accepted_with_or_without_the_agent_prefix() -> None:
    config = AgentConfiguration({"agent.tool-call.timeout-s": "2", "max-retries": 1})
    assert config.get(AgentExecutionOptions.TOOL_CALL_TIMEOUT) == 2.0
    assert config.get(AgentExecutionOptions.MAX_RETRIES) == 1


def test_a_typed_option_of_your_own_is_set_and_copied() -> None:
    mine: ConfigOption[int] = ConfigOption("chat.my-extension", int, 0)
    config = AgentConfiguration().set(mine, "3")
    assert config.get(mine) == 3
    assert config.copy().get(mine) == 3


def test_upstream_tuning_options_a_class_does_not_take_are_ignored_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Upstream's long-term memory e2e agent gives an OpenAI setup Ollama's `think` and
    # `extract_reasoning`; upstream ignores them.
    with caplog.at_level("WARNING", logger="flink_agents.api.resource"):
        setup = OpenAIChatModelSetup(connection="c", model="m", extract_reasoning=True, think=False)
        descriptor = ResourceDescriptor(
            clazz=OpenAIChatModelSetup, connection="c", model="m", think=False
        )
        descriptor.resolve_class().check_options(descriptor.arguments)  # the plan's check
    assert setup.model == "m"
    assert "think" not in setup.model_dump()
    warned = " ".join(record.getMessage() for record in caplog.records)
    assert "'extract_reasoning': ignored" in warned
    with pytest.raises(UnknownOptionError, match="thinkk"):
        OpenAIChatModelSetup(connection="c", model="m", thinkk=False)  # a typo still raises
