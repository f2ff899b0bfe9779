"""The API reference reads the package as Python imports it: `runtime/` and
`integrations/` under `flink_agents` (tools/docs_hooks.py lays the links out for griffe)."""

from __future__ import annotations

from pathlib import Path

import griffe

from tools.docs_hooks import ROOT, lay_out_package


def test_griffe_finds_every_layer_under_its_package_name(tmp_path: Path) -> None:
    sources = lay_out_package(tmp_path / "src")
    loader = griffe.GriffeLoader(search_paths=[str(sources)])
    local_runner = loader.load("flink_agents.runtime.local_runner")
    anthropic = loader.load("flink_agents.integrations.chat_models.anthropic")
    api = loader.load("flink_agents.api")
    assert "LocalRunner" in local_runner.members
    assert "AnthropicChatModelConnection" in anthropic.members
    assert "Agent" in api.members


def test_laying_out_again_replaces_the_links(tmp_path: Path) -> None:
    first = lay_out_package(tmp_path / "src")
    (first / "flink_agents" / "stale.py").write_text("")
    again = lay_out_package(tmp_path / "src")
    assert not (again / "flink_agents" / "stale.py").exists()
    assert (again / "flink_agents" / "runtime").resolve() == ROOT / "runtime"
