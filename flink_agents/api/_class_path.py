"""Name a class by its path, and find the class a path names.

A class path is ``module:qualname`` (the colon keeps nested classes unambiguous:
``pkg.mod:Outer.Inner``). Where users write one by hand (a `ResourceDescriptor`), the
dotted ``module.Name`` of a module-level class is read too, and imported (`import_class`).

A path read from stored data (agent state, a savepoint, the durable call log) is found
with `find_stored_class`, which imports nothing of its own accord: the class must be in a
module this process has imported already (a worker imports the agent's modules, its
actions' and tools', before it reads state), or in a module the operator allowed with
`stored-classes.allowed-modules` (`allow_stored_class_modules`, called when a runner
starts). Anything else raises `StoredClassRefusedError`, so a tampered record cannot make a
worker import, and run, a module of its choosing.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Iterable

from flink_agents.api.errors import StoredClassRefusedError

__all__ = [
    "allow_stored_class_modules",
    "allowed_stored_class_modules",
    "class_path",
    "clear_allowed_stored_class_modules",
    "find_class",
    "find_stored_class",
    "import_class",
]


def class_path(cls: type) -> str:
    """``module:qualname`` of ``cls``."""
    return f"{cls.__module__}:{cls.__qualname__}"


def _split(path: str) -> tuple[str, str]:
    """(module, qualname) of ``path``; `ValueError` when it cannot name an importable class."""
    if ":" in path:
        module_name, _, qualname = path.partition(":")
    else:
        module_name, _, qualname = path.rpartition(".")
    if not module_name or not qualname:
        raise ValueError(f"{path!r} is not a class path (write module:QualName or module.Name)")
    if "<" in qualname or "[" in qualname:
        raise ValueError(
            f"class {path!r} cannot be imported by name (define it at module level, "
            "not in a function or as a generic alias)"
        )
    return module_name, qualname


def import_class(path: str) -> type:
    """The class ``path`` names (``module:qualname``, or dotted ``module.Name``), imported.

    For paths the user wrote (a `ResourceDescriptor`); paths read from stored data go
    through `find_stored_class`. Raises `ValueError` when ``path`` cannot name an
    importable class (no module part; a class defined in a function, ``<locals>``; a
    generic alias, ``Model[int]``), `ImportError` when the module cannot be imported,
    `AttributeError` when it has no such name, and `TypeError` when the name is not a class.
    """
    module_name, qualname = _split(path)
    target: object = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    if not isinstance(target, type):
        raise TypeError(f"{path!r} is not a class")
    return target


def find_class(path: str) -> type | None:
    """`import_class`, or ``None`` when ``path`` names no class that can be imported."""
    try:
        return import_class(path)
    except (ValueError, ImportError, AttributeError, TypeError):
        return None


# ------------------------------------------------------------------ paths from stored data

_allowed: tuple[str, ...] = ()
_allowed_lock = threading.Lock()


def allow_stored_class_modules(prefixes: Iterable[str]) -> None:
    """Let `find_stored_class` import the modules named by ``prefixes`` (``myapp`` allows
    ``myapp`` and ``myapp.models``, not ``myapp2``), in this process, from now on.

    Adds to what was allowed before: one worker interpreter may run several jobs."""
    global _allowed
    given = {prefix.strip().strip(".") for prefix in prefixes if prefix and prefix.strip()}
    with _allowed_lock:
        _allowed = tuple(sorted(set(_allowed) | given))


def allowed_stored_class_modules() -> tuple[str, ...]:
    """The module prefixes `find_stored_class` may import, sorted."""
    return _allowed


def clear_allowed_stored_class_modules() -> None:
    """Allow no module again (for tests)."""
    global _allowed
    with _allowed_lock:
        _allowed = ()


def _module_allowed(module_name: str) -> bool:
    return any(module_name == p or module_name.startswith(p + ".") for p in _allowed)


def find_stored_class(path: str) -> type | None:
    """The class a path read from stored data names (``module:qualname``), or ``None``
    when there is no such class.

    Its module is looked up among the modules this process has imported; one that is not
    is imported only when `stored-classes.allowed-modules` allows it (see the module doc),
    else `StoredClassRefusedError` is raised and nothing is imported. Names are looked up
    in the module's and classes' own namespaces, so a module's ``__getattr__`` (a lazy
    import) is not run either.
    """
    try:
        module_name, qualname = _split(path)
    except ValueError:
        return None
    module = sys.modules.get(module_name)
    if module is None:
        if not _module_allowed(module_name):
            raise StoredClassRefusedError(path, module_name)
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            return None
    target: object = module
    for part in qualname.split("."):
        try:
            namespace = vars(target)
        except TypeError:
            return None
        if part not in namespace:
            return None
        target = namespace[part]
    return target if isinstance(target, type) else None
