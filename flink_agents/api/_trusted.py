"""Pydantic instances from values already known to be valid, for the per-step hot paths.

Validation is skipped: callers pass every field, with values of the declared types. The
four instance slots pydantic keeps are written through their descriptors
(`flink_agents._compat.pydantic.slot_setters`: the reach, its versions and its check).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from flink_agents._compat.pydantic import slot_setters

__all__ = ["fill_trusted", "trusted_instance"]

M = TypeVar("M", bound=BaseModel)

_SET_DICT, _SET_FIELDS_SET, _SET_EXTRA, _SET_PRIVATE = slot_setters()


def fill_trusted(instance: BaseModel, fields: dict[str, Any], fields_set: set[str]) -> None:
    """Make ``instance`` (new, not initialized) hold ``fields`` as they are; ``fields_set``
    is what `model_fields_set` reports (what a validating call would have set). For models
    without extra fields or private attributes."""
    _SET_DICT(instance, fields)
    _SET_FIELDS_SET(instance, fields_set)
    _SET_EXTRA(instance, None)
    _SET_PRIVATE(instance, None)


def trusted_instance(cls: type[M], fields: dict[str, Any], fields_set: set[str]) -> M:
    """An instance of ``cls`` holding ``fields`` (see `fill_trusted`)."""
    instance = cls.__new__(cls)
    _SET_DICT(instance, fields)  # `fill_trusted`, inlined: it runs for every event
    _SET_FIELDS_SET(instance, fields_set)
    _SET_EXTRA(instance, None)
    _SET_PRIVATE(instance, None)
    return instance
