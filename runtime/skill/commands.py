"""Running a command for the model (the ``bash`` tool), under a `CommandPolicy`.

A command is checked before it runs (`check_command`): it is split as the shell would
split it, and each simple command of it (the parts between ``|``, ``&&``, ``||`` and
``;``) must start with an allowed command name or a script inside an allowed folder.
Whatever would let a command run something unchecked is refused: ``$`` and backquotes
(expansions, command substitution), redirections, ``&``, sub-shells and newlines.

It then runs with ``/bin/bash -c`` in a session of its own (`run_command`): with an
environment of only ``PATH`` and the locale (none of the process's keys or passwords),
no input, and killed with its children past its timeout.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CommandPolicy", "check_command", "command_environment", "run_command"]

_SEPARATORS = frozenset({"|", "&&", "||", ";"})
_FORBIDDEN_TEXT = ("$", "`", "\n", "\r")
_KEPT_ENVIRONMENT = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ")
_MAX_OUTPUT_CHARS = 64_000


@dataclass(frozen=True)
class CommandPolicy:
    """What the ``bash`` tool may run for one chat model setup."""

    enabled: bool
    """Whether commands run at all (``skills.commands.enabled``)."""
    allowed_commands: tuple[str, ...] = ()
    """Command names a simple command may start with (the setup's ``allowed_commands``)."""
    script_dirs: tuple[Path, ...] = field(default=())
    """Folders whose files a simple command may start with (the setup's skills' folders
    and its ``allowed_script_dirs``); the working folder must be inside one too."""
    timeout_s: float = 60.0
    """The longest a command may run (``skills.command-timeout-s``)."""


def _under(path: Path, folders: Sequence[Path]) -> bool:
    resolved = path.resolve()
    return any(resolved.is_relative_to(folder.resolve()) for folder in folders)


def check_command(command: str, policy: CommandPolicy, cwd: Path) -> str | None:
    """Why ``command`` may not run in ``cwd`` under ``policy``, or None when it may."""
    for text in _FORBIDDEN_TEXT:
        if text in command:
            return f"{text!r} is not allowed in a command (expansions and newlines are not)"
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError as exc:
        return f"the command does not parse: {exc}"
    simple: list[list[str]] = [[]]
    for token in tokens:
        if token in _SEPARATORS:
            simple.append([])
        elif token and all(c in lexer.punctuation_chars for c in token):
            return f"{token!r} is not allowed (only |, &&, || and ; join commands)"
        else:
            simple[-1].append(token)
    for words in simple:
        if not words:
            return "an empty command"
        first = words[0]
        if first in policy.allowed_commands:
            continue
        if "/" in first and _under(cwd / first, policy.script_dirs):
            continue
        return (
            f"{first!r} is not an allowed command (allowed: {sorted(policy.allowed_commands)}, "
            "or a script inside a skill's folder)"
        )
    return None


def command_environment() -> dict[str, str]:
    """The environment a command runs with: ``PATH`` and the locale of this process."""
    return {k: v for k in _KEPT_ENVIRONMENT if (v := os.environ.get(k)) is not None}


def run_command(command: str, cwd: Path, timeout_s: float) -> str:
    """Run ``command`` (checked already) and say what came of it: its output, or its exit
    code and error output, or that it timed out (it and its children are killed)."""
    process = subprocess.Popen(
        ["/bin/bash", "-c", command],
        cwd=cwd,
        env=command_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return f"Error: the command timed out after {timeout_s:g} s and was stopped"
    if process.returncode != 0:
        return f"Error (exit code {process.returncode}): {err.strip()[:_MAX_OUTPUT_CHARS]}"
    text = out.strip()
    return text[:_MAX_OUTPUT_CHARS] if text else "Success"
