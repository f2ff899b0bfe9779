"""Writes docs/options.md, the options reference, from the `ConfigOption` declarations.

Usage: ``.venv/bin/python tools/options_doc.py`` (``--check``: exit 1 when the page is
not current, write nothing). ``tests/docs/test_options_page.py`` fails when the page is
not what this writes, so run it after adding or changing an option.

For every option of `AgentExecutionOptions`, `AgentConfigOptions`, `MemoryEventOptions`
and `LongTermMemoryOptions.Mem0`
the page gives its key, type, default, unit, whether upstream (Apache Flink Agents) has it,
what reads it and its description. What reads it is found in the source, not declared:
the modules under ``flink_agents/``, ``runtime/`` and ``integrations/`` that name it as
``Holder.NAME`` or hold its key as a string literal (``core_options.py`` itself only inside
its functions: its module-level tables list options, they do not read them). Upstream
options nothing reads are `UNSUPPORTED_OPTIONS`, with what to use instead;
``tests/docs/test_options_page.py`` checks that the two agree. The fields of
`AgentOperatorOptions` (set in code only) are read from its source, without importing the
Flink runtime.

The output depends on nothing but the sources (defaults computed from the machine, like
``num-async-threads``, are shown as their expression), so a rerun writes the same page.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "options.md"
CORE_OPTIONS = ROOT / "flink_agents" / "api" / "core_options.py"
OPERATOR_CLASS = "AgentOperatorOptions"
READER_FOLDERS = ("flink_agents", "runtime", "integrations")
COMMAND = ".venv/bin/python tools/options_doc.py"

if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from flink_agents.api.configuration import ConfigOption  # noqa: E402
from flink_agents.api.core_options import (  # noqa: E402
    UNSUPPORTED_OPTIONS,
    UPSTREAM_OPTION_KEYS,
    AgentConfigOptions,
    AgentExecutionOptions,
    LongTermMemoryOptions,
    MemoryEventOptions,
)

__all__ = [
    "COMMAND",
    "PAGE",
    "Option",
    "declared_options",
    "main",
    "operator_class",
    "operator_fields",
    "readers",
    "render",
]

HOLDERS: tuple[type, ...] = (
    AgentExecutionOptions,
    AgentConfigOptions,
    MemoryEventOptions,
    LongTermMemoryOptions.Mem0,
)

_SUFFIX_UNITS = (("-s", "s"), ("-ms", "ms"), (".ms", "ms"), ("-bytes", "bytes"))
"""Units the key names (the project's convention: the unit ends the key)."""

_UPSTREAM_UNITS = {"retry-wait-interval": "s"}
"""Upstream's keys that do not name their unit (upstream's documentation gives it)."""


@dataclass(frozen=True)
class Option:
    """One declared option: where it is declared and the option itself."""

    holder: str
    name: str
    option: ConfigOption[Any]
    default_source: str
    """The default as written in the declaration."""


def declared_options() -> list[Option]:
    """Every option of the holders, in declaration order."""
    sources = _default_sources()
    return [
        Option(holder.__qualname__, name, value, sources[(holder.__qualname__, name)])
        for holder in HOLDERS
        for name, value in vars(holder).items()
        if isinstance(value, ConfigOption)
    ]


def _default_sources() -> dict[tuple[str, str], str]:
    """(holder, attribute) -> the default argument of its declaration, as source (a nested
    holder by its qualified name, ``LongTermMemoryOptions.Mem0``)."""
    found: dict[tuple[str, str], str] = {}
    tree = ast.parse(CORE_OPTIONS.read_text())
    classes = [(node, getattr(node, "name", "")) for node in tree.body]
    while classes:
        holder, qualname = classes.pop()
        if not isinstance(holder, ast.ClassDef):
            continue
        classes.extend((node, f"{qualname}.{getattr(node, 'name', '')}") for node in holder.body)
        for node in holder.body:
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            call = node.value
            if not (isinstance(call, ast.Call) and _called(call) == "ConfigOption"):
                continue
            default: ast.expr | None = call.args[2] if len(call.args) > 2 else None
            for keyword in call.keywords:
                if keyword.arg == "default":
                    default = keyword.value
            found[(qualname, node.target.id)] = "None" if default is None else ast.unparse(default)
    return found


def _called(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _module_files() -> Iterator[Path]:
    for folder in READER_FOLDERS:
        yield from sorted(p for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)


def _references(tree: ast.AST) -> tuple[set[tuple[str, str]], set[str]]:
    """The ``Holder.NAME`` attributes and the string literals under ``tree``."""
    holders = {holder.__qualname__ for holder in HOLDERS}
    named: set[tuple[str, str]] = set()
    strings: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, (ast.Name, ast.Attribute))
            and ast.unparse(node.value) in holders
        ):
            named.add((ast.unparse(node.value), node.attr))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.add(node.value)
    return named, strings


def readers(options: list[Option]) -> dict[tuple[str, str], list[str]]:
    """(holder, attribute) -> the source files (relative to the root) that read it."""
    found: dict[tuple[str, str], list[str]] = {(o.holder, o.name): [] for o in options}
    for path in _module_files():
        tree = ast.parse(path.read_text(), filename=str(path))
        if path == CORE_OPTIONS:
            scopes: list[ast.AST] = [
                node
                for node in ast.walk(tree)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
        else:
            scopes = [tree]
        named: set[tuple[str, str]] = set()
        strings: set[str] = set()
        for scope in scopes:
            more_named, more_strings = _references(scope)
            named |= more_named
            strings |= more_strings
        relative = path.relative_to(ROOT).as_posix()
        for option in options:
            if (option.holder, option.name) in named or option.option.key in strings:
                found[(option.holder, option.name)].append(relative)
    return found


def _type(option: ConfigOption[Any]) -> str:
    kind = option.config_type
    if isinstance(kind, type) and issubclass(kind, Enum):
        return " \\| ".join(f"`{member.value}`" for member in kind)
    if kind is list:
        return "list of str"
    return getattr(kind, "__name__", str(kind))


def _default(entry: Option) -> str:
    value = entry.option.default
    if any(isinstance(node, ast.Call) for node in ast.walk(ast.parse(entry.default_source))):
        return f"`{entry.default_source}`"  # computed where it runs
    if value is None:
        return "unset"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def _unit(key: str) -> str:
    for suffix, unit in _SUFFIX_UNITS:
        if key.endswith(suffix):
            return unit
    return _UPSTREAM_UNITS.get(key, "")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _options_table(options: list[Option], read_by: dict[tuple[str, str], list[str]]) -> list[str]:
    lines = [
        "| Key | Type | Default | Unit | Upstream | Read by | Description |",
        "|---|---|---|---|---|---|---|",
    ]
    for entry in options:
        key = entry.option.key
        files = read_by[(entry.holder, entry.name)]
        where = "<br>".join(f"`{f}`" for f in files) if files else "**nothing**"
        lines.append(
            f"| `{key}` | {_type(entry.option)} | {_default(entry)} | {_unit(key)} | "
            f"{'upstream' if key in UPSTREAM_OPTION_KEYS else 'ours'} | {where} | "
            f"{_cell(entry.option.description)} |"
        )
    return lines


def operator_class() -> tuple[str, ast.ClassDef]:
    """The module (path under the root) and the source of `AgentOperatorOptions`."""
    for path in sorted((ROOT / "runtime").rglob("*.py")):
        for node in ast.parse(path.read_text(), filename=str(path)).body:
            if isinstance(node, ast.ClassDef) and node.name == OPERATOR_CLASS:
                return path.relative_to(ROOT).as_posix(), node
    raise LookupError(f"no class {OPERATOR_CLASS} under runtime/")


def operator_fields(node: ast.ClassDef) -> list[tuple[str, str, str, str]]:
    """(name, type, default, docstring) of the fields of the pydantic model ``node``."""
    fields: list[tuple[str, str, str, str]] = []
    body = node.body
    for index, item in enumerate(body):
        if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
            continue
        default = "required"
        if isinstance(item.value, ast.Call) and _called(item.value) == "Field":
            if item.value.args:
                default = ast.unparse(item.value.args[0])
            for keyword in item.value.keywords:
                if keyword.arg == "default":
                    default = ast.unparse(keyword.value)
                elif keyword.arg == "default_factory":
                    default = f"{ast.unparse(keyword.value)}()"
        elif item.value is not None:
            default = ast.unparse(item.value)
        doc = ""
        after = body[index + 1] if index + 1 < len(body) else None
        if (
            isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            doc = after.value.value
        fields.append((item.target.id, ast.unparse(item.annotation), default, doc))
    return fields


def _section_title(holder: type) -> str:
    summary = (holder.__doc__ or "").strip().split("\n\n")[0]
    return f"## {holder.__qualname__}\n\n{' '.join(summary.split())}"


def render() -> str:
    """The page, as `main` writes it."""
    options = declared_options()
    read_by = readers(options)
    operator_module, operator_node = operator_class()
    lines = [
        "# Options",
        "",
        "<!-- Generated by tools/options_doc.py from the ConfigOption declarations in",
        f"     flink_agents/api/core_options.py: do not edit; run `{COMMAND}`. -->",
        "",
        "Every agent option: its key, type, default, unit, whether the upstream project",
        "(Apache Flink Agents) has it, the source files that read it and what it does. Set",
        "options as [the agent API](agent-api.md#options) shows (`env.get_config().set(...)`,",
        "`set_str(key, value)`, or an `agent:` section of Flink's `config.yaml`). This page",
        f"is generated from the declarations (`{COMMAND}`); a test fails when it",
        "is not current. *Read by* lists the files under `flink_agents/`, `runtime/` and",
        "`integrations/` that name the option or its key.",
        "",
    ]
    for holder in HOLDERS:
        mine = [o for o in options if o.holder == holder.__qualname__]
        lines += [_section_title(holder), "", *_options_table(mine, read_by), ""]
    lines += [
        "## Upstream options nothing here reads",
        "",
        "Accepted under upstream's keys and defaults so upstream configurations load, but no",
        "code reads them: setting one to anything but its default logs a warning saying what",
        "to use instead (and `actionStateStoreBackend` set to anything but `kafka` raises",
        "`ValueError`). The list is `flink_agents.api.core_options.UNSUPPORTED_OPTIONS`.",
        "",
        "| Key | Instead |",
        "|---|---|",
        *(f"| `{key}` | {_cell(instead)} |" for key, instead in UNSUPPORTED_OPTIONS.items()),
        "",
        "## AgentOperatorOptions",
        "",
        "Tuning of the keyed agent operator per subtask, set in code only:",
        f"`flink_agents.runtime.flink.AgentOperatorOptions(...)` (`{operator_module}`), given to",
        "`FlinkAgentsExecutionEnvironment` as `operator_options`. Fields it is not given",
        "follow the agent options (`max-in-flight-runs`, `max-buffered-inputs`, `gc.tuning`,",
        "`gc.freeze`); see [deployment.md](deployment.md).",
        "",
        "| Field | Type | Default | Description |",
        "|---|---|---|---|",
        *(
            f"| `{name}` | `{_cell(kind)}` | `{default}` | {_cell(doc)} |"
            for name, kind, default, doc in operator_fields(operator_node)
        ),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = PAGE.read_text() if PAGE.exists() else ""
        if current != text:
            print(f"{PAGE.relative_to(ROOT)} is not current: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
