"""Property-based round trips over random block sequences."""

from __future__ import annotations

import base64
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from flink_agents.api import (
    AudioBlock,
    ChatMessage,
    DocumentBlock,
    ImageBlock,
    MessageRole,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
)

texts = st.text(max_size=40)
b64 = st.binary(min_size=1, max_size=48).map(lambda b: base64.b64encode(b).decode())
urls = st.from_regex(r"https://media\.example/[a-z0-9]{4,12}\.bin", fullmatch=True)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


def media(cls: type, mime: st.SearchStrategy[str]) -> st.SearchStrategy:
    source = st.one_of(st.builds(lambda d: {"data": d}, b64), st.builds(lambda u: {"url": u}, urls))
    return st.builds(
        lambda m, s, n, size: cls(mime_type=m, name=n, size_bytes=size, **s),
        mime,
        source,
        st.none() | texts,
        st.none() | st.integers(0, 10**9),
    )


text_blocks = st.builds(TextBlock, text=texts)
images = media(ImageBlock, st.sampled_from(["image/png", "image/jpeg", "image/webp"]))
audios = media(AudioBlock, st.sampled_from(["audio/wav", "audio/mpeg"]))
videos = media(VideoBlock, st.sampled_from(["video/mp4"]))
documents = media(DocumentBlock, st.sampled_from(["application/pdf", "text/plain"]))
media_blocks = st.one_of(images, audios, videos, documents)
reasoning = st.builds(
    ReasoningBlock,
    text=texts,
    provider=st.sampled_from([None, "anthropic", "openai-responses"]),
    signature=st.none() | texts,
    encrypted_content=st.none() | texts,
)
tool_calls = st.builds(
    ToolCallBlock,
    id=st.uuids().map(str),
    name=st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
    input=st.dictionaries(texts, json_values, max_size=3),
)
tool_results = st.builds(
    ToolResultBlock,
    call_id=st.uuids().map(str),
    content=st.lists(st.one_of(text_blocks, media_blocks), max_size=4),
    is_error=st.booleans(),
)

messages = st.one_of(
    st.builds(
        lambda bs: ChatMessage(role=MessageRole.SYSTEM, blocks=bs),
        st.lists(text_blocks, max_size=3),
    ),
    st.builds(
        lambda bs: ChatMessage(role=MessageRole.USER, blocks=bs),
        st.lists(st.one_of(text_blocks, media_blocks), max_size=6),
    ),
    st.builds(
        lambda bs: ChatMessage(role=MessageRole.ASSISTANT, blocks=bs),
        st.lists(
            st.one_of(text_blocks, media_blocks, reasoning, tool_calls),
            max_size=6,
            unique_by=lambda b: getattr(b, "id", id(b)) if isinstance(b, ToolCallBlock) else id(b),
        ),
    ),
    st.builds(lambda r: ChatMessage(role=MessageRole.TOOL, blocks=[r]), tool_results),
)


def _walk_media(message: ChatMessage) -> list:
    found = []
    for block in message.blocks:
        if isinstance(block, ToolResultBlock):
            found.extend(b for b in block.content if not isinstance(b, TextBlock))
        elif isinstance(block, (ImageBlock, AudioBlock, VideoBlock, DocumentBlock)):
            found.append(block)
    return found


@settings(max_examples=200, deadline=None)
@given(messages)
def test_json_round_trip_is_exact(message: ChatMessage) -> None:
    again = ChatMessage.model_validate_json(message.model_dump_json())
    assert again == message
    assert [type(b) for b in again.blocks] == [type(b) for b in message.blocks]
    assert again.model_dump() == message.model_dump()


@settings(max_examples=200, deadline=None)
@given(messages)
def test_sanitize_leaves_no_payload_or_url(message: ChatMessage) -> None:
    dumped = message.sanitize().model_dump_json()
    for block in _walk_media(message):
        if block.data is not None:
            assert json.dumps(block.data) not in dumped
        if block.url is not None:
            assert block.url not in dumped
    assert "https://media.example/" not in dumped
    # text, reasoning and tool input survive
    assert ChatMessage.model_validate_json(dumped).text == message.text
    assert ChatMessage.model_validate_json(dumped).tool_calls == message.tool_calls


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(text_blocks, media_blocks), min_size=1, max_size=5))
def test_blocks_as_tool_output_keep_order(blocks: list) -> None:
    from flink_agents.api import normalize_tool_output

    out = normalize_tool_output(blocks)
    if all(isinstance(b, TextBlock) for b in blocks):
        assert out == [TextBlock(text="\n".join(b.text for b in blocks))]
    else:
        assert out == blocks
