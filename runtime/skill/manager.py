"""`SkillManager`: the skills of one agent, read from its `Skills` resources on first use.

The sources of every `Skills` resource of the agent are merged in order (the same source
twice is read once); a skill name found again replaces the earlier skill, with a warning.
The manager travels with the agent (pickled without what it read) and reads its sources
again in each process that uses it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from flink_agents.api.skills import SkillSourceSpec
from flink_agents.runtime.skill.skill import AgentSkill
from flink_agents.runtime.skill.sources import SkillFolders

__all__ = ["SkillManager"]

_LOG = logging.getLogger(__name__)


class SkillManager:
    """The agent's skills by name, read on first use (`SkillLoadError` when a source
    cannot be read)."""

    def __init__(self, sources: Iterable[SkillSourceSpec]) -> None:
        self.sources: tuple[SkillSourceSpec, ...] = tuple(dict.fromkeys(sources))
        """Where the skills come from, in order, each once."""
        self._lock = threading.Lock()
        self._skills: dict[str, AgentSkill] | None = None
        self._folders: SkillFolders | None = None

    def skills(self) -> dict[str, AgentSkill]:
        """Every skill, by name (read from the sources the first time)."""
        skills = self._skills
        if skills is not None:
            return skills
        with self._lock:
            if self._skills is None:
                folders = SkillFolders()
                try:
                    self._skills = self._read(folders)
                except BaseException:
                    folders.close()
                    raise
                self._folders = folders
            return self._skills

    def _read(self, folders: SkillFolders) -> dict[str, AgentSkill]:
        skills: dict[str, AgentSkill] = {}
        for spec in self.sources:
            for skill in folders.open(spec):
                earlier = skills.get(skill.name)
                if earlier is not None:
                    _LOG.warning(
                        "skill %r of %s replaces the one of %s",
                        skill.name,
                        skill.directory,
                        earlier.directory,
                    )
                skills[skill.name] = skill
        return skills

    def get(self, name: str) -> AgentSkill:
        """The skill ``name``; `ValueError` naming the known ones when there is none."""
        skills = self.skills()
        skill = skills.get(name)
        if skill is None:
            raise ValueError(f"no skill named {name!r} (skills: {sorted(skills)})")
        return skill

    def discovery_prompt(self, names: Sequence[str]) -> str:
        """The system message listing the skills ``names`` (each with its description)
        and how to load one; `ValueError` for a name not found."""
        listed = "".join(
            f"\n<skill>\n<name>{s.name}</name>\n<description>{s.description}</description>\n</skill>\n"
            for s in (self.get(name) for name in names)
        )
        return (
            "## Skills\n\n"
            "Skills are instructions (and files) for particular tasks. When one fits the "
            'task, call `load_skill(name="<name>")` first and follow what it says; a file '
            'of a skill is read with `load_skill(name="<name>", path="<relative path>")`. '
            "A loaded skill names the folder its files are in.\n\n"
            f"<available_skills>{listed}</available_skills>\n"
        )

    def skill_dirs(self, names: Sequence[str]) -> list[Path]:
        """The folders of the skills ``names`` (of every skill when empty)."""
        if not names:
            return [s.directory for s in self.skills().values()]
        return [self.get(name).directory for name in names]

    def close(self) -> None:
        """Remove what reading the sources unpacked; a later use reads them again."""
        with self._lock:
            folders, self._folders, self._skills = self._folders, None, None
        if folders is not None:
            folders.close()

    def __getstate__(self) -> dict[str, Any]:
        return {"sources": self.sources}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["sources"])
