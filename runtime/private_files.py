"""Files and directories the runtime creates are private to the user it runs as.

The action-state store and the event log hold tool results, answers and keys: a file the
runtime creates is ``0600`` (read and write by its owner only) and a directory ``0700``,
whatever the process's umask allows. Files and directories that already exist keep their
mode (the operator chose it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "create_private_file",
    "make_private_dirs",
    "open_private_append",
]

FILE_MODE = 0o600
"""Mode of a file the runtime creates."""

DIR_MODE = 0o700
"""Mode of a directory the runtime creates."""


def make_private_dirs(directory: str | os.PathLike[str]) -> None:
    """Create ``directory`` and its missing parents, each ``0700`` (existing ones untouched)."""
    path = Path(directory)
    missing: list[Path] = []
    while not path.exists():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for each in reversed(missing):
        try:
            each.mkdir(mode=DIR_MODE)
        except FileExistsError:
            continue  # made by another process meanwhile


def create_private_file(path: str | os.PathLike[str]) -> bool:
    """Create an empty ``0600`` file at ``path`` unless one exists; True when created."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def open_private_append(path: str | os.PathLike[str], *, buffering: int = -1) -> TextIO:
    """``path`` opened to append UTF-8 text, created ``0600`` when it does not exist."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    try:
        return os.fdopen(fd, "a", encoding="utf-8", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise
