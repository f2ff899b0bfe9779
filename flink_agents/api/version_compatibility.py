"""The installed apache-flink's version, for code that differs per Flink line.

Upstream's module: ``flink_version_manager.version`` (``"2.2.0"``, None without
apache-flink), ``.major_version`` (``"2.2"``), ``.ge("2.0")`` and ``.lt("2.0")`` (False
without apache-flink). Versions compare by their first three numeric parts: a suffix
(``-SNAPSHOT``, ``.dev0``, ``.rc1``) is dropped and missing parts are 0, so ``2.2`` and
``2.2.0-SNAPSHOT`` are both ``2.2.0``. This project runs on apache-flink 1.20 and 2.0 to
2.3 (docs/deployment.md says what differs per line).
"""

from __future__ import annotations

import importlib.metadata

__all__ = ["FlinkVersionManager", "flink_version_manager"]

_PACKAGE = "apache-flink"


def _normalize_version(text: str) -> str:
    """``major.minor.patch`` of a version: its leading numeric parts (before a ``-``),
    at most three, missing ones 0."""
    parts: list[str] = []
    for part in text.split("-", 1)[0].split("."):
        if not part.isdigit():
            break
        parts.append(part)
    parts = [*parts, "0", "0", "0"][:3]
    return ".".join(parts)


def _key(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in _normalize_version(text).split("."))


class FlinkVersionManager:
    """The installed apache-flink's version, read once, when first asked for."""

    def __init__(self) -> None:
        self._version: str | None = None
        self._initialized = False

    @property
    def version(self) -> str | None:
        """The installed apache-flink's version (``"1.20.3"``), None when it is not
        installed."""
        if not self._initialized:
            try:
                self._version = importlib.metadata.version(_PACKAGE)
            except Exception:  # not installed, or its metadata unreadable: no version
                self._version = None
            self._initialized = True
        return self._version

    @property
    def major_version(self) -> str | None:
        """``major.minor`` of `version` (``"1.20"``), None without apache-flink."""
        version = self.version
        if not version:
            return None
        parts = version.split("-", 1)[0].split(".")
        return ".".join(parts[:2]) if len(parts) >= 2 else version

    def ge(self, target_version: str) -> bool:
        """Whether the installed version is ``target_version`` or later (False without
        apache-flink)."""
        version = self.version
        return _key(version) >= _key(target_version) if version else False

    def lt(self, target_version: str) -> bool:
        """Whether the installed version is before ``target_version`` (False without
        apache-flink)."""
        return bool(self.version) and not self.ge(target_version)


flink_version_manager = FlinkVersionManager()
"""The manager of the installed apache-flink (upstream's shared instance)."""
