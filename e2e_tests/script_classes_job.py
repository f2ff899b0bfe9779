"""A job script whose classes live in `__main__` (run as a script; no tests here).

    python e2e_tests/script_classes_job.py local|thread|process [--durable-store URL]

The quickstart's shape with every kind of class a script defines: the output schema
(`Weather`, in an `OutputEvent`), a tool's argument model (`CityQuery`, annotated as a
string under `from __future__ import annotations`), a custom event (`Checked`), an enum
(`Mood`) and the value of a durable call (`Note`). It runs the agent on the local runner or
as a PyFlink job and prints one line per output: `OUTPUT <json>`, where the JSON says what
the client received. The local runner's `to_list()` gives the `Report` itself (with the very
classes of this script); on Flink, `to_datastream()` gives its JSON form, as upstream's does
(its outputs cross its Java operator as JSON), and a `map` right after the agent (fused with
its operator) `json.dumps` it as upstream's e2e jobs do.
"""

from __future__ import annotations

import argparse
import enum
import json
from typing import Any

from pydantic import BaseModel

from flink_agents.api import (
    Agent,
    AgentsExecutionEnvironment,
    BaseChatModelSetup,
    ChatMessage,
    ChatRequestEvent,
    ChatResponseEvent,
    Event,
    FunctionChatModelConnection,
    InputEvent,
    OutputEvent,
    ResourceDescriptor,
    RunnerContext,
    ToolCallBlock,
    action,
    chat_model_connection,
    chat_model_setup,
    tool,
)

INPUTS = [{"key": "u1", "value": "Lyon"}, {"key": "u2", "value": "Oslo"}]


class Mood(enum.Enum):
    SUNNY = "sunny"
    GREY = "grey"


class Weather(BaseModel):
    city: str
    summary: str
    mood: Mood


class CityQuery(BaseModel):
    city: str
    days: int = 1


class Note(BaseModel):
    text: str


class Report(BaseModel):
    weather: Weather
    note: Note
    checked_as: str


class Checked(Event):
    """Sent by `answer` with the structured output; `publish` checks its class."""


class ScriptAgent(Agent):
    @action(InputEvent)
    @staticmethod
    def ask(event: Event, ctx: RunnerContext) -> None:
        city = event.attributes["input"]
        if isinstance(city, dict):  # a record from a stream: {"key": ..., "value": ...}
            city = city["value"]
        ctx.send_event(
            ChatRequestEvent(
                model="weather_model",
                messages=[ChatMessage.user(city)],
                output_schema=Weather,
            )
        )

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
        ctx.send_event(Checked(attributes={"weather": event.structured_output}))

    @action(Checked)
    @staticmethod
    async def publish(event: Event, ctx: RunnerContext) -> None:
        weather = event.attributes["weather"]
        note = await ctx.durable_execute_async(make_note, weather)
        checked_as = type(event).__name__ if isinstance(event, Checked) else "Event"
        ctx.send_event(
            OutputEvent(output=Report(weather=weather, note=note, checked_as=checked_as))
        )

    @tool
    @staticmethod
    def forecast(query: CityQuery) -> str:
        """Today's forecast.

        Args:
            query: Where, and for how many days.
        """
        return f"{type(query).__name__} {query.city} {query.days}"

    @chat_model_connection
    @staticmethod
    def model_connection() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=FunctionChatModelConnection, function=fake_model)

    @chat_model_setup
    @staticmethod
    def weather_model() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=BaseChatModelSetup, connection="model_connection", tools=["forecast"]
        )


def make_note(weather: Weather) -> Note:
    return Note(text=f"{type(weather).__name__}/{weather.mood.name}")


def fake_model(messages: list[ChatMessage], tools: Any) -> Any:
    """Calls the tool once, then answers in JSON with what the tool received."""
    city = messages[0].text
    last = messages[-1]
    if last.tool_result_block is None:
        call = ToolCallBlock(id="c1", name="forecast", input={"query": {"city": city}})
        return ChatMessage.assistant(tool_calls=[call])
    mood = "sunny" if city == "Lyon" else "grey"
    return json.dumps({"city": city, "summary": last.tool_result_block.text, "mood": mood})


def describe(output: Any) -> dict[str, Any]:
    """What the client received: the `Report` (local runner), with this script's classes,
    or its JSON form (Flink, after `json.dumps` downstream)."""
    if isinstance(output, str):
        return {"form": "json", "value": json.loads(output)}
    return {
        "form": "model",
        "is_report": type(output) is Report,
        "weather_is_weather": type(output.weather) is Weather,
        "mood_is_mood": type(output.weather.mood) is Mood,
        "note_is_note": type(output.note) is Note,
        "value": output.model_dump(mode="json"),
    }


def run_locally(store: str | None) -> list[Any]:
    env = AgentsExecutionEnvironment.get_execution_environment()
    if store:
        env.get_config().set("durable-execution.store", store)
    results = env.from_list(INPUTS).apply(ScriptAgent()).to_list()
    env.execute()
    return [value for result in results for value in result.values()]


def run_on_flink(mode: str, store: str | None) -> list[Any]:
    from pyflink.common import Types

    from flink_agents.runtime.flink import (
        FlinkAgentsExecutionEnvironment,
        create_stream_execution_environment,
    )

    env = create_stream_execution_environment()
    env.set_parallelism(1)
    agents_env = FlinkAgentsExecutionEnvironment(env, execution_mode=mode)  # type: ignore[arg-type]
    if store:
        agents_env.get_config().set("durable-execution.store", store)
    outputs: Any = (
        agents_env.from_datastream(env.from_collection(INPUTS), key_selector=lambda r: r["key"])
        .apply(ScriptAgent())
        .to_datastream()
        .map(lambda x: json.dumps(x), Types.STRING())  # as upstream's e2e jobs
    )
    with outputs.execute_and_collect("script-classes") as results:
        return list(results)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["local", "thread", "process"])
    parser.add_argument("--durable-store")
    args = parser.parse_args()
    if args.mode == "local":
        outputs = run_locally(args.durable_store)
    else:
        outputs = run_on_flink(args.mode, args.durable_store)
    described = [describe(output) for output in outputs]
    for line in sorted(described, key=lambda d: d["value"]["weather"]["city"]):
        print("OUTPUT " + json.dumps(line, sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
