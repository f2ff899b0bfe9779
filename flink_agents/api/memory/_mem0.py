"""mem0, imported so that it never opens a connection of its own (the ``mem0`` extra).

mem0 reports usage to PostHog unless ``MEM0_TELEMETRY`` is false when it is imported.
`import_mem0` sets it before the import and, when mem0 was imported before with
telemetry on, switches its module flags and its PostHog client off. Both the mem0
long-term memory (runtime) and the mem0 vector store (integrations) import mem0 here.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["import_mem0"]


def import_mem0() -> ModuleType:
    """``mem0.memory.main``, imported with telemetry off.

    mem0 reads ``MEM0_TELEMETRY`` once, at import; when mem0 was imported before with it on,
    its module flags and its PostHog client are switched off here."""
    os.environ["MEM0_TELEMETRY"] = "False"
    try:
        main = importlib.import_module("mem0.memory.main")
    except ImportError as exc:
        raise ImportError(
            "long-term memory on mem0 needs the mem0ai package: pip install 'pyflink-agents[mem0]'"
        ) from exc
    telemetry = importlib.import_module("mem0.memory.telemetry")
    for module in (telemetry, main):
        setattr(module, "MEM0_TELEMETRY", False)  # noqa: B010 (a module's flag)
    for client_name in ("client_telemetry", "_oss_telemetry_instance"):
        client = getattr(telemetry, client_name, None)
        if client is not None and getattr(client, "posthog", None) is not None:
            client.posthog = None
    return main
