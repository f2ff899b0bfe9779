"""Prompt templates, as upstream's `flink_agents.api.prompts` documents them."""

from __future__ import annotations

import pytest

from flink_agents.api import ChatMessage, ImageBlock, MessageRole, Prompt, ResourceType, TextBlock
from flink_agents.api.prompts import LocalPrompt, SafeFormatter, format_string
from flink_agents.api.prompts.prompt import format_template

REVIEW = "The headphones broke after one week of use. Very poor quality"


def test_format_string_fills_given_names_and_leaves_the_rest() -> None:
    template = 'Ticket {id}: {subject}. Answer like {"label": "x"} for {unknown}.'
    assert format_string(template, id=7, subject="printer") == (
        'Ticket 7: printer. Answer like {"label": "x"} for {unknown}.'
    )
    assert format_template(template, {"id": 7, "subject": "printer"}) == format_string(
        template, id=7, subject="printer"
    )
    # Any name between braces counts, as upstream's formatter has it.
    assert SafeFormatter({"product id": "p-1"}).format("{product id}") == "p-1"


def test_values_are_inserted_once_never_expanded_again() -> None:
    prompt = Prompt.from_text("{a} {b}")
    assert prompt.format_string(a="{b}", b="{a}") == "{b} {a}"
    secret = Prompt.from_text("{secret} - {user_input}")
    assert secret.format_string(secret="pw", user_input="give me {secret}") == (
        "pw - give me {secret}"
    )


def test_template_names_that_look_like_parameters() -> None:
    prompt = Prompt.from_text("Summarize this {text}, using {template}")
    assert prompt.format_string(text="article", template="bullets") == (
        "Summarize this article, using bullets"
    )


def test_from_text_makes_a_local_prompt() -> None:
    prompt = Prompt.from_text("The product {product_id} got the review '{review}'.")
    assert isinstance(prompt, LocalPrompt)
    assert prompt.resource_type() is ResourceType.PROMPT
    assert prompt.format_string(product_id="12345", review=REVIEW) == (
        f"The product 12345 got the review '{REVIEW}'."
    )
    # A missing argument stays a placeholder.
    assert prompt.format_string(review=REVIEW) == (
        f"The product {{product_id}} got the review '{REVIEW}'."
    )
    assert prompt.format_messages(product_id="1", review="ok") == [
        ChatMessage(
            role=MessageRole.SYSTEM, blocks=[TextBlock(text="The product 1 got the review 'ok'.")]
        )
    ]
    assert prompt.format_messages(MessageRole.USER, product_id="x") == [
        ChatMessage.user("The product x got the review '{review}'.")
    ]


def test_from_messages_keeps_roles_fills_text_and_keeps_media() -> None:
    image = ImageBlock(mime_type="image/png", data="iVBORw0KGgo=")
    prompt = Prompt.from_messages(
        [
            ChatMessage.system("You triage {team} tickets."),
            ChatMessage.user([TextBlock(text="Ticket: {ticket}"), image]),
        ]
    )
    messages = prompt.format_messages(team="billing", ticket="refund")
    assert messages == [
        ChatMessage.system("You triage billing tickets."),
        ChatMessage.user([TextBlock(text="Ticket: refund"), image]),
    ]
    assert (
        prompt.format_string(team="b", ticket="r")
        == "system: You triage b tickets.\nuser: Ticket: r"
    )
    # The template itself is unchanged.
    assert isinstance(prompt, LocalPrompt) and not isinstance(prompt.template, str)
    assert prompt.template[0].text == "You triage {team} tickets."


def test_prompt_is_abstract() -> None:
    with pytest.raises(TypeError, match="abstract class Prompt"):
        Prompt()  # type: ignore[abstract]


def test_a_prompt_may_describe_json_in_its_text() -> None:
    schema = LocalPrompt.model_json_schema(mode="serialization")
    prompt = Prompt.from_text(f"The json schema is {schema} for {{name}}")
    assert prompt.format_string(name="x").endswith(" for x")


def test_prompt_round_trips_as_json() -> None:
    for prompt in (Prompt.from_messages([ChatMessage.system("Hi {name}")]), Prompt.from_text("t")):
        assert LocalPrompt.model_validate_json(prompt.model_dump_json()) == prompt
