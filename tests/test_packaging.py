"""Every package folder is listed in pyproject.toml, so a regular install ships it."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
ROOTS = {
    "flink_agents": "flink_agents",
    "runtime": "flink_agents.runtime",
    "integrations": "flink_agents.integrations",
}


def _package_names() -> set[str]:
    found: set[str] = set()
    for folder, prefix in ROOTS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([prefix, *rel.parts]) if rel.parts else prefix)
    return found


def test_every_package_is_listed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    missing = _package_names() - listed
    assert not missing, f"add to [tool.setuptools] packages: {sorted(missing)}"
