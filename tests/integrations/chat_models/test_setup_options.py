"""A setup's typed options as call parameters: `set_options`, and `add_options` for the
options a subclass adds (the ``params`` already given win)."""

from __future__ import annotations

from dataclasses import dataclass

from flink_agents.integrations.chat_models._setup_options import add_options, set_options


@dataclass
class _Setup:
    top_k: int | None = None
    logprobs: bool | None = None
    seed: int | None = None


def test_set_options_keeps_the_set_ones_in_order() -> None:
    assert set_options(_Setup(seed=7, top_k=3), ("seed", "logprobs", "top_k")) == {
        "seed": 7,
        "top_k": 3,
    }


def test_add_options_puts_a_subclass_option_after_the_base_ones_under_the_params() -> None:
    base = {"model": "m", "top_k": 40}  # top_k from the call's params
    kwargs = add_options(base, _Setup(top_k=3, logprobs=True), ("top_k", "logprobs", "seed"))
    assert list(kwargs.items()) == [("model", "m"), ("top_k", 40), ("logprobs", True)]
