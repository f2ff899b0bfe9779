"""Which reasoning an API that checks signatures takes back, and in what form.

Anthropic's Messages API and Bedrock's Converse API want the reasoning of an earlier
answer sent back in its place in the assistant message, exactly as it came: signed
text with its signature, or the redacted (encrypted) data. The rule is the same for
both: only the provider's own reasoning goes back, redacted or signed; reasoning
without a signature cannot be checked by the model and is not sent, nor is another
provider's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from flink_agents.api.content_blocks import ReasoningBlock

__all__ = ["replay_reasoning"]

Item = TypeVar("Item")


def replay_reasoning(
    block: ReasoningBlock,
    provider: str,
    *,
    signed: Callable[[str, str], Item],
    redacted: Callable[[str], Item],
) -> Item | None:
    """``redacted(data)`` for ``provider``'s redacted reasoning, ``signed(text, signature)``
    for its signed reasoning; None (not sent) for unsigned or another provider's."""
    if block.provider != provider:
        return None
    if block.redacted_data is not None:
        return redacted(block.redacted_data)
    if block.signature is None:
        return None
    return signed(block.text, block.signature)
