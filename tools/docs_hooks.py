"""An mkdocs hook: the package laid out as Python imports it, for the API reference.

`runtime/` and `integrations/` are installed as `flink_agents.runtime` and
`flink_agents.integrations` (pyproject's `package-dir`), which griffe (mkdocstrings' reader,
which reads sources by folder) cannot follow. Before the build this writes
`build/reference-src/flink_agents/`: symbolic links to the entries of `flink_agents/`, and
to `runtime/` and `integrations/` under their package names. `mkdocs.yml` gives that folder
to mkdocstrings as its search path.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "build" / "reference-src"


def lay_out_package(target: Path = SOURCES) -> Path:
    """Write the linked package under ``target``; returns ``target``."""
    package = target / "flink_agents"
    if target.exists():
        shutil.rmtree(target)
    package.mkdir(parents=True)
    for entry in (ROOT / "flink_agents").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name in ("runtime", "integrations"):
        (package / name).symlink_to(ROOT / name, target_is_directory=True)
    return target


def on_startup(command: str, dirty: bool) -> None:
    # Before any plugin reads its configuration: mkdocstrings keeps only search paths that
    # exist when it starts.
    lay_out_package()


def on_config(config: Any) -> Any:
    # Again for each build of `mkdocs serve` (files added or removed since).
    lay_out_package()
    return config
