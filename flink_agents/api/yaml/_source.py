"""Where each value of a YAML file is written: the line of every field, for error messages.

`read_source(path)` parses a file once into its data and a `YamlSource`, which maps a
field's path (``("agents", 0, "actions", 1, "function")``) to the line it is written on
and turns a problem at a path, or a pydantic `ValidationError`, into a
`YamlDefinitionError` naming the file, the line and the field.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from flink_agents.api.errors import YamlDefinitionError

__all__ = ["FieldPath", "YamlSource", "field_name", "read_source"]

FieldPath = tuple[str | int, ...]
"""Keys and list indices from the top of a file to a field."""


def field_name(path: FieldPath) -> str:
    """``agents[0].actions[1].function`` for ``("agents", 0, "actions", 1, "function")``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "(the document)"


class YamlSource:
    """One YAML file: its name and the line of each field."""

    def __init__(self, file: str, lines: dict[FieldPath, int]) -> None:
        self.file = file
        """The file as it was given."""
        self.lines = lines
        """The line (1-based) each field's key, or list item, is written on."""

    def line_of(self, path: FieldPath) -> int:
        """The line of ``path``, or of its nearest enclosing field that is written."""
        while path not in self.lines and path:
            path = path[:-1]
        return self.lines.get(path, 1)

    def problem(self, path: FieldPath, message: str) -> tuple[str, int, str, str]:
        return (self.file, self.line_of(path), field_name(path), message)

    def error(self, path: FieldPath, message: str) -> YamlDefinitionError:
        """The error of one problem at ``path``."""
        return YamlDefinitionError([self.problem(path, message)])

    @contextmanager
    def at(self, *path: str | int) -> Iterator[None]:
        """Turn an error of building what ``path`` declares (a `ValueError`, `TypeError`,
        `ImportError` or `AttributeError`: a bad value, a function that is not there) into
        a `YamlDefinitionError` at ``path``."""
        try:
            yield
        except YamlDefinitionError:
            raise
        except (ValueError, TypeError, ImportError, AttributeError) as exc:
            raise self.error(path, str(exc) or type(exc).__name__) from exc

    def validation_error(self, error: ValidationError, base: FieldPath = ()) -> YamlDefinitionError:
        """The problems pydantic found in the value at ``base``, each at its own field."""
        problems: list[tuple[str, int, str, str]] = []
        items = error.errors()
        for item in items:
            loc = item["loc"]
            if _is_other_union_member(loc, items):
                continue
            path = _written_path(base, loc, self.lines, missing=item["type"] == "missing")
            problems.append(self.problem(path, item["msg"]))
        if not problems:  # every error was a union tag: keep them all
            problems = [self.problem(base, str(error))]
        problems.sort(key=lambda p: p[1])
        return YamlDefinitionError(problems)


def _written_path(
    base: FieldPath, loc: tuple[str | int, ...], lines: dict[FieldPath, int], *, missing: bool
) -> FieldPath:
    """The path of a pydantic error location in the file, leaving out its union tags
    (``ActionSpec``, ``str``); a missing field is named though it is not written."""
    path = base
    for i, part in enumerate(loc):
        candidate = (*path, part)
        if candidate in lines or (missing and i == len(loc) - 1):
            path = candidate
    return path


def _is_other_union_member(loc: tuple[str | int, ...], items: list[Any]) -> bool:
    """For an action written as a mapping (``ActionSpec | str``), the complaint that it
    is no string says nothing: drop it when the mapping has complaints of its own."""
    if not loc or loc[-1] != "str":
        return False
    prefix = loc[:-1]
    return any(
        tuple(other["loc"][: len(prefix)]) == prefix and other["loc"] != loc for other in items
    )


def read_source(path: Path | str) -> tuple[Any, YamlSource]:
    """The data of the YAML file at ``path`` and where each of its fields is written.

    `YamlDefinitionError` for a file that is not YAML (its line), that is empty, or
    that writes a key twice in one mapping (YAML would keep the last one silently)."""
    file = str(path)
    text = Path(path).read_text(encoding="utf-8")
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise YamlDefinitionError([(file, 1, "(the document)", f"YAML file {file} is empty")])
        lines: dict[FieldPath, int] = {(): node.start_mark.line + 1}
        duplicates: list[tuple[str, int, str, str]] = []
        _walk(node, (), lines, duplicates, file)
        if duplicates:
            raise YamlDefinitionError(duplicates)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise YamlDefinitionError(
            [(file, line, "(the document)", f"not valid YAML: {exc.problem or exc}")]
        ) from None
    finally:
        loader.dispose()
    return data, YamlSource(file, lines)


def _walk(
    node: yaml.Node,
    path: FieldPath,
    lines: dict[FieldPath, int],
    duplicates: list[tuple[str, int, str, str]],
    file: str,
) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            child = (*path, key)
            line = key_node.start_mark.line + 1
            if child in lines:
                duplicates.append(
                    (file, line, field_name(child), f"written twice (first on line {lines[child]})")
                )
                continue
            lines[child] = line
            _walk(value_node, child, lines, duplicates, file)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*path, index)
            lines[child] = item.start_mark.line + 1
            _walk(item, child, lines, duplicates, file)
