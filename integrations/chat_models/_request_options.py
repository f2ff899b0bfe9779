"""The first step of every adapter's ``build_request``: the options a call set.

Each adapter's ``build_request(messages, tools, **params)`` starts the same way: the
parameters whose value is ``None`` are left out (an unset setting), the ``model`` must
name a model, and ``stream`` is refused (every adapter reads whole responses). What
follows, the mapping of the other options to the wire, is the adapter's own; an adapter
that sends the options it does not read as they are, and refuses one that would replace a
field it set, ends with `pass_through`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["STREAM_REFUSED", "pass_through", "request_options"]

STREAM_REFUSED = (
    "streaming is not supported by this connection (the adapter reads whole responses); "
    "do not pass stream"
)
"""The ``ValueError`` message for ``stream=True``."""


def request_options(params: Mapping[str, Any], *, model_error: str) -> tuple[str, dict[str, Any]]:
    """The model name and the other parameters that are not ``None`` (a new dict, for the
    adapter to pop what it reads).

    Raises ``ValueError``: ``model_error`` when ``model`` is not a non-empty string,
    `STREAM_REFUSED` for a true ``stream`` (a false one is dropped).
    """
    options = {key: value for key, value in params.items() if value is not None}
    model = options.pop("model", None)
    if not isinstance(model, str) or not model:
        raise ValueError(model_error)
    if options.pop("stream", False):
        raise ValueError(STREAM_REFUSED)
    return model, options


def pass_through(fields: dict[str, Any], options: Mapping[str, Any]) -> None:
    """Set each of ``options`` (those the adapter did not read) in ``fields`` as it is.

    Raises ``ValueError`` for an option that would replace a field the adapter set.
    """
    for key, value in options.items():
        if key in fields:
            raise ValueError(f"parameter {key!r} conflicts with a field the adapter sets")
        fields[key] = value
