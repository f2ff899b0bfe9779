"""`tools/fake_ollama.py`: the fake Ollama server through the official ``ollama`` SDK, and
the ``ollama`` CLI shim; `tools/upstream_tests.py --e2e` runs them for upstream's jobs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ollama
import pytest

from examples.mock_model_server import embedding_of
from tools.fake_ollama import (
    EMBEDDING_DIMENSIONS,
    FakeOllamaServer,
    OllamaPortInUseError,
    write_cli,
)
from tools.upstream_tests import main

_MODEL = "qwen3:1.7b"


def _tool(name: str) -> dict[str, object]:
    properties = {"a": {"type": "integer"}, "b": {"type": "integer"}}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} two numbers",
            "parameters": {"type": "object", "properties": properties, "required": ["a", "b"]},
        },
    }


_TOOLS = [_tool("add"), _tool("multiply")]


@pytest.fixture
def server() -> Iterator[FakeOllamaServer]:
    with FakeOllamaServer(port=0) as fake:
        yield fake


@pytest.fixture
def client(server: FakeOllamaServer) -> ollama.Client:
    return ollama.Client(host=server.base_url)


def _calls(response: ollama.ChatResponse) -> list[tuple[str, dict[str, object]]]:
    calls = response.message.tool_calls or []
    return [(c.function.name, dict(c.function.arguments)) for c in calls]


def test_pull_lists_the_model_and_chat_needs_it(client: ollama.Client) -> None:
    assert client.list().models == []
    with pytest.raises(ollama.ResponseError, match="not found") as refused:
        client.chat(model=_MODEL, messages=[{"role": "user", "content": "hi"}])
    assert refused.value.status_code == 404
    statuses = [p.status for p in client.pull(_MODEL, stream=True)]
    assert statuses == [
        "pulling manifest",
        "verifying sha256 digest",
        "writing manifest",
        "success",
    ]
    client.pull("nomic-embed-text")
    assert [m.model for m in client.list().models] == [_MODEL, "nomic-embed-text:latest"]
    assert client.show(_MODEL).details is not None
    assert client.ps().models == []


def test_chat_calls_one_tool_per_operation_then_answers(client: ollama.Client) -> None:
    client.pull(_MODEL)
    system = {"role": "system", "content": 'An example of output is {"result": 30.32}.'}
    messages: list[dict[str, Any]] = [
        system,
        {"role": "user", "content": "What is (2123 + 2321) * 312"},
    ]
    first = client.chat(model=_MODEL, messages=messages, tools=_TOOLS)
    assert _calls(first) == [("add", {"a": 2123, "b": 2321})]
    assert first.done_reason == "stop"
    messages += [first.message.model_dump(exclude_none=True)]
    messages += [{"role": "tool", "content": "4444", "tool_name": "add"}]
    second = client.chat(model=_MODEL, messages=messages, tools=_TOOLS)
    assert _calls(second) == [("multiply", {"a": 4444, "b": 312})]
    messages += [second.message.model_dump(exclude_none=True)]
    messages += [{"role": "tool", "content": "1386528", "tool_name": "multiply"}]
    final = client.chat(model=_MODEL, messages=messages, tools=_TOOLS)
    assert final.message.content == '{"result": 1386528}'
    assert not final.message.tool_calls
    # Without the JSON example: a sentence, streamed word by word.
    chunks = list(client.chat(model=_MODEL, messages=messages[1:], tools=_TOOLS, stream=True))
    assert "".join(c.message.content or "" for c in chunks) == "The answer is 1386528."
    assert [c.done for c in chunks][-1] is True and len(chunks) > 2


def test_chat_answers_upstreams_yaml_prompts(client: ollama.Client) -> None:
    client.pull(_MODEL)

    def ask(text: str, tools: list[dict[str, object]] | None = None) -> ollama.ChatResponse:
        return client.chat(model=_MODEL, messages=[{"role": "user", "content": text}], tools=tools)

    assert _calls(ask("calculate the sum of 1 and 2.", _TOOLS[:1])) == [("add", {"a": 1, "b": 2})]
    assert ask("calculate the sum of 1 and 2.").message.content == "The answer is 3."
    joke = ask("Tell me a joke about cats.").message.content or ""
    assert "cats" in joke and joke.endswith("!")
    restated = "Here is a math answer from another assistant: 'The answer is 3.'. Reply with "
    assert ask(restated + "the numeric result only.").message.content == "3"
    assert ask("hello").message.content == "You said: hello"
    # A tool call streamed comes in a chunk of its own.
    streamed = client.chat(
        model=_MODEL,
        messages=[{"role": "user", "content": "calculate the sum of 1 and 2."}],
        tools=_TOOLS,
        stream=True,
    )
    assert [call for chunk in streamed for call in _calls(chunk)] == [("add", {"a": 1, "b": 2})]


def test_embed_is_deterministic_and_hashes_words(client: ollama.Client) -> None:
    client.pull("nomic-embed-text")
    texts = ["I like swimming.", "Swimming is what I like", "My favorite fruit is bananas."]
    vectors = client.embed(model="nomic-embed-text", input=texts).embeddings
    assert [list(v) for v in vectors] == [embedding_of(t, EMBEDDING_DIMENSIONS) for t in texts]
    assert len(vectors[0]) == EMBEDDING_DIMENSIONS == 768

    def dot(x: object, y: object) -> float:
        return sum(a * b for a, b in zip(x, y, strict=True))  # type: ignore[call-overload]

    assert dot(vectors[0], vectors[1]) > dot(vectors[0], vectors[2])
    legacy = client.embeddings(model="nomic-embed-text", prompt=texts[0]).embedding
    assert list(legacy) == list(vectors[0])


def test_the_cli_shim_pulls_from_the_fake(server: FakeOllamaServer, tmp_path: Path) -> None:
    cli = write_cli(tmp_path / "bin")
    env = {**os.environ, "OLLAMA_HOST": server.base_url}
    pulled = subprocess.run(
        [str(cli), "pull", _MODEL], env=env, capture_output=True, text=True, check=False
    )
    assert pulled.returncode == 0, pulled.stderr
    assert pulled.stdout.splitlines()[-1] == "success"
    assert server.models == [_MODEL]
    listed = subprocess.run([str(cli), "list"], env=env, capture_output=True, text=True)
    assert listed.stdout.split() == [_MODEL]
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{free.getsockname()[1]}"
    failed = subprocess.run(
        [str(cli), "pull", _MODEL],
        env={**env, "OLLAMA_HOST": dead},
        capture_output=True,
        text=True,
        check=False,
    )
    assert failed.returncode == 1 and failed.stderr.startswith("Error:")


def test_a_taken_port_is_refused_with_a_message(
    server: FakeOllamaServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(OllamaPortInUseError, match=f"127.0.0.1:{server.port}"):
        FakeOllamaServer(port=server.port)
    checkout = tmp_path / "upstream" / "python" / "flink_agents" / "e2e_tests"
    checkout.mkdir(parents=True)
    code = main([str(tmp_path / "upstream"), "--e2e", "--ollama-port", str(server.port)])
    assert code == 2
    assert "cannot start the fake Ollama server" in capsys.readouterr().err


_PULL_TEST = """
import subprocess
import ollama

def test_pull():
    subprocess.run(["ollama", "pull", "qwen3:1.7b"], check=True)
    assert [m.model for m in ollama.Client().list().models] == ["qwen3:1.7b"]
"""


def test_e2e_runs_upstreams_jobs_with_the_fake(tmp_path: Path) -> None:
    folder = tmp_path / "upstream" / "python" / "flink_agents" / "e2e_tests"
    (folder / "e2e_tests_integration").mkdir(parents=True)
    (folder / "e2e_tests_integration" / "pull_test.py").write_text(_PULL_TEST)
    out = tmp_path / "outcomes.json"
    argv = [str(tmp_path / "upstream"), "--e2e", "--ollama-port", "0", "--json", str(out)]
    assert main(argv) == 0
    outcomes = json.loads(out.read_text())
    assert [(o["nodeid"], o["outcome"]) for o in outcomes] == [
        ("e2e_tests/e2e_tests_integration/pull_test.py::test_pull", "passed")
    ]


def test_pytest_arguments_after_options(tmp_path: Path) -> None:
    folder = tmp_path / "upstream" / "python" / "flink_agents" / "e2e_tests"
    (folder / "e2e_tests_integration").mkdir(parents=True)
    (folder / "e2e_tests_integration" / "pull_test.py").write_text(_PULL_TEST)
    (folder / "e2e_tests_integration" / "other_test.py").write_text("def test_x(): pass\n")
    out = tmp_path / "outcomes.json"
    argv = [str(tmp_path / "upstream"), "--e2e", "--ollama-port", "0", "--json", str(out)]
    assert main([*argv, "--", "-k", "other"]) == 0
    assert [o["nodeid"] for o in json.loads(out.read_text())] == [
        "e2e_tests/e2e_tests_integration/other_test.py::test_x"
    ]


def test_mem0s_fact_extraction_and_memory_update(client: ollama.Client) -> None:
    from mem0.configs.prompts import get_update_memory_messages
    from mem0.memory.utils import get_fact_retrieval_messages, parse_messages

    client.pull(_MODEL)

    def ask(messages: list[dict[str, str]]) -> object:
        return json.loads(client.chat(model=_MODEL, messages=messages).message.content or "")

    said = parse_messages([{"role": "user", "content": "My favorite fruit is bananas."}])
    system, user = get_fact_retrieval_messages(said)
    facts = ask([{"role": "system", "content": system}, {"role": "user", "content": user}])
    assert facts == {"facts": ["My favorite fruit is bananas."]}
    old = [{"id": "0", "text": "My favorite fruit is watermelon."}]
    update = get_update_memory_messages(old, ["My favorite fruit is bananas."])
    assert ask([{"role": "user", "content": update}]) == {
        "memory": [
            {
                "id": "0",
                "text": "My favorite fruit is bananas.",
                "event": "UPDATE",
                "old_memory": "My favorite fruit is watermelon.",
            }
        ]
    }
    added = get_update_memory_messages([{"id": "0", "text": "I like swimming."}], ["I eat no meat"])
    assert ask([{"role": "user", "content": added}]) == {
        "memory": [
            {"id": "0", "text": "I like swimming.", "event": "NONE"},
            {"id": "1", "text": "I eat no meat", "event": "ADD"},
        ]
    }
    first = get_update_memory_messages([], ["I like swimming."])
    assert ask([{"role": "user", "content": first}]) == {
        "memory": [{"id": "0", "text": "I like swimming.", "event": "ADD"}]
    }


def test_the_openai_compatible_endpoint(server: FakeOllamaServer) -> None:
    import openai

    chat = openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="fake").chat.completions
    question = [{"role": "user", "content": "calculate the sum of 1 and 2."}]
    called = chat.create(model="any", messages=question, tools=[_tool("add")])  # type: ignore[list-item]
    calls = called.choices[0].message.tool_calls or []
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [  # type: ignore[union-attr]
        ("add", {"a": 1, "b": 2})
    ]
    assert called.choices[0].finish_reason == "tool_calls"
    answered = chat.create(model="any", messages=question)  # type: ignore[arg-type]
    assert answered.choices[0].message.content == "The answer is 3."
