"""Upstream's eight example scripts (Apache Flink Agents, python/flink_agents/examples/),
kept in examples/upstream/flink_agents/examples/ as upstream has them with only the model
connections changed (the offline models of examples/upstream/offline_models.py).

Each example's agents run on the local runner with the inputs its script reads; the three
whose source ends (a collection: the parallel chat, skills and RAG examples) also run as
upstream's scripts, unchanged, as PyFlink jobs on the mini-cluster. The workflow and
ReAct agents run as Flink jobs in test_upstream_quickstart.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceType

UPSTREAM = Path(__file__).resolve().parents[1] / "examples" / "upstream"
QUICKSTART = UPSTREAM / "flink_agents" / "examples" / "quickstart"
RAG = UPSTREAM / "flink_agents" / "examples" / "rag"
REVIEWS = [
    json.loads(line)
    for line in (QUICKSTART / "resources" / "product_review.txt")
    .read_text(encoding="utf-8")
    .splitlines()[:40]
]
"""The first reviews of upstream's input file (it has 3,163)."""
QUESTIONS = ["What is (2 + 3) * 4?", "Compute 2 ^ 10.", "What is 144 divided by 12?"]
"""The skills example's questions."""
RAG_ANSWERS = {
    "What is Apache Flink?": "Apache Flink Agents is an innovative Agentic AI framework",
    "What is Apache Flink Agents?": "Apache Flink Agents is an innovative Agentic AI framework",
    "What is Python?": "Vector stores are databases optimized for storing",
}
"""The RAG example's questions, and the start of the knowledge base document the offline
model answers each with (the closest by the offline embedding model)."""

if str(UPSTREAM) not in sys.path:
    sys.path.insert(0, str(UPSTREAM))  # as PYTHONPATH=examples/upstream does


def _run_local(
    agent: Agent | str,
    inputs: list[dict[str, Any]],
    env: AgentsExecutionEnvironment | None = None,
) -> dict[Any, list[Any]]:
    from flink_agents.examples.quickstart.agents.custom_types_and_resources import (
        ollama_server_descriptor,
    )

    env = env or AgentsExecutionEnvironment.get_execution_environment()
    # Commands run where the user allows them: here, for the skills example.
    env.get_config().set(AgentExecutionOptions.SKILLS_COMMANDS_ENABLED, True)
    env.add_resource("ollama_server", ResourceType.CHAT_MODEL_CONNECTION, ollama_server_descriptor)
    outputs = env.from_list(inputs).apply(agent).to_list()  # pyright: ignore[reportArgumentType]
    env.execute()
    by_key: dict[Any, list[Any]] = {}
    for output in outputs:
        for key, value in output.items():
            by_key.setdefault(key, []).append(value)
    return by_key


def _expected_analysis(review: dict[str, Any]) -> tuple[int, list[str]]:
    from offline_review_model import analyze

    return analyze(review["review"])


def test_workflow_single_agent_example(capsys: pytest.CaptureFixture[str]) -> None:
    from flink_agents.examples.quickstart.agents.custom_types_and_resources import ProductReview
    from flink_agents.examples.quickstart.agents.review_analysis_agent import ReviewAnalysisAgent

    inputs = [{"key": r["id"], "value": ProductReview.model_validate(r)} for r in REVIEWS]
    results = _run_local(ReviewAnalysisAgent(), inputs)
    got = sorted((r.id, r.score, r.reasons) for values in results.values() for r in values)
    assert got == sorted((r["id"], *_expected_analysis(r)) for r in REVIEWS)
    # The tool ran for the shipping complaints (the model calls it first for those).
    shipping = {
        r["id"]
        for r in REVIEWS
        if {"shipping damage", "late delivery"} & set(_expected_analysis(r)[1])
    }
    printed = capsys.readouterr().out
    assert (
        shipping
        and {p for p in shipping if f"Transportation issue for product [{p}]" in printed}
        == shipping
    )


def test_react_agent_example() -> None:
    # react_agent_example.main's agent and tool, on the local runner.
    from flink_agents.api.agents.react_agent import ReActAgent
    from flink_agents.api.resource import ResourceDescriptor, ResourceName
    from flink_agents.api.tools.tool import Tool
    from flink_agents.examples.quickstart.agents.custom_types_and_resources import (
        ProductReview,
        ProductReviewAnalysisRes,
        notify_shipping_manager,
        review_analysis_react_prompt,
    )

    env = AgentsExecutionEnvironment.get_execution_environment()
    env.add_resource(
        "notify_shipping_manager", ResourceType.TOOL, Tool.from_callable(notify_shipping_manager)
    )
    agent = ReActAgent(
        chat_model=ResourceDescriptor(
            clazz=ResourceName.ChatModel.OLLAMA_SETUP,
            connection="ollama_server",
            model="qwen3:8b",
            tools=["notify_shipping_manager"],
        ),
        prompt=review_analysis_react_prompt,
        output_schema=ProductReviewAnalysisRes,
    )
    inputs = [{"key": r["id"], "value": ProductReview.model_validate(r)} for r in REVIEWS]
    results = _run_local(agent, inputs, env)
    got = sorted((r.id, r.score, r.reasons) for values in results.values() for r in values)
    assert got == sorted((r["id"], *_expected_analysis(r)) for r in REVIEWS)


def test_workflow_multiple_agent_example() -> None:
    # The table agent on the file's rows, the example's window function over each
    # product's analyses, then the suggestion agent on each product's summary.
    from flink_agents.examples.quickstart.agents.custom_types_and_resources import ProductSuggestion
    from flink_agents.examples.quickstart.agents.product_suggestion_agent import (
        ProductSuggestionAgent,
    )
    from flink_agents.examples.quickstart.agents.table_review_analysis_agent import (
        TableReviewAnalysisAgent,
    )
    from flink_agents.examples.quickstart.workflow_multiple_agent_example import (
        AggregateScoreDistributionAndDislikeReasons,
    )

    analyses = _run_local(
        TableReviewAnalysisAgent(), [{"key": r["id"], "value": r} for r in REVIEWS]
    )
    assert sum(len(v) for v in analyses.values()) == len(REVIEWS)
    window = AggregateScoreDistributionAndDislikeReasons()
    summaries = [s for key, values in analyses.items() for s in window.process(key, None, values)]  # pyright: ignore[reportArgumentType]
    suggestions = _run_local(
        ProductSuggestionAgent(), [{"key": s.id, "value": s} for s in summaries]
    )
    assert sorted(suggestions) == sorted(analyses)
    for key, [suggestion] in suggestions.items():
        assert isinstance(suggestion, ProductSuggestion) and suggestion.id == key
        assert len(suggestion.suggestions) == 3 and len(suggestion.score_hist) == 5


def test_parallel_chat_request_example() -> None:
    from flink_agents.examples.quickstart.agents.parallel_chat_agent import (
        INPUT_TEXT,
        ParallelChatAgent,
    )

    results = _run_local(ParallelChatAgent(), [{"key": 1, "value": {"id": 1, "text": INPUT_TEXT}}])
    assert results == {
        1: [{"id": 1, "text": INPUT_TEXT, "summary": "taste:positive, service:negative"}]
    }


def test_skills_agent_example() -> None:
    from flink_agents.examples.quickstart.agents.math_agent import MathAgent

    results = _run_local(MathAgent(), [{"key": q, "value": q} for q in QUESTIONS])
    assert results == {QUESTIONS[0]: ["20"], QUESTIONS[1]: ["1024"], QUESTIONS[2]: ["12"]}


def test_yaml_workflow_agent_example() -> None:
    from flink_agents.examples.quickstart.agents.custom_types_and_resources import ProductReview

    env = AgentsExecutionEnvironment.get_execution_environment()
    try:
        env.load_yaml(QUICKSTART / "yaml_review_analysis_agent.yaml")  # pyright: ignore[reportAttributeAccessIssue]
    except NotImplementedError as exc:
        pytest.skip(f"YAML agents are not here yet: {exc}")
    inputs = [{"key": r["id"], "value": ProductReview.model_validate(r)} for r in REVIEWS]
    results = _run_local("review_analysis_agent", inputs, env)
    got = sorted((r.id, r.score, r.reasons) for values in results.values() for r in values)
    assert got == sorted((r["id"], *_expected_analysis(r)) for r in REVIEWS)


def test_rag_agent_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # rag_agent_example's knowledge base, resources and queries, on the local runner.
    from offline_models import offline_connection, offline_embedding_connection

    from flink_agents.examples.rag import knowledge_base_setup
    from flink_agents.examples.rag.agents import rag_agent

    for module in (knowledge_base_setup, rag_agent):
        monkeypatch.setattr(module, "CHROMA_PERSIST_DIRECTORY", str(tmp_path / "chroma"))
    knowledge_base_setup.populate_knowledge_base()
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.add_resource(
        "ollama_embedding_connection",
        ResourceType.EMBEDDING_MODEL_CONNECTION,
        offline_embedding_connection(),
    )
    env.add_resource(
        "ollama_chat_connection", ResourceType.CHAT_MODEL_CONNECTION, offline_connection()
    )
    outputs = (
        env.from_list([{"key": q, "value": q} for q in RAG_ANSWERS])
        .apply(rag_agent.MyRAGAgent())
        .to_list()
    )
    env.execute()
    answers = {key: value for output in outputs for key, value in output.items()}
    assert sorted(answers) == sorted(RAG_ANSWERS)
    for question, start in RAG_ANSWERS.items():
        assert answers[question].startswith(start), answers


def _run_script(script: str, tmp_path: Path, folder: Path = QUICKSTART) -> str:
    """Upstream's script as a user runs it (examples/upstream on PYTHONPATH; commands
    allowed by the Flink configuration's agent section); its standard output."""
    import pyflink

    conf = tmp_path / "conf"
    conf.mkdir()
    flink_defaults = Path(pyflink.__file__).parent / "conf" / "config.yaml"
    (conf / "config.yaml").write_text(
        flink_defaults.read_text(encoding="utf-8") + "\nagent:\n  skills.commands.enabled: true\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join([str(UPSTREAM), env.get("PYTHONPATH", "")])
    env["FLINK_CONF_DIR"] = str(conf)
    env["CHROMA_PERSIST_DIRECTORY"] = str(tmp_path / "chroma")  # the RAG example's store
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run(
        [sys.executable, str(folder / script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


@pytest.mark.flink
def test_parallel_chat_request_example_as_a_flink_job(tmp_path: Path) -> None:
    out = _run_script("parallel_chat_request_example.py", tmp_path)
    assert "'summary': 'taste:positive, service:negative'" in out


@pytest.mark.flink
def test_skills_agent_example_as_a_flink_job(tmp_path: Path) -> None:
    out = _run_script("skills_agent_example.py", tmp_path)
    lines = {line.split("> ", 1)[-1].strip() for line in out.splitlines()}
    assert {"20", "1024", "12"} <= lines, out[-2000:]


@pytest.mark.flink
def test_rag_agent_example_as_a_flink_job(tmp_path: Path) -> None:
    out = _run_script("rag_agent_example.py", tmp_path, RAG)
    answers = [line.split("> ", 1)[-1].strip() for line in out.splitlines()]
    for start in RAG_ANSWERS.values():
        assert any(answer.startswith(start) for answer in answers), out[-2000:]
    assert sum(a.startswith(RAG_ANSWERS["What is Python?"]) for a in answers) == 1
