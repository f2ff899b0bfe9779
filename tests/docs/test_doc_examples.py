"""Every Python block of README.md and docs/*.md runs as the page shows it, and prints
what the page says it prints (see `markdown_blocks` for the markers). Blocks that need a
Flink mini-cluster run in e2e_tests/test_newcomer_path.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.docs.markdown_blocks import (
    CodeBlock,
    chain_of,
    example_blocks,
    run_as_script,
    run_chain,
)

PROVIDER_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "OPENAI_BASE_URL")


def _module_name(block: CodeBlock) -> str:
    return f"docs_example_{block.path.stem.replace('-', '_')}_{block.line}"


@pytest.mark.parametrize("block", example_blocks(), ids=lambda block: block.name)
def test_example(block: CodeBlock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if block.is_partial:
        pytest.skip(f"partial: {block.directives['partial']}")
    if block.needs_flink:
        pytest.skip("needs a Flink mini-cluster: runs in e2e_tests/test_newcomer_path.py")
    for key in PROVIDER_KEYS:  # examples never reach a real provider
        monkeypatch.delenv(key, raising=False)
    if block.own_process:
        from e2e_tests.otlp_receiver import OtlpReceiver

        # An example that sets up OpenTelemetry's exporter sends to a receiver here.
        with OtlpReceiver() as receiver:
            env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
            result = run_as_script(block, tmp_path, env, timeout=120)
        if result.returncode != 0:
            pytest.fail(f"{block.name} failed (exit {result.returncode}):\n{result.stderr[-6000:]}")
        return
    monkeypatch.chdir(tmp_path)  # files an example writes land here
    run_chain(chain_of(block), module_name=_module_name(block))
