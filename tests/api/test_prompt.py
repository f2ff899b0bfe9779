"""Prompt templates."""

from __future__ import annotations

import pytest

from flink_agents.api import ChatMessage, ImageBlock, MessageRole, Prompt, ResourceType, TextBlock
from flink_agents.api.prompts.prompt import format_template


def test_format_template_replaces_known_names_only() -> None:
    template = 'Ticket {id}: {subject}. Answer like {"label": "x"} for {unknown}.'
    assert format_template(template, {"id": 7, "subject": "printer"}) == (
        'Ticket 7: printer. Answer like {"label": "x"} for {unknown}.'
    )


def test_text_prompt() -> None:
    prompt = Prompt.from_text("Classify: {ticket}")
    assert prompt.resource_type() is ResourceType.PROMPT
    assert prompt.format_string(ticket="broken") == "Classify: broken"
    assert prompt.format_messages(ticket="broken") == [ChatMessage.system("Classify: broken")]
    assert prompt.format_messages(MessageRole.USER, ticket="x") == [ChatMessage.user("Classify: x")]


def test_message_prompt_templates_text_and_keeps_media() -> None:
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
    assert prompt.messages[0].text == "You triage {team} tickets."


def test_a_prompt_has_exactly_one_form() -> None:
    with pytest.raises(ValueError):
        Prompt()
    with pytest.raises(ValueError):
        Prompt(template="x", messages=[ChatMessage.user("y")])


def test_prompt_round_trips_as_json() -> None:
    prompt = Prompt.from_messages([ChatMessage.system("Hi {name}")])
    assert Prompt.model_validate_json(prompt.model_dump_json()) == prompt
