"""The Stainless-generated SDKs (``openai``, ``anthropic``): their async client's platform.

Both SDKs' generated base client (``<sdk>._base_client``) keeps the platform it reports in
its ``X-Stainless-OS`` header in the attribute ``_platform``, None until the first request
of an async client computes it in a worker thread (``asyncify(get_platform)``). Every
request that starts before that thread answered computes it again: a burst of 300 calls on
a new client makes 300 thread calls (anyio runs 40 at a time) and the calls go out together
when their threads answer, well after they were made; a provider's 429 then reaches the
adaptive limit only after the whole burst was sent (`tools/bench/rate_limits.py`).

- `preset_platform`: set ``_platform`` from the SDK's own ``get_platform()`` when the
  client is made (about 1 ms, once per process: Python caches what it reads). Checked on
  openai 3.63.0 and anthropic 2.17.0. Unlike the other reaches this one is an
  optimisation: where an SDK no longer has the attribute or the function, nothing is set
  and the SDK computes its platform as it does without us; `ASSUMPTIONS` (checked by
  ``tests/integrations/compat``) fails then, so the change is seen.
"""

from __future__ import annotations

import importlib
from typing import Any

from flink_agents._compat import Assumption

__all__ = ["ASSUMPTIONS", "preset_platform"]

CHECKED_ON = {"openai": "3.63.0", "anthropic": "2.17.0"}
_ASYNC_CLIENTS = {"openai": "AsyncOpenAI", "anthropic": "AsyncAnthropic"}


def _sdk_of(client: Any) -> str:
    return type(client).__module__.partition(".")[0]


def preset_platform(client: Any) -> None:
    """Give a new async client of a Stainless SDK its platform now, not in a thread at its
    first request (nothing for another client, or an SDK without the internals)."""
    sdk = _sdk_of(client)
    if sdk not in CHECKED_ON or getattr(client, "_platform", False) is not None:
        return
    get_platform = getattr(importlib.import_module(f"{sdk}._base_client"), "get_platform", None)
    if callable(get_platform):
        client._platform = get_platform()


def _has_platform_internals(sdk: str) -> bool:
    base = importlib.import_module(f"{sdk}._base_client")
    client_class = getattr(importlib.import_module(sdk), _ASYNC_CLIENTS[sdk])
    client = client_class(api_key="sk-check", base_url="http://127.0.0.1:9")
    return callable(getattr(base, "get_platform", None)) and client._platform is None


ASSUMPTIONS = tuple(
    Assumption(
        dependency=sdk,
        checked_on=version,
        text=(
            f"{sdk}'s async client keeps its platform in `_platform` (None until its first "
            f"request) and `{sdk}._base_client.get_platform()` computes it"
        ),
        holds=lambda sdk=sdk: _has_platform_internals(sdk),
    )
    for sdk, version in CHECKED_ON.items()
)
