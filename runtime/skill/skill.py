"""One skill: what its ``SKILL.md`` says (`parse_skill_md`) and the folder it lives in."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from flink_agents.runtime.errors import SkillLoadError

__all__ = ["SKILL_FILE", "AgentSkill", "parse_skill_md"]

SKILL_FILE = "SKILL.md"
"""The file that makes a folder a skill."""

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)(.*)\Z", re.DOTALL)
_MAX_RESOURCE_BYTES = 1 << 20
"""A file of a skill larger than this is not given to the model (its path is)."""


@dataclass(frozen=True)
class AgentSkill:
    """A skill: its front matter, its instructions and its folder on disk."""

    name: str
    """The skill's name (front matter ``name``)."""
    description: str
    """When to use it (front matter ``description``): what the model sees before loading it."""
    content: str
    """The instructions: ``SKILL.md`` after its front matter."""
    directory: Path
    """The folder the skill's files are in (absolute)."""
    license: str | None = None
    compatibility: str | None = None

    def resource_paths(self) -> list[str]:
        """The skill's files other than ``SKILL.md``, relative to its folder, sorted."""
        return sorted(
            p.relative_to(self.directory).as_posix()
            for p in self.directory.rglob("*")
            if p.is_file() and p.name != SKILL_FILE and "__pycache__" not in p.parts
        )

    def resource(self, path: str) -> str | None:
        """The text of the skill's file ``path`` (relative to its folder); None when
        there is no such file inside the folder, or it is not UTF-8 text or too large."""
        root = self.directory.resolve()
        target = (root / path).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            return None
        if target.stat().st_size > _MAX_RESOURCE_BYTES:
            return None
        try:
            return target.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            return None


def parse_skill_md(text: str, directory: Path) -> AgentSkill:
    """The skill whose ``SKILL.md`` is ``text``, in ``directory``; `SkillLoadError` when
    the front matter is missing, is not YAML, or lacks ``name`` or ``description``, or
    no instructions follow it."""
    where = directory / SKILL_FILE
    found = _FRONT_MATTER.match(text)
    if found is None:
        raise SkillLoadError(f"{where}: no YAML front matter (--- name: ... description: ... ---)")
    try:
        meta: Any = yaml.safe_load(found.group(1)) or {}
    except yaml.YAMLError as exc:
        raise SkillLoadError(f"{where}: the front matter is not YAML: {exc}") from exc
    if not isinstance(meta, dict):
        raise SkillLoadError(f"{where}: the front matter is not a mapping")
    fields: dict[str, Any] = {str(k): v for k, v in meta.items()}
    for required in ("name", "description"):
        value = fields.get(required)
        if not isinstance(value, str) or not value.strip():
            raise SkillLoadError(f"{where}: the front matter has no {required!r}")
    content = found.group(2)
    if not content.strip():
        raise SkillLoadError(f"{where}: no instructions after the front matter")

    def optional(key: str) -> str | None:
        value = fields.get(key)
        return None if value is None else str(value)

    return AgentSkill(
        name=str(fields["name"]).strip(),
        description=str(fields["description"]).strip(),
        content=content,
        directory=directory.resolve(),
        license=optional("license"),
        compatibility=optional("compatibility"),
    )
