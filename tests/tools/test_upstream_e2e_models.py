"""`tools/upstream_e2e_models.py`: the model server and environment `upstream_tests.py
--e2e` runs upstream's provider tests with, through the real SDK connections (no Flink)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from examples.mock_model_server import MockModelServer, reply_to
from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.chat_models.azure.azure_openai_chat_model import (
    AzureOpenAIChatModelConnection,
)
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
)
from flink_agents.integrations.chat_models.tongyi_chat_model import TongyiChatModelConnection
from flink_agents.runtime.flink.config_file import agent_options_from_conf_dir, lacks_flink_defaults
from tests.integrations.chat_models.provider_helpers import close_sdk_client
from tools.upstream_e2e_models import e2e_model_server, e2e_reply
from tools.upstream_tests import main

ADD = ToolMetadata(
    name="add",
    description="The sum of a and b.",
    args_schema={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    },
)


def _tool(tool: str, **properties: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {k: {"type": v} for k, v in properties.items()}}
    return {"type": "function", "function": {"name": tool, "parameters": schema}}


def _call_of(response: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    [call] = response["choices"][0]["message"]["tool_calls"]
    return call["function"]["name"], json.loads(call["function"]["arguments"])


def test_number_parameters_take_the_questions_numbers_in_order() -> None:
    ask = [{"role": "user", "content": "calculate the sum of 1 and 2.5"}]
    tools = [_tool("add", a="integer", b="number", note="string")]
    assert _call_of(reply_to({"messages": ask, "tools": tools})) == (
        "add",
        {"a": 1, "b": 2.5, "note": "calculate the sum of 1 and 2.5"},
    )
    fewer = [{"role": "user", "content": "add 7 to something"}]
    assert _call_of(reply_to({"messages": fewer, "tools": tools}))[1]["a"] == 4  # word count


def _skills_request(*turns: dict[str, Any]) -> dict[str, Any]:
    listing = (
        "<available_skills><skill><name>math-calculator</name></skill>"
        "<skill><name>joke-generator</name></skill></available_skills>"
    )
    return {
        "model": "qwen",
        "messages": [
            {"role": "system", "content": "Load the skill first."},
            {"role": "system", "content": listing},
            {"role": "user", "content": "Please evaluate the expression: (2 ^ 3)"},
            *turns,
        ],
        "tools": [_tool("load_skill", name="string"), _tool("bash", command="string")],
    }


def _called(name: str, arguments: dict[str, Any], n: int) -> list[dict[str, Any]]:
    call = {
        "id": f"c{n}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return [{"role": "assistant", "content": None, "tool_calls": [call]}]


def test_a_request_listing_skills_is_answered_by_the_skills_model() -> None:
    first = e2e_reply(_skills_request())
    assert first["choices"][0]["finish_reason"] == "tool_calls"
    assert _call_of(first) == ("load_skill", {"name": "math-calculator"})
    loaded = 'The skill\'s folder: /skills/math\n```bash\necho "2 + 3" | bc\n```'
    turns = [
        *_called("load_skill", {"name": "math-calculator"}, 1),
        {"role": "tool", "tool_call_id": "c1", "content": loaded},
    ]
    second = e2e_reply(_skills_request(*turns))
    assert _call_of(second) == ("bash", {"command": 'echo "(2 ^ 3)" | bc', "cwd": "/skills/math"})
    turns += [
        *_called("bash", _call_of(second)[1], 2),
        {"role": "tool", "tool_call_id": "c2", "content": "8\n"},
    ]
    last = e2e_reply(_skills_request(*turns))
    assert last["choices"][0]["message"] == {"role": "assistant", "content": "8"}
    assert last["choices"][0]["finish_reason"] == "stop"


def test_other_requests_get_the_mock_servers_answer() -> None:
    request = {"messages": [{"role": "user", "content": "Tell me a joke about cats."}]}
    answer = e2e_reply(request)["choices"][0]["message"]
    assert answer == {"role": "assistant", "content": "You said: Tell me a joke about cats."}


async def test_the_environment_points_every_provider_at_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upstream's provider tests build their connections from the environment alone (the
    Tongyi one with no argument, the Azure one from AZURE_OPENAI_ENDPOINT)."""
    monkeypatch.delenv("FLINK_CONF_DIR", raising=False)
    with e2e_model_server(tmp_path) as environment:
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        connections = [
            OpenAIChatModelConnection(),
            AzureOpenAIChatModelConnection(
                api_version="2025-04-01-preview",
                azure_endpoint=environment["AZURE_OPENAI_ENDPOINT"],
            ),
            TongyiChatModelConnection(),
            OpenAIChatModelConnection(
                api_key=environment["ACTION_API_KEY"], api_base_url=environment["ACTION_BASE_URL"]
            ),
        ]
        for connection in connections:
            try:
                result = await connection.achat(
                    [ChatMessage.user("calculate the sum of 1 and 2.")], [ADD], model="m"
                )
            finally:
                await close_sdk_client(connection)
            [call] = result.message.tool_calls
            assert (call.name, call.input) == ("add", {"a": 1, "b": 2}), type(connection)
    conf = {"FLINK_CONF_DIR": environment["FLINK_CONF_DIR"]}
    assert agent_options_from_conf_dir(conf) == {"skills.commands.enabled": True}
    assert not lacks_flink_defaults(conf["FLINK_CONF_DIR"])  # Flink's JVM options kept


def test_the_mock_server_answers_on_azures_and_dashscopes_paths() -> None:
    ask = {"messages": [{"role": "user", "content": "hi"}]}
    with MockModelServer() as server:
        root = server.base_url.removesuffix("/v1")

        def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
            request = urllib.request.Request(
                root + path, data=json.dumps(body).encode(), method="POST"
            )
            with urllib.request.urlopen(request) as answer:
                return json.loads(answer.read())

        azure = post(
            "/openai/deployments/gpt-5/chat/completions?api-version=2025-04-01-preview", ask
        )
        native = post(
            "/api/v1/services/aigc/text-generation/generation",
            {"model": "qwen-plus", "input": ask, "parameters": {"result_format": "message"}},
        )
    assert azure["choices"][0]["message"]["content"] == "You said: hi"
    assert native["output"]["choices"][0]["message"]["content"] == "You said: hi"
    assert set(native["usage"]) == {"input_tokens", "output_tokens", "total_tokens"}


_E2E_CHECK = """\
import json, os, urllib.request
def test_providers_env():
    assert os.environ["OPENAI_API_KEY"] and os.environ["DASHSCOPE_API_KEY"]
    body = {"messages": [{"role": "user", "content": "ping"}]}
    request = urllib.request.Request(
        os.environ["ACTION_BASE_URL"] + "/chat/completions",
        data=json.dumps(body).encode(), method="POST",
    )
    with urllib.request.urlopen(request) as answer:
        assert json.loads(answer.read())["choices"][0]["message"]["content"] == "You said: ping"
"""


def test_e2e_runs_upstreams_jobs_with_the_model_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "DASHSCOPE_API_KEY", "ACTION_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "upstream" / "python" / "flink_agents" / "e2e_tests"
    (folder / "e2e_tests_integration").mkdir(parents=True)
    (folder / "e2e_tests_integration" / "provider_env_test.py").write_text(_E2E_CHECK)
    out = tmp_path / "outcomes.json"
    assert main([str(tmp_path / "upstream"), "--e2e", "--json", str(out)]) == 0
    outcomes = {o["nodeid"]: o["outcome"] for o in json.loads(out.read_text())}
    assert outcomes == {
        "e2e_tests/e2e_tests_integration/provider_env_test.py::test_providers_env": "passed"
    }
