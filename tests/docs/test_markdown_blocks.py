"""The docs example runner itself: what it runs, what it skips, and that a page whose
example prints something else than it shows fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.markdown_blocks import (
    DocsExampleError,
    blocks_in,
    chain_of,
    example_blocks,
    match_lines,
    match_output,
    run_chain,
)

FENCE = "```"


def page(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "page.md"
    path.write_text(text.replace("'''", FENCE))
    return path


def run(path: Path, index: int = -1) -> list[tuple[int, str]]:
    blocks = example_blocks([path])
    return run_chain(chain_of(blocks[index]), module_name="docs_example_under_test", timeout=10)


def test_a_print_comment_is_what_the_line_prints(tmp_path: Path) -> None:
    path = page(tmp_path, "'''python\nx = [1, 2]\nprint(x)  # [1, 2]\n'''\n")
    assert run(path) == [(3, "[1, 2]\n")]  # the page's line 3
    wrong = page(tmp_path, "'''python\nprint(6 * 7)  # 41\n'''\n")
    with pytest.raises(DocsExampleError, match=r"page.md:2 prints\n  42\nthe page shows\n  41"):
        run(wrong)


def test_an_output_block_is_everything_the_example_prints(tmp_path: Path) -> None:
    text = (
        "'''python\nfor i in range(2):\n    print(i)\n'''\n\nIt prints:\n\n'''output\n0\n{}\n'''\n"
    )
    run(page(tmp_path, text.format(1)))
    with pytest.raises(DocsExampleError, match="output block shows"):
        run(page(tmp_path, text.format(2)))


def test_dots_stand_for_any_text() -> None:
    assert match_output("id: ...-input", "id: 3f2a9c-0-input\n")
    assert not match_output("id: ...-input", "id: 3f2a9c-0-begin")
    assert match_lines("b\na\n", "a\nb\n") and not match_lines("a\na\n", "a\nb\n")


def test_markers_partial_continues_and_flink(tmp_path: Path) -> None:
    text = (
        "'''python\nbase = 40\n'''\n"
        "<!-- docs-test: partial: a fragment -->\n'''python\nundefined_name\n'''\n"
        "<!-- docs-test: continues -->\n'''python\nprint(base + 2)  # 42\n'''\n"
        "<!-- docs-test: flink, continues -->\n'''python\nprint(base)\n'''\n"
        "'''bash\nls\n'''\n"
    )
    path = page(tmp_path, text)
    blocks = example_blocks([path])
    assert [b.language for b in blocks_in(path)] == ["python"] * 4 + ["bash"]
    assert blocks[1].is_partial and blocks[1].directives["partial"] == "a fragment"
    assert [b.line for b in chain_of(blocks[2])] == [1, 9]  # the partial block is not run
    assert blocks[3].needs_flink and blocks[3].own_process
    assert run(path, 2) == [(10, "42\n")]


def test_a_marker_must_be_known_and_a_partial_block_must_say_why(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown docs-test directive 'flnk'"):
        blocks_in(page(tmp_path, "<!-- docs-test: flnk -->\n'''python\npass\n'''\n"))
    with pytest.raises(ValueError, match="needs a reason"):
        blocks_in(page(tmp_path, "<!-- docs-test: partial -->\n'''python\npass\n'''\n"))


def test_classes_of_an_example_can_be_found_by_their_module(tmp_path: Path) -> None:
    code = (
        "import importlib\n\nclass Weather:\n    pass\n\n"
        "found = getattr(importlib.import_module(Weather.__module__), 'Weather')\n"
        "print(found is Weather)  # True\n"
    )
    run(page(tmp_path, f"'''python\n{code}'''\n"))


def test_test_functions_of_an_example_are_called(tmp_path: Path) -> None:
    text = "'''python\ndef test_fails():\n    assert 1 + 1 == 3\n'''\n"
    with pytest.raises(AssertionError):
        run(page(tmp_path, text))


def test_an_example_that_hangs_times_out(tmp_path: Path) -> None:
    path = page(tmp_path, "'''python\nimport time\n\ntime.sleep(5)\n'''\n")
    blocks = example_blocks([path])
    with pytest.raises(TimeoutError):
        run_chain(blocks, module_name="docs_example_under_test", timeout=0.2)
