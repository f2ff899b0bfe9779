"""A module planted on ``sys.path`` that leaves a marker file when it is imported: what a
tampered record names to make a worker run code of its choosing."""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from flink_agents.api._class_path import clear_allowed_stored_class_modules

__all__ = ["PlantedModule", "planted_module"]


@dataclass(frozen=True)
class PlantedModule:
    """A module not imported yet, with a model ``Payload``, an enum ``Colour``, an
    exception ``Boom`` and a class ``Outer.Inner``."""

    name: str
    """Its module name (unique per test)."""
    marker: Path
    """The file its import writes."""

    def path(self, qualname: str) -> str:
        """The class path of one of its classes."""
        return f"{self.name}:{qualname}"

    @property
    def imported(self) -> bool:
        """Whether the module ran: it is in ``sys.modules`` or left its marker."""
        return self.name in sys.modules or self.marker.exists()


@pytest.fixture
def planted_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PlantedModule]:
    """A `PlantedModule` on ``sys.path``; afterwards it is forgotten, and no module is
    allowed for stored classes any more."""
    name = f"planted_{uuid.uuid4().hex}"
    marker = tmp_path / f"{name}.imported"
    folder = tmp_path / "planted"
    folder.mkdir()
    (folder / f"{name}.py").write_text(
        textwrap.dedent(
            f"""
            from enum import Enum
            from pathlib import Path

            from pydantic import BaseModel

            Path({str(marker)!r}).write_text("imported")


            class Payload(BaseModel):
                text: str = ""


            class Colour(Enum):
                RED = "red"


            class Boom(Exception):
                pass


            class Outer:
                class Inner(BaseModel):
                    n: int = 0
            """
        )
    )
    monkeypatch.syspath_prepend(str(folder))
    yield PlantedModule(name=name, marker=marker)
    sys.modules.pop(name, None)
    clear_allowed_stored_class_modules()
