"""Reading the SDKs' typed response objects, whatever the server put in them.

The ``anthropic`` and ``openai`` SDKs build their response models without validating
them: a field holds what the server sent (a string where a list was declared, say), a
field the server left out is ``None``, a field the SDK does not declare (a vendor
extra such as vLLM's ``reasoning_content``) is an attribute all the same, and an item
of a type the SDK does not know is built as some other variant with its own ``type``.
So the adapters read fields with `field` (declared or extra, ``None`` when absent),
dispatch on the ``type`` string, never on the class, and keep what they do not
convert as the JSON it came as (`as_json`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

__all__ = ["as_json", "field", "is_object", "str_field"]


def is_object(value: object) -> bool:
    """True for a JSON object as the SDK hands it over: a model, or a plain dict."""
    return isinstance(value, (BaseModel, Mapping))


def field(value: object, name: str) -> Any:
    """``value.name`` for an SDK model (declared field or extra), ``value[name]`` for a
    dict; ``None`` when absent or when ``value`` is not an object."""
    if isinstance(value, Mapping):
        return value.get(name)
    if isinstance(value, BaseModel):
        return getattr(value, name, None)
    return None


def str_field(value: object, name: str) -> str | None:
    """`field` when it is a string, else ``None`` (an id, a model name)."""
    text = field(value, name)
    return text if isinstance(text, str) else None


def as_json(value: object) -> Any:
    """A value as the JSON it came as: SDK models (at any depth) become the dicts of the
    fields the server sent, by their wire names; anything else is returned as it is."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False)
    if isinstance(value, Mapping):
        return {key: as_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_json(item) for item in value]
    return value
