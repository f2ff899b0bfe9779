"""docs/options.md is what tools/options_doc.py writes from the option declarations, and
the upstream options nothing reads are exactly the ones `UNSUPPORTED_OPTIONS` lists."""

from __future__ import annotations

import sys
from pathlib import Path

from flink_agents.api.core_options import UNSUPPORTED_OPTIONS, UPSTREAM_OPTION_KEYS
from tools import options_doc


def test_the_options_page_is_current() -> None:
    current = options_doc.PAGE.read_text() if options_doc.PAGE.exists() else ""
    assert current == options_doc.render(), (
        f"docs/options.md is not current: run `{options_doc.COMMAND}` and commit the page"
    )


def test_the_options_nothing_reads_are_the_unsupported_upstream_ones() -> None:
    options = options_doc.declared_options()
    read_by = options_doc.readers(options)
    unread = {o.option.key for o in options if not read_by[(o.holder, o.name)]}
    assert unread == set(UNSUPPORTED_OPTIONS), (
        "an option nothing reads must be an upstream option listed in "
        "core_options.UNSUPPORTED_OPTIONS (with what to use instead), and a listed one must "
        "not be read"
    )
    assert unread <= UPSTREAM_OPTION_KEYS  # our own options are all read
    assert {o.option.key for o in options} >= UPSTREAM_OPTION_KEYS


def test_readers_are_found_by_name_or_by_key(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "runtime").mkdir()
    (tmp_path / "runtime" / "by_name.py").write_text(
        "from flink_agents.api.core_options import AgentExecutionOptions\n"
        "def f(config):\n"
        "    return config.get(AgentExecutionOptions.MAX_RETRIES)\n"
    )
    (tmp_path / "runtime" / "by_key.py").write_text(
        "def f(config):\n    return config.get_int('max-retries')\n"
    )
    (tmp_path / "runtime" / "mentions.py").write_text('"""See max-retries and MAX_RETRIES."""\n')
    monkeypatch.setattr(options_doc, "ROOT", tmp_path)
    monkeypatch.setattr(options_doc, "READER_FOLDERS", ("runtime",))
    options = options_doc.declared_options()
    read_by = options_doc.readers(options)
    assert read_by[("AgentExecutionOptions", "MAX_RETRIES")] == [
        "runtime/by_key.py",
        "runtime/by_name.py",
    ]
    assert read_by[("AgentExecutionOptions", "TOOL_CALL_TIMEOUT")] == []


def test_a_default_computed_where_it_runs_is_shown_as_written() -> None:
    page = options_doc.render()
    assert "`(os.cpu_count() or 1) * 2`" in page  # the same page on every machine
    assert options_doc.main(["--check"]) == 0


def test_the_operator_options_read_from_source_are_the_models_fields() -> None:
    from flink_agents.runtime.flink import AgentOperatorOptions

    _, node = options_doc.operator_class()
    fields = options_doc.operator_fields(node)
    assert [name for name, *_ in fields] == list(AgentOperatorOptions.model_fields)
    defaults = {name: default for name, _, default, _ in fields}
    for name, field in AgentOperatorOptions.model_fields.items():
        value = field.get_default(call_default_factory=True)
        if isinstance(value, (bool, int, float)):
            # A default written as an expression (another option's default) is printed as
            # written: it must evaluate, in the model's module, to the model's default.
            written = defaults[name]
            module = vars(sys.modules[AgentOperatorOptions.__module__])
            assert written == repr(value) or eval(written, dict(module)) == value, name
