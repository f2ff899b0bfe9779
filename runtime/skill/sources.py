"""Reading skill sources: a `SkillSourceSpec` of scheme ``local`` (a folder or ``.zip``),
``package`` (a folder or ``.zip`` inside an installed package) or ``url`` (a ``.zip`` at an
http(s) URL) becomes the skills of its folder (`SkillFolders.open`).

A zip is unpacked into a private temporary folder (``0700``) that lives until
`SkillFolders.close`; a member outside the archive's folder (an absolute path, ``..``)
or a symbolic link refuses the archive, and so does one past `MAX_ZIP_BYTES` unpacked.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import shutil
import stat
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath

from flink_agents.api.skills import SkillSourceSpec
from flink_agents.runtime.errors import SkillLoadError
from flink_agents.runtime.skill.skill import SKILL_FILE, AgentSkill, parse_skill_md

__all__ = ["MAX_ZIP_BYTES", "SCHEMES", "URL_TIMEOUT_S", "SkillFolders", "skills_in"]

MAX_ZIP_BYTES = 256 << 20
"""The most a skills zip may hold unpacked (and the most a URL's answer may be)."""
URL_TIMEOUT_S = 30.0
"""Seconds a skills URL may take to answer (each read)."""


def skills_in(base: Path) -> list[AgentSkill]:
    """The skills of ``base``: each sub-folder with a ``SKILL.md``, by name of folder."""
    if not base.is_dir():
        raise SkillLoadError(f"skills folder {base} does not exist or is not a folder")
    found = []
    for child in sorted(base.iterdir()):
        skill_md = child / SKILL_FILE
        if child.is_dir() and skill_md.is_file():
            found.append(parse_skill_md(skill_md.read_text(encoding="utf-8"), child))
    return found


class SkillFolders:
    """Opens skill sources and owns what that unpacked: `close` removes it."""

    def __init__(self) -> None:
        self._temp: list[Path] = []
        self._files = contextlib.ExitStack()

    def open(self, spec: SkillSourceSpec) -> list[AgentSkill]:
        """The skills of one source; `SkillLoadError` when it cannot be read."""
        opener = SCHEMES.get(spec.scheme)
        if opener is None:
            raise SkillLoadError(
                f"skill source scheme {spec.scheme!r} is not known here (known: {sorted(SCHEMES)})"
            )
        return opener(self, spec.params)

    def close(self) -> None:
        """Remove every folder unpacked so far (again: nothing)."""
        temp, self._temp = self._temp, []
        for folder in temp:
            shutil.rmtree(folder, ignore_errors=True)
        self._files.close()

    def _local(self, params: Mapping[str, str]) -> list[AgentSkill]:
        path = Path(_param(params, "local", "path")).expanduser()
        return self._folder_or_zip(path, f"local skills path {path}")

    def _package(self, params: Mapping[str, str]) -> list[AgentSkill]:
        package = _param(params, "package", "package")
        resource = _param(params, "package", "resource")
        what = f"skills resource {resource!r} of package {package!r}"
        try:
            traversable = importlib.resources.files(package).joinpath(resource)
        except (ModuleNotFoundError, TypeError) as exc:
            raise SkillLoadError(f"{what}: the package cannot be imported: {exc}") from exc
        if not (traversable.is_dir() or traversable.is_file()):
            raise SkillLoadError(f"{what} does not exist")
        path = self._files.enter_context(importlib.resources.as_file(traversable))
        return self._folder_or_zip(Path(path), what)

    def _url(self, params: Mapping[str, str]) -> list[AgentSkill]:
        url = _param(params, "url", "url")
        if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise SkillLoadError(f"skills URL {url!r} is not http(s)")
        folder = self._new_temp()
        archive = folder / "skills.zip"
        try:
            with (
                urllib.request.urlopen(url, timeout=URL_TIMEOUT_S) as answer,
                archive.open("wb") as out,
            ):
                copied = 0
                while chunk := answer.read(1 << 16):
                    copied += len(chunk)
                    if copied > MAX_ZIP_BYTES:
                        raise SkillLoadError(f"skills URL {url!r}: more than {MAX_ZIP_BYTES} bytes")
                    out.write(chunk)
        except (urllib.error.URLError, OSError) as exc:
            raise SkillLoadError(f"skills URL {url!r} cannot be read: {exc}") from exc
        return self._unzip(archive, f"skills URL {url!r}")

    def _folder_or_zip(self, path: Path, what: str) -> list[AgentSkill]:
        if path.is_dir():
            return skills_in(path)
        if path.is_file():
            return self._unzip(path, what)
        raise SkillLoadError(f"{what} does not exist")

    def _unzip(self, archive: Path, what: str) -> list[AgentSkill]:
        target = self._new_temp()
        try:
            with zipfile.ZipFile(archive) as zipped:
                _check_members(zipped, what)
                zipped.extractall(target)
        except zipfile.BadZipFile as exc:
            raise SkillLoadError(f"{what} is not a zip file: {exc}") from exc
        return skills_in(target)

    def _new_temp(self) -> Path:
        folder = Path(tempfile.mkdtemp(prefix="flink-agents-skills-"))
        self._temp.append(folder)
        return folder


SCHEMES: dict[str, Callable[[SkillFolders, Mapping[str, str]], list[AgentSkill]]] = {
    "local": SkillFolders._local,  # pyright: ignore[reportPrivateUsage]
    "package": SkillFolders._package,  # pyright: ignore[reportPrivateUsage]
    "url": SkillFolders._url,  # pyright: ignore[reportPrivateUsage]
}
"""The skill source schemes known here, each with how it is opened."""


def _param(params: Mapping[str, str], scheme: str, key: str) -> str:
    value = params.get(key)
    if not value:
        raise SkillLoadError(f"skill source {scheme!r} needs the parameter {key!r} (got {params})")
    return value


def _check_members(zipped: zipfile.ZipFile, what: str) -> None:
    total = 0
    for info in zipped.infolist():
        name = PurePosixPath(info.filename)
        if name.is_absolute() or ".." in name.parts or ":" in info.filename:
            raise SkillLoadError(f"{what}: member {info.filename!r} is outside the archive")
        if stat.S_ISLNK(info.external_attr >> 16):
            raise SkillLoadError(f"{what}: member {info.filename!r} is a symbolic link")
        total += info.file_size
        if total > MAX_ZIP_BYTES:
            raise SkillLoadError(f"{what}: more than {MAX_ZIP_BYTES} bytes unpacked")
