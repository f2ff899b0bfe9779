"""The API and the plan are the ground floor: nothing in them imports the runtime or the
integrations (which build on them).

Loading a runtime by name when a user asks for it (`AgentsExecutionEnvironment`'s
factory, a `ResourceDescriptor`'s class path) is not an import of this module and is
allowed; an import statement anywhere (module level, a function, ``TYPE_CHECKING``) is not.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GROUND_FLOOR = ("flink_agents/api", "flink_agents/plan")
UPPER_FLOORS = ("flink_agents.runtime", "flink_agents.integrations")


def _is_upper(module: str) -> bool:
    return any(module == upper or module.startswith(upper + ".") for upper in UPPER_FLOORS)


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every absolute import, by line; ``from a import b`` also as
    ``a.b`` (``b`` may be a module: ``from flink_agents import runtime``)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
    return sorted(found)


def upper_floor_imports(root: Path, folder: str) -> list[str]:
    """``path:line module`` of every import of the runtime or the integrations in the
    modules under ``root / folder`` (paths relative to ``root``)."""
    hits: list[str] = []
    for path in sorted((root / folder).rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        seen: set[int] = set()
        for line, module in _imported_modules(tree):
            if _is_upper(module) and line not in seen:  # one hit per statement
                seen.add(line)
                hits.append(f"{path.relative_to(root)}:{line} {module}")
    return hits


def test_no_import_statement_reaches_up() -> None:
    hits = [hit for floor in GROUND_FLOOR for hit in upper_floor_imports(ROOT, floor)]
    assert hits == []


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
    )
    assert upper_floor_imports(tmp_path, "api") == [
        "api/mod.py:4 flink_agents.runtime.metrics",
        "api/mod.py:6 flink_agents.integrations.chat_models",
        "api/mod.py:7 flink_agents.runtime",
    ]


def test_importing_every_api_and_plan_module_loads_no_runtime() -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        "import flink_agents.api, flink_agents.plan\n"
        "for package in (flink_agents.api, flink_agents.plan):\n"
        "    for info in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "        importlib.import_module(info.name)\n"
        f"upper = sorted(m for m in sys.modules if m.startswith({UPPER_FLOORS!r}))\n"
        "assert not upper, upper\n"
        "print(len([m for m in sys.modules if m.startswith('flink_agents.')]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 20  # the walk imported the modules
