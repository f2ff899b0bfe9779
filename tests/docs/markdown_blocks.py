"""The Python blocks of README.md and docs/*.md, and how to run one as the page shows it.

A fenced block whose info string starts with ``python`` is an example. It runs as it is,
in a fresh module, unless the HTML comment on the line just before its fence says
otherwise (invisible on GitHub and in the built site)::

    <!-- docs-test: partial: a method of the agent above -->   not run; the reason is required
    <!-- docs-test: continues -->    runs after the page's last complete example above it,
                                     in the same module (definitions shared)
    <!-- docs-test: own-process -->  runs as a script in a Python process of its own (it
                                     changes what a process has once: a tracer provider)
    <!-- docs-test: flink -->        needs a Flink mini-cluster: runs in e2e_tests (the lock),
                                     as a script in a process of its own
    <!-- docs-test: flink, continues -->
    <!-- docs-test: cluster-job -->  a job script for a standalone cluster: submitted there by
                                     e2e_tests/test_newcomer_path.py

``python -m tests.docs.markdown_blocks docs/page.md:LINE`` runs one block (and what it
continues) as ``__main__``, as ``python script.py`` would, and checks its output.

What a block prints is checked where the page shows it:

- a ``print(...)`` line with a comment after it, ``print(out)  # [{'u1': 42}]``: the
  comment is what that line prints (all its prints, joined by newlines);
- a block fenced as ``output`` after the example (before any other code block): everything
  the example prints, in order.

In expected output ``...`` stands for any text (as doctest's ELLIPSIS). The output block of
a flink block is compared with the whole standard output of its process, line by line in any
order (a job's print sink writes there from the JVM, and keys run concurrently).

A block that defines ``test_*`` functions (as a pytest module would) has each of them called
after it ran, in order, with no arguments.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import tokenize
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "DIRECTIVES",
    "ROOT",
    "CodeBlock",
    "DocsExampleError",
    "block_named",
    "blocks_in",
    "chain_of",
    "doc_pages",
    "example_blocks",
    "expected_per_line",
    "match_lines",
    "match_output",
    "run_as_script",
    "run_chain",
]

ROOT = Path(__file__).resolve().parents[2]
DIRECTIVES = ("partial", "continues", "flink", "own-process", "cluster-job")

_FENCE = re.compile(r"^(?P<indent>[ ]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<body>.*?)\s*-->\s*$")


class DocsExampleError(AssertionError):
    """An example failed, or printed something else than its page shows."""


@dataclass
class CodeBlock:
    """One fenced code block of a page."""

    path: Path
    """The page."""
    line: int
    """Line of the opening fence (1-based)."""
    info: str
    """The fence's info string (``python``, ``bash``, ``output``...)."""
    source: str
    """The code, dedented by the fence's indentation."""
    directives: dict[str, str] = field(default_factory=dict)
    """``partial`` (with its reason), ``continues``, ``flink``, ``own-process``,
    ``cluster-job``."""
    output: str | None = None
    """The ``output`` block that follows it, if any."""

    @property
    def language(self) -> str:
        return self.info.split()[0] if self.info.split() else ""

    @property
    def first_code_line(self) -> int:
        return self.line + 1

    @property
    def name(self) -> str:
        """``docs/quickstart.md:31``: how tests and messages name the block."""
        page = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{page.as_posix()}:{self.line}"

    @property
    def is_partial(self) -> bool:
        return "partial" in self.directives

    @property
    def needs_flink(self) -> bool:
        return "flink" in self.directives or self.is_cluster_job

    @property
    def is_cluster_job(self) -> bool:
        return "cluster-job" in self.directives

    @property
    def continues(self) -> bool:
        return "continues" in self.directives

    @property
    def own_process(self) -> bool:
        """Runs as a script in a process of its own (flink blocks too)."""
        return "own-process" in self.directives or self.needs_flink


def doc_pages() -> list[Path]:
    """README.md and every page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _parse_directive(text: str, where: str) -> dict[str, str]:
    found: dict[str, str] = {}
    body = text
    if body.startswith("partial"):
        reason = body[len("partial") :].lstrip(" :").strip()
        if not reason:
            raise ValueError(f"{where}: 'partial' needs a reason: <!-- docs-test: partial: why -->")
        return {"partial": reason}
    for item in (part.strip() for part in body.split(",")):
        if item not in DIRECTIVES or item == "partial":
            raise ValueError(
                f"{where}: unknown docs-test directive {item!r} "
                f"(known: partial: <reason>, continues, flink, own-process, cluster-job)"
            )
        found[item] = ""
    return found


def blocks_in(path: Path) -> list[CodeBlock]:
    """Every fenced block of a page, in order, with its directives and output block."""
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks: list[CodeBlock] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        body = [line[indent:] if line[:indent].isspace() else line for line in lines[i + 1 : end]]
        directives: dict[str, str] = {}
        previous = i - 1
        if previous >= 0 and (found := _DIRECTIVE.match(lines[previous])):
            directives = _parse_directive(found["body"], f"{path.name}:{i + 1}")
        block = CodeBlock(
            path=path,
            line=i + 1,
            info=opening["info"].strip(),
            source="\n".join(body) + "\n",
            directives=directives,
        )
        if blocks and block.language == "output" and blocks[-1].language == "python":
            blocks[-1].output = block.source
        blocks.append(block)
        i = end + 1
    return blocks


def example_blocks(pages: list[Path] | None = None) -> list[CodeBlock]:
    """Every Python block of the pages (README.md and docs/*.md by default)."""
    return [
        block
        for page in (doc_pages() if pages is None else pages)
        for block in blocks_in(page)
        if block.language == "python"
    ]


def chain_of(block: CodeBlock) -> list[CodeBlock]:
    """The blocks to run for ``block``: for a block that continues, the page's last complete
    example above it (the nearest one that is neither partial nor a continuation), then the
    block itself."""
    if not block.continues:
        return [block]
    above = [b for b in example_blocks([block.path]) if b.line < block.line]
    bases = [b for b in above if not b.is_partial and not b.continues]
    if not bases:
        raise ValueError(f"{block.name} continues nothing: no complete example above it")
    base = bases[-1]
    if base.needs_flink and not block.needs_flink:
        raise ValueError(f"{block.name} continues {base.name}, which needs Flink: mark it flink")
    return [base, block]


# ---------------------------------------------------------------------------------- running


def expected_per_line(block: CodeBlock) -> dict[int, str]:
    """Page line -> the output its ``print(...)`` shows in a trailing comment."""
    expected: dict[int, str] = {}
    tree = ast.parse(block.source)
    print_lines = {
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "print"
        and node.lineno == node.end_lineno
    }
    tokens = tokenize.generate_tokens(io.StringIO(block.source).readline)
    for token in tokens:
        if token.type == tokenize.COMMENT and token.start[0] in print_lines:
            text = token.string[1:].strip()
            expected[token.start[0] + block.line] = text
    return expected


def match_lines(expected: str, actual: str) -> bool:
    """Whether ``actual`` has the lines of ``expected``, in any order (blank lines and
    trailing whitespace ignored; ``...`` within a line stands for any text)."""

    def lines(text: str) -> list[str]:
        return [line.rstrip() for line in text.split("\n") if line.strip()]

    left, right = lines(expected), sorted(lines(actual))
    if len(left) != len(right):
        return False
    for want in left:
        found = next((got for got in right if match_output(want, got)), None)
        if found is None:
            return False
        right.remove(found)
    return True


def match_output(expected: str, actual: str) -> bool:
    """Whether ``actual`` is ``expected``, where ``...`` in ``expected`` stands for any text
    (trailing whitespace of each line ignored)."""

    def norm(text: str) -> str:
        return "\n".join(line.rstrip() for line in text.strip("\n").split("\n"))

    pattern = ".*?".join(re.escape(part) for part in norm(expected).split("..."))
    return re.fullmatch(pattern, norm(actual), flags=re.DOTALL) is not None


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise TimeoutError in the main thread after ``seconds`` (no-op off the main thread)."""
    if seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"the example ran longer than {seconds:.0f} s")

    try:
        previous = signal.signal(signal.SIGALRM, expire)
    except ValueError:  # not the main thread
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _compile(block: CodeBlock) -> types.CodeType:
    tree = ast.parse(block.source, filename=str(block.path))
    ast.increment_lineno(tree, block.line)  # tracebacks name the page's lines
    return compile(tree, str(block.path), "exec")


def run_chain(
    blocks: list[CodeBlock], *, module_name: str, timeout: float = 120.0
) -> list[tuple[int, str]]:
    """Run ``blocks`` one after the other in one fresh module named ``module_name`` (made
    importable while it runs, so its classes pickle and travel through agent state as a
    script's would) and check what the last one prints. Returns ``(page line, text)`` of
    every print of the last block. Raises `DocsExampleError` when the output differs."""
    module = types.ModuleType(module_name)
    module.__file__ = str(blocks[-1].path)
    printed: list[tuple[str, int, str]] = []
    filename_of_last = str(blocks[-1].path)
    last = blocks[-1]

    def recording_print(*args: Any, **kwargs: Any) -> None:
        if kwargs.get("file") not in (None, sys.stdout):
            builtins.print(*args, **kwargs)
            return
        buffer = io.StringIO()
        builtins.print(*args, **{**kwargs, "file": buffer})
        frame = sys._getframe(1)
        # The innermost frame running the page's code: the print's own line.
        while frame is not None and frame.f_code.co_filename != filename_of_last:
            frame = frame.f_back
        line = frame.f_lineno if frame is not None else -1
        printed.append((module_name, line, buffer.getvalue()))
        builtins.print(*args, **kwargs)

    module.__dict__["print"] = recording_print
    saved_module = sys.modules.get(module_name)
    sys.modules[module_name] = module
    try:
        with _deadline(timeout):
            for index, block in enumerate(blocks):
                if index == len(blocks) - 1:
                    printed.clear()
                defined = set(module.__dict__)
                exec(_compile(block), module.__dict__)
                for name, value in list(module.__dict__.items()):
                    if name.startswith("test_") and name not in defined and callable(value):
                        value()
    finally:
        if saved_module is not None:
            sys.modules[module_name] = saved_module
        else:
            sys.modules.pop(module_name, None)
    lines = [(line, text) for _, line, text in printed]
    _check_output(last, lines)
    return lines


def _check_output(block: CodeBlock, printed: list[tuple[int, str]]) -> None:
    problems: list[str] = []
    for line, expected in expected_per_line(block).items():
        actual = "".join(text for at, text in printed if at == line)
        if not match_output(expected, actual):
            problems.append(
                f"{block.path.name}:{line} prints\n  {actual.rstrip()!s}\nthe page shows\n"
                f"  {expected}"
            )
    if block.output is not None and not block.needs_flink:
        actual = "".join(text for _, text in printed)
        if not match_output(block.output, actual):
            problems.append(
                f"{block.name} prints\n{actual.rstrip()}\nthe page's output block shows\n"
                f"{block.output.rstrip()}"
            )
    if problems:
        raise DocsExampleError("\n\n".join(problems))


def block_named(name: str) -> CodeBlock:
    """The Python block ``docs/page.md:LINE`` (the line of its opening fence)."""
    page, _, line = name.rpartition(":")
    for block in example_blocks([ROOT / page]):
        if block.line == int(line):
            return block
    raise LookupError(f"no Python block opens at {name}")


def run_as_script(
    block: CodeBlock, cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run ``block`` (and what it continues) as ``__main__`` of a new interpreter in ``cwd``
    (``python -m tests.docs.markdown_blocks PAGE:LINE``, with the repository on
    ``PYTHONPATH``); exit code 1 and a `DocsExampleError` on stderr when its output differs."""
    parts = [str(ROOT), *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)]
    return subprocess.run(
        [sys.executable, "-m", "tests.docs.markdown_blocks", block.name],
        cwd=cwd,
        env={**env, "PYTHONPATH": os.pathsep.join(parts)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def main(argv: list[str] | None = None) -> int:
    """Run one block as ``__main__``: ``python -m tests.docs.markdown_blocks PAGE:LINE``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tests.docs.markdown_blocks docs/page.md:LINE", file=sys.stderr)
        return 2
    block = block_named(args[0])
    try:
        run_chain(chain_of(block), module_name="__main__", timeout=0)
    except DocsExampleError as error:
        print(f"DocsExampleError: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
