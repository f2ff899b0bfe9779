"""Docstrings read for tools: the summary and each parameter's description.

Google (``Args:``), NumPy (``Parameters`` underlined) and Sphinx (``:param x:``) styles.
"""

from __future__ import annotations

import inspect
import re

__all__ = ["parse_docstring"]

_SECTION_HEADERS = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|Notes?)\s*:?\s*$",
    re.IGNORECASE,
)
_PARAM_SECTIONS = ("args", "arguments", "parameters", "params")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_GOOGLE_ENTRY = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ENTRY = re.compile(r"^(\*{0,2}\w+)\s*(?::.*)?$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """``(summary, {parameter: description})`` from a docstring."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None  # lower-cased header, or "sphinx"
    numpy_style = False
    entry_indent: int | None = None
    current: str | None = None

    def add(name: str, text: str) -> None:
        params[name] = f"{params.get(name, '')} {text.strip()}".strip()

    for index, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        sphinx = _SPHINX_PARAM.match(line)
        if sphinx:
            section, current = "sphinx", str(sphinx.group(1))
            add(current, sphinx.group(2))
            continue
        if stripped.startswith(":"):
            section, current = "sphinx-other", None
            continue
        header = _SECTION_HEADERS.match(line)
        underlined = index + 1 < len(lines) and set(lines[index + 1].strip()) == {"-"}
        if header and (stripped.endswith(":") or underlined):
            section, current, entry_indent = header.group(1).lower(), None, None
            numpy_style = underlined
            continue
        if stripped and set(stripped) == {"-"}:
            continue
        if section is None:
            summary.append(line)
        elif section == "sphinx":
            if current is not None and stripped:
                add(current, stripped)
        elif section in _PARAM_SECTIONS and stripped:
            if numpy_style:
                entry = _NUMPY_ENTRY.match(line) if indent == 0 else None
                if entry:
                    name = str(entry.group(1)).lstrip("*")
                    params.setdefault(name, "")
                    current = name
                elif current is not None:
                    add(current, stripped)
                continue
            entry = _GOOGLE_ENTRY.match(line)
            if entry and (entry_indent is None or indent <= entry_indent):
                entry_indent = indent
                name = str(entry.group(1)).lstrip("*")
                add(name, entry.group(2))
                current = name
            elif current is not None:
                add(current, stripped)
    return "\n".join(summary).strip(), {k: v for k, v in params.items() if v}
