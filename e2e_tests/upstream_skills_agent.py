################################################################################
#  Licensed to the Apache Software Foundation (ASF) under one
#  or more contributor license agreements.  See the NOTICE file
#  distributed with this work for additional information
#  regarding copyright ownership.  The ASF licenses this file
#  to you under the Apache License, Version 2.0 (the
#  "License"); you may not use this file except in compliance
#  with the License.  You may obtain a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
#  Unless required by applicable law or agreed to in writing, software
#  distributed under the License is distributed on an "AS IS" BASIS,
#  WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
#  See the License for the specific language governing permissions and
# limitations under the License.
#################################################################################
"""Upstream's skills agent (Apache Flink Agents,
python/flink_agents/e2e_tests/e2e_tests_integration/agent_skills_test.py: `SkillTestAgent`
and the resources its ReAct test registers), with only the model connection changed: the
offline skills model (examples/upstream/offline_skills_model.py) instead of
``OPENAI_COMPLETIONS_CONNECTION`` to DashScope. The setup keeps upstream's
``OPENAI_COMPLETIONS_SETUP`` with its skills and allowed commands.
"""

import sys
from dataclasses import dataclass
from pathlib import Path

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.function_model import FunctionChatModelConnection
from flink_agents.api.decorators import (
    action,
    chat_model_connection,
    chat_model_setup,
    prompt,
    skills,
)
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.events.event_type import EventType
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor, ResourceName
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.skills import Skills

current_dir = Path(__file__).parent

sys.path.insert(0, str(current_dir.parent / "examples" / "upstream"))
from offline_skills_model import skills_model  # noqa: E402

MODEL = "qwen3.6-plus"


@dataclass
class Operation:
    a: int
    b: int


def offline_connection() -> FunctionChatModelConnection:
    """The one change: the model connection (upstream: OPENAI_COMPLETIONS_CONNECTION)."""
    return FunctionChatModelConnection(function=skills_model)


class SkillTestAgent(Agent):
    """Agent for testing async execution."""

    @chat_model_connection
    @staticmethod
    def openai_connection() -> FunctionChatModelConnection:
        return offline_connection()

    @chat_model_setup
    @staticmethod
    def openai_setup() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=ResourceName.ChatModel.OPENAI_COMPLETIONS_SETUP,
            connection="openai_connection",
            model=MODEL,
            skills=["math-calculator", "joke-generator"],
            allowed_commands=["echo", "bc", "python"],
            prompt="system_prompt",
        )

    @skills
    @staticmethod
    def my_skills() -> Skills:
        return Skills.from_local_dir(str(current_dir / "resources" / "skills"))

    @prompt
    @staticmethod
    def system_prompt() -> Prompt:
        return Prompt.from_messages(
            messages=[
                ChatMessage(
                    role=MessageRole.SYSTEM,
                    content="You are a help assistant. Use the math-calculator skill when asked to evaluate "
                    "an expression. You **must load the skill first** and strictly follow the instructions "
                    "of the skill.",
                )
            ],
        )

    @action(EventType.InputEvent)
    @staticmethod
    def process_input(event: Event, ctx: RunnerContext) -> None:
        input_event = InputEvent.from_event(event)
        if isinstance(input_event.input, dict):
            input: Operation = Operation(**input_event.input)
            ctx.send_event(
                ChatRequestEvent(
                    model="openai_setup",
                    messages=[
                        ChatMessage(
                            role=MessageRole.USER,
                            content=f"Please evaluate the expression: ({input.a} ^ {input.b})",
                        )
                    ],
                )
            )
        else:
            input: str = input_event.input
            ctx.send_event(
                ChatRequestEvent(
                    model="openai_setup",
                    messages=[
                        ChatMessage(
                            role=MessageRole.USER,
                            content=input,
                        )
                    ],
                )
            )

    @action(EventType.ChatResponseEvent)
    @staticmethod
    def process_chat_response(event: Event, ctx: RunnerContext) -> None:
        chat_response = ChatResponseEvent.from_event(event)
        ctx.send_event(OutputEvent(output=chat_response.response.content))
