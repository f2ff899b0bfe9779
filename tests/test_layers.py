"""The layers and what each may import.

- The API and the plan are the ground floor: nothing in them (nor anywhere else in the
  ``flink_agents/`` folder: its root modules, ``flink_agents/_compat`` with the dependency
  reaches both use, the examples) imports the runtime or the
  integrations (which build on them).
- The runtime and the integrations stand side by side on it: neither imports the other (the
  runtime reaches a provider only through the API's ``BaseChatModelConnection``, resolved
  from a descriptor's class path).
- Within the runtime, only ``runtime/flink/`` knows of Flink: nothing else in the runtime
  imports it (the local runner and the scheduler run without PyFlink).
- ``runtime/flink/`` is the only part that imports PyFlink, by statement or through
  ``importlib.import_module("pyflink...")`` / ``__import__``, except the places
  `KNOWN_PYFLINK_IMPORTERS` lists (the API's ``RowTypeInfo`` output schemas build PyFlink
  rows; a test keeps that list exact, so it only shrinks).

Loading a class by name when a user asks for it (`AgentsExecutionEnvironment`'s
factory, a `ResourceDescriptor`'s class path) is not an import of this module and is
allowed; an import statement anywhere (module level, a function, ``TYPE_CHECKING``) or an
``import_module`` call with a literal module name is not.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GROUND_FLOOR = ("flink_agents",)
"""The folder of the API, the plan, the package root and the examples."""
UPPER_FLOORS = ("flink_agents.runtime", "flink_agents.integrations")
RUNTIME = ("flink_agents.runtime",)
FLINK_RUNTIME_MODULES = ("flink_agents.runtime.flink",)
INTEGRATIONS = ("flink_agents.integrations",)
PYFLINK = ("pyflink",)
PYFLINK_FOLDERS = ("flink_agents", "runtime", "integrations")
FLINK_RUNTIME = "runtime/flink/"

KNOWN_PYFLINK_IMPORTERS = {
    "flink_agents/api/_values.py": "a Row in a tagged value is decoded as a PyFlink Row",
    "flink_agents/api/agents/types.py": "RowTypeInfo output schemas: the type and its rows",
}
"""Modules outside ``runtime/flink/`` that import PyFlink today (inside functions, only
when a value or a schema is PyFlink's): the API's upstream-compatible ``RowTypeInfo``
output schemas. Moving that into ``runtime/flink/`` empties this list."""


def _reaches(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def _dynamic_import(node: ast.Call) -> str | None:
    """The literal module name of ``importlib.import_module("x")``, ``import_module("x")``
    or ``__import__("x")``; None for any other call."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in ("import_module", "__import__") or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every absolute import, by line; ``from a import b`` also as
    ``a.b`` (``b`` may be a module: ``from flink_agents import runtime``); an import
    function called with a literal name as that module."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.Call) and (module := _dynamic_import(node)) is not None:
            found.append((node.lineno, module))
    return sorted(found)


def imports_reaching(root: Path, folder: str, prefixes: tuple[str, ...]) -> list[str]:
    """``path:line module`` of every import of a module under ``prefixes`` in the modules
    under ``root / folder`` (paths relative to ``root``), one per statement."""
    hits: list[str] = []
    for path in sorted((root / folder).rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        seen: set[int] = set()
        for line, module in _imported_modules(tree):
            if _reaches(module, prefixes) and line not in seen:
                seen.add(line)
                hits.append(f"{path.relative_to(root).as_posix()}:{line} {module}")
    return hits


def upper_floor_imports(root: Path, folder: str) -> list[str]:
    """``path:line module`` of every import of the runtime or the integrations in the
    modules under ``root / folder`` (paths relative to ``root``)."""
    return imports_reaching(root, folder, UPPER_FLOORS)


def pyflink_importers(root: Path) -> set[str]:
    """The modules outside ``runtime/flink/`` that import PyFlink."""
    return {
        hit.split(":", 1)[0]
        for folder in PYFLINK_FOLDERS
        for hit in imports_reaching(root, folder, PYFLINK)
        if not hit.startswith(FLINK_RUNTIME)
    }


def test_no_import_statement_reaches_up() -> None:
    hits = [hit for floor in GROUND_FLOOR for hit in upper_floor_imports(ROOT, floor)]
    assert hits == []


def test_the_runtime_and_the_integrations_do_not_import_each_other() -> None:
    assert imports_reaching(ROOT, "integrations", RUNTIME) == []
    assert imports_reaching(ROOT, "runtime", INTEGRATIONS) == []


UPSTREAM_FLINK_PATHS = ("runtime/remote_execution_environment.py",)
"""Upstream's module paths for the Flink environment: they stand where upstream has them
(outside `runtime/flink/`) and re-export what `runtime/flink/` defines. The list is checked
to be exact."""


def test_only_the_flink_runtime_imports_the_flink_runtime() -> None:
    hits = imports_reaching(ROOT, "runtime", FLINK_RUNTIME_MODULES)
    outside = {hit.split(":", 1)[0] for hit in hits if not hit.startswith(FLINK_RUNTIME)}
    assert outside == set(UPSTREAM_FLINK_PATHS)


def _is_re_export(statement: ast.stmt) -> bool:
    """An import, ``from __future__``, ``__all__ = ...`` or the module's docstring."""
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(statement, ast.Assign):
        return [getattr(target, "id", None) for target in statement.targets] == ["__all__"]
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)


def test_upstreams_flink_paths_only_re_export_the_flink_runtime() -> None:
    for path in UPSTREAM_FLINK_PATHS:
        tree = ast.parse((ROOT / path).read_text(), filename=path)
        defined = [ast.unparse(s).split("\n", 1)[0] for s in tree.body if not _is_re_export(s)]
        assert defined == [], f"{path} defines code: it belongs in {FLINK_RUNTIME}"


def test_the_check_covers_every_folder_of_product_code() -> None:
    checked = {"flink_agents", "runtime", "integrations"}
    assert set(PYFLINK_FOLDERS) == checked
    assert {floor.split("/")[0] for floor in GROUND_FLOOR} | {"runtime", "integrations"} == checked
    packages = {path.parent.name for path in ROOT.glob("*/__init__.py")}
    assert packages - {"tests", "e2e_tests", "tools", "examples"} == checked


def test_only_the_flink_runtime_imports_pyflink() -> None:
    assert pyflink_importers(ROOT) == set(KNOWN_PYFLINK_IMPORTERS), (
        "PyFlink is imported by runtime/flink/ only (an importer that is gone leaves "
        "KNOWN_PYFLINK_IMPORTERS too)"
    )


def test_the_check_sees_every_kind_of_import(tmp_path: Path) -> None:
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "mod.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import flink_agents.api\n"
        "if TYPE_CHECKING:\n"
        "    from flink_agents.runtime.metrics import InMemoryMetricGroup\n"
        "def f():\n"
        "    import flink_agents.integrations.chat_models\n"
        "from flink_agents import runtime\n"
        "import importlib\n"
        "def g(name):\n"
        "    importlib.import_module('flink_agents.runtime.local_runner')\n"
        "    __import__('flink_agents.integrations')\n"
        "    importlib.import_module(name)\n"  # a name the user gives: not an import here
        "    importlib.import_module('flink_agents.runtime_extras')\n"
    )
    assert upper_floor_imports(tmp_path, "api") == [
        "api/mod.py:4 flink_agents.runtime.metrics",
        "api/mod.py:6 flink_agents.integrations.chat_models",
        "api/mod.py:7 flink_agents.runtime",
        "api/mod.py:10 flink_agents.runtime.local_runner",
        "api/mod.py:11 flink_agents.integrations",
    ]


def test_the_pyflink_check_sees_dynamic_imports_outside_runtime_flink(tmp_path: Path) -> None:
    for folder in ("flink_agents/api", "runtime/flink", "integrations"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "flink_agents/api/a.py").write_text(
        "import importlib\ndef f():\n    return importlib.import_module('pyflink.common')\n"
    )
    (tmp_path / "runtime/flink/b.py").write_text("from pyflink.datastream import DataStream\n")
    (tmp_path / "runtime/c.py").write_text("def f():\n    from pyflink.common import Row\n")
    (tmp_path / "integrations/d.py").write_text("import pyflinkish\n")
    assert pyflink_importers(tmp_path) == {"flink_agents/api/a.py", "runtime/c.py"}


def _modules_loaded(packages: list[str], skip: tuple[str, ...] = ()) -> list[str]:
    """Imports every module of ``packages`` (not those under ``skip``) in a fresh
    interpreter; the names of the loaded modules."""
    code = (
        "import importlib, pkgutil, sys\n"
        "def walk(name):\n"  # pkgutil.walk_packages would import the skipped packages
        f"    if name in {skip!r}:\n"
        "        return\n"
        "    module = importlib.import_module(name)\n"
        "    for info in pkgutil.iter_modules(getattr(module, '__path__', [])):\n"
        "        walk(f'{name}.{info.name}')\n"
        f"for name in {packages!r}:\n"
        "    walk(name)\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_importing_every_api_and_plan_module_loads_no_runtime() -> None:
    loaded = _modules_loaded(["flink_agents.api", "flink_agents.plan"])
    assert [m for m in loaded if _reaches(m, (*UPPER_FLOORS, *PYFLINK))] == []
    assert len([m for m in loaded if m.startswith("flink_agents.")]) > 20  # the walk ran


def test_importing_the_integrations_and_the_runtime_outside_flink_loads_no_pyflink() -> None:
    loaded = _modules_loaded(
        ["flink_agents.integrations", "flink_agents.runtime"],
        # upstream's module path for the Flink environment (it is that environment)
        skip=("flink_agents.runtime.flink", "flink_agents.runtime.remote_execution_environment"),
    )
    assert [m for m in loaded if _reaches(m, (*PYFLINK, "flink_agents.runtime.flink"))] == []
    assert "flink_agents.runtime.local_runner" in loaded
    assert "flink_agents.integrations.chat_models.anthropic.anthropic_chat_model" in loaded


def test_the_api_declares_request_limits_and_the_runtime_keeps_them() -> None:
    """The API's rate-limit module is what a connection declares (its options and the
    gate its calls go through) and what it says of an answer (a used-up limit, heard by
    whatever the gate binds); the limiter itself is the runtime's."""
    from flink_agents.api.chat_models import rate_limit

    assert sorted(rate_limit.__all__) == [
        "RequestGate",
        "RequestLimitOptions",
        "bind_used_up_limits",
        "release_used_up_limits",
        "report_used_up_limit",
    ]
    limiter = ROOT / "runtime" / "request_limiter.py"
    assert "class RequestLimiter" in limiter.read_text()
