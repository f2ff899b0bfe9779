"""`JavaResourceWrapper`: upstream's wrappers of Java resources, which cannot work here.

Upstream's ``JavaChatModelConnection``, ``JavaEmbeddingModelSetup``, ``JavaVectorStore``...
hand a resource to its Java runtime. There is none here: the classes exist at upstream's
paths (an agent that names them imports), but an agent that declares one fails when its
plan is built (`ResourceDescriptor.resolve_class` raises `ResourceUnavailableError` naming
the class, what to use instead and docs/migrating-from-flink-agents.md), and making one
raises the same error.
"""

from __future__ import annotations

from typing import Any

from flink_agents.api._resource_names import CLASS_NAMES, Missing
from flink_agents.api.errors import ResourceUnavailableError

__all__ = ["JavaResourceWrapper", "java_wrapper_refusal"]

_DOC = "docs/migrating-from-flink-agents.md"

_NO_JAVA = Missing(
    "upstream's wrapper of a Java resource (there is no Java runtime here)",
    "use a Python resource (see ResourceName)",
)


def java_wrapper_refusal(cls: type) -> ResourceUnavailableError:
    """The error that refuses Java wrapper class ``cls``."""
    path = f"{cls.__module__}.{cls.__qualname__}"
    entry = CLASS_NAMES.get(path, _NO_JAVA)
    if not isinstance(entry, Missing):
        entry = _NO_JAVA
    return ResourceUnavailableError(f"{entry.what} ({path})", f"{entry.alternative}; see {_DOC}")


class JavaResourceWrapper:
    """Base of upstream's Java wrapper classes: none can be made here."""

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise java_wrapper_refusal(cls)
