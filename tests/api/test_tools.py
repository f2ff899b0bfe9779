"""FunctionTool: schema from type hints and docstrings, calls, pickling."""

from __future__ import annotations

import asyncio
import pickle
import threading
from typing import Literal

import cloudpickle
import pytest
from pydantic import BaseModel, ValidationError

from flink_agents.api import FunctionTool, ResourceType, ToolMetadata
from flink_agents.api.tools.function_tool import parse_docstring


def google_style(city: str, days: int = 1, unit: Literal["C", "F"] = "C") -> str:
    """Get the weather forecast for a city.

    Uses the national service.

    Args:
        city: The city name,
            as written locally.
        days (int): How many days ahead.
        unit: Celsius or Fahrenheit.

    Returns:
        The forecast text.
    """
    return f"{city}:{days}:{unit}"


def numpy_style(ticket_id: int, tags: list[str] | None = None) -> dict[str, object]:
    """Look a ticket up.

    Parameters
    ----------
    ticket_id : int
        The ticket number.
    tags : list of str, optional
        Labels to filter by,
        all of them.

    Returns
    -------
    dict
        The ticket.
    """
    return {"id": ticket_id, "tags": tags or []}


def sphinx_style(amount: float, currency: str = "EUR") -> str:
    """Convert money.

    :param amount: How much.
    :param str currency: The ISO code
        of the currency.
    :returns: The converted amount.
    """
    return f"{amount} {currency}"


class Address(BaseModel):
    street: str
    zip_code: str


def takes_model(address: Address) -> str:
    """Format an address."""
    return f"{address.street}, {address.zip_code}"


async def async_tool(text: str) -> str:
    """Shout.

    Args:
        text: What to shout.
    """
    await asyncio.sleep(0)
    return text.upper()


def test_google_docstring_schema() -> None:
    tool = FunctionTool.from_function(google_style)
    assert tool.resource_type() is ResourceType.TOOL
    assert tool.metadata == ToolMetadata(
        name="google_style",
        description="Get the weather forecast for a city.\n\nUses the national service.",
        args_schema={
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "city": {"type": "string", "description": "The city name, as written locally."},
                "days": {"type": "integer", "default": 1, "description": "How many days ahead."},
                "unit": {
                    "type": "string",
                    "enum": ["C", "F"],
                    "default": "C",
                    "description": "Celsius or Fahrenheit.",
                },
            },
            "required": ["city"],
        },
    )


def test_numpy_and_sphinx_docstrings() -> None:
    assert parse_docstring(numpy_style.__doc__) == (
        "Look a ticket up.",
        {"ticket_id": "The ticket number.", "tags": "Labels to filter by, all of them."},
    )
    assert parse_docstring(sphinx_style.__doc__) == (
        "Convert money.",
        {"amount": "How much.", "currency": "The ISO code of the currency."},
    )
    schema = FunctionTool.from_function(numpy_style).metadata.args_schema
    assert schema["required"] == ["ticket_id"]
    assert schema["properties"]["tags"]["description"] == "Labels to filter by, all of them."
    assert schema["properties"]["tags"]["anyOf"] == [
        {"type": "array", "items": {"type": "string"}},
        {"type": "null"},
    ]


def test_name_and_description_overrides_and_pydantic_parameters() -> None:
    tool = FunctionTool.from_function(takes_model, name="format_address", description="Formats.")
    assert tool.name == "format_address"
    assert tool.metadata.description == "Formats."
    schema = tool.metadata.args_schema
    assert schema["properties"]["address"] == {"$ref": "#/$defs/Address"}
    assert set(schema["$defs"]["Address"]["properties"]) == {"street", "zip_code"}


async def test_call_validates_and_coerces_arguments() -> None:
    tool = FunctionTool.from_function(google_style)
    assert await tool.acall(city="Lyon", days="3") == "Lyon:3:C"
    with pytest.raises(ValidationError) as raised:
        await tool.acall(days=2)  # city missing
    assert [(e["loc"], e["type"]) for e in raised.value.errors()] == [(("city",), "missing")]
    with pytest.raises(ValidationError) as raised:
        await tool.acall(city="Lyon", unknown=1)
    assert [(e["loc"], e["type"]) for e in raised.value.errors()] == [
        (("unknown",), "extra_forbidden")
    ]
    address_tool = FunctionTool.from_function(takes_model)
    assert await address_tool.acall(address={"street": "Main St 1", "zip_code": "1000"}) == (
        "Main St 1, 1000"
    )


async def test_sync_tools_run_in_a_worker_thread_async_tools_on_the_loop() -> None:
    seen: list[str] = []

    def where(x: int) -> int:
        """Record the thread."""
        seen.append(threading.current_thread().name)
        return x

    assert await FunctionTool.from_function(where).acall(x=1) == 1
    assert seen and seen[0] != threading.current_thread().name
    assert await FunctionTool.from_function(async_tool).acall(text="hi") == "HI"


async def test_tool_pickles_and_still_validates() -> None:
    tool = FunctionTool.from_function(google_style)
    for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)):
        copy = loads(dumps(tool))
        assert copy.metadata == tool.metadata
        assert await copy.acall(city="Oslo") == "Oslo:1:C"

    def local(n: int) -> int:
        """Double."""
        return 2 * n

    local_copy = cloudpickle.loads(cloudpickle.dumps(FunctionTool.from_function(local)))
    assert await local_copy.acall(n=4) == 8


def test_positional_only_parameters_are_refused() -> None:
    def bad(x: int, /) -> int:
        return x

    with pytest.raises(TypeError, match="positional-only"):
        FunctionTool.from_function(bad)


def test_is_async_follows_the_function_and_bind_passes_validated_arguments() -> None:
    tool = FunctionTool.from_function(google_style)
    assert tool.is_async is False
    assert tool.is_async is False  # (known now)
    assert tool.bind(city="Oslo", days="3")() == "Oslo:3:C"  # "3" validated into 3
    with pytest.raises(ValidationError):
        tool.bind(city="Oslo", hours=3)

    async def forecast(city: str) -> str:
        """Async forecast."""
        return city

    tool.func = forecast
    assert tool.is_async is True
