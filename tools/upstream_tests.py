"""Runs upstream's (Apache Flink Agents') own Python tests against this package.

Usage::

    .venv/bin/python tools/upstream_tests.py /work/.mirror/apache+flink-agents/repo
    .venv/bin/python tools/upstream_tests.py ~/src/flink-agents --files -- -k yaml

SOURCE is an upstream checkout (its root) or a git repository, bare mirrors included (its
``python/`` tree and the few files outside it that the tests read, `REPOSITORY_FILES`, at
``--rev``, default ``HEAD``, are exported with ``git archive``). A measurement, not part
of CI: upstream's tests are copied to a temporary tree and never into this repository.
Arguments after ``--`` go to pytest (``-- -k yaml``).

How the tests meet this package and not upstream's: only upstream's test folders (every
``tests/`` under ``python/flink_agents/``, and ``e2e_tests/`` for the helpers other tests
import) are copied, with their ``__init__.py`` renamed so that pytest sees plain folders. A
pytest plugin (written next to the tree) puts a finder first on ``sys.meta_path`` that
answers only for the copied modules (``flink_agents.<...>.tests.<...>``), so a test module
keeps its dotted name (some tests assert it) while ``flink_agents`` itself, and everything
it holds, is the installed package of the interpreter that runs this tool; the plugin checks
that at start. Nothing of the tree is put on ``sys.path``.

The output: passed / failed / skipped per area and in all; the ratio is passed over
passed + failed (skips are tests upstream itself skips here: no Ollama, no API key). A
module that cannot be imported counts its test functions as failed. Failures are grouped by
their first error line. Known failures (`KNOWN`: tests of upstream's internals rather than
its API, documented differences, upstream features that are not here) are listed apart
with their reasons; two more ratios leave out the internals, and every known failure.
`EXCLUDED` lists what is not run and why.

``--e2e`` runs upstream's end-to-end jobs instead (`E2E_FOLDER`, each a PyFlink job on a
mini-cluster; `E2E_EXCLUDED` leaves out the cross-language ones): only ``e2e_tests/`` is
copied, and pytest runs in the copy's ``python`` folder, because the jobs' Python workers
import the copied modules by name and find them from their working directory. That needs
this package installed editable (``tools/setup.sh``): a namespace ``flink_agents`` folder in
the working directory then holds the tests while every other ``flink_agents`` module is
this package's.

The e2e jobs on Ollama (the ReAct and YAML agents) meet a fake Ollama server
(tools/fake_ollama.py: rule-based, deterministic answers, hashed-word embeddings), started
on 127.0.0.1:11434 for the run and stopped after it, and a fake ``ollama`` CLI first on
``PATH`` (upstream's ``pull_model`` runs ``ollama pull``; ``OLLAMA_HOST`` names the fake):
the model connection is the only change. The run stops with a message when port 11434 is
taken; ``--real-ollama`` uses the server (and the ``ollama`` CLI) already there. The
provider tests upstream skips without a key (skills, several providers, the long-term
memory job's OpenAI-compatible chat model) run against a local model server
(`tools/upstream_e2e_models.py`: fake keys, base URLs at 127.0.0.1, and the skills'
commands allowed).
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections import defaultdict
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))

from tools.fake_ollama import (  # noqa: E402
    DEFAULT_PORT,
    FakeOllamaServer,
    OllamaPortInUseError,
    write_cli,
)
from tools.upstream_e2e_models import e2e_model_server  # noqa: E402

__all__ = [
    "AREAS",
    "BY_DESIGN",
    "E2E_EXCLUDED",
    "E2E_FOLDER",
    "EXCLUDED",
    "INTERNALS",
    "KNOWN",
    "NOT_HERE",
    "Outcome",
    "area_of",
    "build_tree",
    "known_reason",
    "main",
    "summarize",
]

EXCLUDED: dict[str, str] = {
    "e2e_tests/*": (
        "end-to-end jobs, each a PyFlink job on a mini-cluster: run them with --e2e (copied "
        "here only for the helpers other tests import)"
    ),
}
"""Upstream test paths (relative to ``python/flink_agents/``, fnmatch) that are not run."""

E2E_FOLDER = "e2e_tests/e2e_tests_integration"
"""What ``--e2e`` runs: upstream's end-to-end jobs, each on a PyFlink mini-cluster."""

E2E_EXCLUDED: dict[str, str] = {
    "e2e_tests/e2e_tests_resource_cross_language/*": (
        "Java resources and Java actions in Python agents (cross-language): there is no "
        "Java runtime here, by design"
    ),
}
"""What ``--e2e`` does not run, and why."""

AREAS: tuple[tuple[str, str], ...] = (
    ("api/yaml/*", "yaml"),
    ("api/tests/test_skills.py", "skills"),
    ("runtime/skill/*", "skills-runtime"),
    ("api/embedding_models/*", "embedding_models"),
    ("integrations/embedding_models/*", "embedding_models"),
    ("integrations/vector_stores/*", "vector_stores"),
    ("api/tests/test_memory_event.py", "memory"),
    ("runtime/memory/*", "memory"),
    ("runtime/tests/test_*memory*", "memory"),
    ("api/*", "api"),
    ("plan/*", "plan"),
    ("integrations/chat_models/*", "chat_models"),
    ("integrations/mcp/*", "mcp"),
    ("cli/*", "cli"),
    ("examples/*", "examples"),
    ("e2e_tests/*", "e2e"),
    ("runtime/*", "runtime"),
)
"""Area of a test file (relative path, fnmatch; first match wins)."""

INTERNALS = "internals"
BY_DESIGN = "by design"
NOT_HERE = "not here"

_DOC = "docs/migrating-from-flink-agents.md"

KNOWN: dict[str, tuple[str, str]] = {
    # ---- tests of upstream's internals, not of its API
    "runtime/tests/test_python_java_utils.py::*": (
        INTERNALS,
        "the Python half of its Java bridge (pemja calls from its Java operator)",
    ),
    "runtime/tests/test_cross_language_metric_group.py::*": (
        INTERNALS,
        "its Java resource wrappers and Java metric groups (the Java bridge)",
    ),
    "runtime/tests/test_java_embedding_model.py::*": (INTERNALS, "its Java embedding wrapper"),
    "runtime/tests/test_plan_java_function_routing.py::*": (
        INTERNALS,
        "routing of Java actions in its plan (no Java here)",
    ),
    "runtime/tests/test_async_thread_pool.py::*": (
        INTERNALS,
        "the thread pool of its FlinkRunnerContext (the runtime here is another one)",
    ),
    "runtime/tests/test_flink_runner_context_*.py::*": (
        INTERNALS,
        "its FlinkRunnerContext class (the runtime here has its own contexts)",
    ),
    "runtime/tests/test_remote_execution_environment.py::*": (
        INTERNALS,
        "its RemoteAgentBuilder (the job graph it hands to its Java operator)",
    ),
    "runtime/tests/test_durable_execution.py::*": (
        INTERNALS,
        "its durable-execution internals (call records for its Java action-state store)",
    ),
    "runtime/tests/test_memory_value_validation.py::*": (
        INTERNALS,
        "imports its runtime's FlinkMemoryObject (memory values are checked here too: "
        "tests/api/test_memory_* and tests/runtime)",
    ),
    "runtime/memory/mem0/tests/test_mem0_op_recording.py::*": (
        INTERNALS,
        "how its mem0 memory records operations for its durable store",
    ),
    "runtime/memory/mem0/tests/test_mem0_recording_hook.py::*": (
        INTERNALS,
        "its hook into mem0's private call path",
    ),
    "runtime/skill/tests/*": (
        INTERNALS,
        "its skill runtime's internal classes (repositories, manager, parser) and prompt wording",
    ),
    "plan/tests/*": (
        INTERNALS,
        "its plan layer: the function cache, built-in actions' helpers, Action and "
        "AgentPlan models and their JSON, Java function tools (the plan here is another)",
    ),
    "plan/tools/bash/tests/*": (
        INTERNALS,
        "its bash tool's tree-sitter validator (here: a shell lexer that refuses more, "
        f"{_DOC}#flink_agentsapiskills)",
    ),
    "api/tests/test_core_options.py::*": (
        INTERNALS,
        "reads its own source file, imports its runtime's FlinkRunnerContext",
    ),
    "api/chat_models/tests/test_chat_model_base.py::test_chat_*": (
        INTERNALS,
        "sets the setup's private _resolved_connection",
    ),
    "api/chat_models/tests/test_chat_model_base.py::test_setup_routes_output_schema_*": (
        INTERNALS,
        "sets the setup's private _resolved_connection",
    ),
    "api/yaml/tests/test_specs.py::test_development_skill_main_schema_*": (
        INTERNALS,
        "compares two files of its repository",
    ),
    "integrations/chat_models/anthropic/tests/test_anthropic_response_parsing.py::*": (
        INTERNALS,
        "its adapter's private helpers (_supports_json_prefill, ...) and native structured output",
    ),
    "integrations/chat_models/openai/tests/test_openai_response_parsing.py::*": (
        INTERNALS,
        "its private openai_utils module",
    ),
    "integrations/chat_models/tests/test_ollama_chat_model.py::*": (
        INTERNALS,
        "its adapter's private _extract_reasoning, and a live Ollama",
    ),
    "integrations/chat_models/tests/test_tongyi_chat_model.py::*": (
        INTERNALS,
        "mocks its adapter's DashScope call path",
    ),
    "integrations/chat_models/tests/test_output_schema_param_declared.py::*": (
        INTERNALS,
        "signatures of its Java chat model wrapper and e2e agents",
    ),
    # ---- documented differences
    "api/tests/test_cross_language_event_snapshots.py::*": (
        BY_DESIGN,
        "messages are typed blocks (their JSON is this project's), no RowTypeInfo output "
        "schema on a ChatRequestEvent",
    ),
    "api/tests/test_decorators.py::test_action_decorator_rejects_non_string_conditions*": (
        BY_DESIGN,
        "@action takes event classes too",
    ),
    "api/tests/test_run_event.py::test_from_event_missing_attributes_raises": (
        BY_DESIGN,
        "from_event copies the attributes; a missing one fails when read",
    ),
    "api/chat_models/tests/test_chat_model_base.py::test_missing_model_raises_*": (
        BY_DESIGN,
        "a setup's model defaults to the provider's (providers.md)",
    ),
    "api/yaml/tests/test_specs.py::test_checked_in_schema_matches_pydantic_models": (
        BY_DESIGN,
        "the schema's descriptions are this project's (docs/yaml-schema.json)",
    ),
    "api/yaml/tests/test_loader.py::test_build_agents_keeps_unknown_tool_injected_arg_*": (
        BY_DESIGN,
        "an injected argument that is no parameter is refused when the YAML is read "
        "(upstream: when its plan is built)",
    ),
    "api/yaml/tests/test_loader.py::test_build_agents_builds_java_tool_descriptor": (
        BY_DESIGN,
        "Java tools are refused when the YAML is read (no Java runtime here)",
    ),
    "integrations/chat_models/*/tests/test_*_chat_model.py::*": (
        BY_DESIGN,
        "other defaults (newer default models; max_retries 0, the runtime retries) and "
        "no constants for them (providers.md)",
    ),
    "integrations/chat_models/*/tests/test_*native_structured_output.py::*": (
        NOT_HERE,
        "native structured output (AUTO or PROMPT here)",
    ),
    # ---- upstream features that are not here
    "integrations/mcp/tests/test_mcp.py::test_mcp": (
        NOT_HERE,
        "its test server imports mcp.server.fastmcp, which the mcp 2.x installed here no "
        "longer has (renamed MCPServer): nothing listens on port 8000",
    ),
    "integrations/mcp/tests/test_mcp.py::test_serialize_mcp_server": (
        NOT_HERE,
        "JSON of an MCP server's auth object (an httpx.Auth such as OAuthClientProvider); "
        "here it is pickled with the agent",
    ),
    "integrations/mcp/tests/test_mcp.py::test_mcp_tool_roundtrip_preserves_metadata": (
        NOT_HERE,
        "upstream's MCPTool fields mcp_server and mcp_server_name (here: server)",
    ),
    "e2e_tests/e2e_tests_integration/e2e_tests_mcp/mcp_test.py::*": (
        NOT_HERE,
        "its MCP servers import mcp.server.fastmcp, which the mcp 2.x installed here no "
        "longer has (renamed MCPServer): the agent finds no server on ports 8000 and 8001",
    ),
    "examples/rag/tests/*": (
        NOT_HERE,
        "its examples package (upstream's examples are in examples/upstream/)",
    ),
}
"""Failures that are known (fnmatch on the node id, relative to ``python/flink_agents/``,
first match wins): tests of upstream's internals, documented differences and upstream
features that are not here (docs/migrating-from-flink-agents.md), each with its reason.
They are listed apart; the other failures are the open ones."""

PLUGIN = "_upstream_tests_plugin"
PLUGIN_SOURCE = textwrap.dedent(
    '''
    """Loads copied upstream test modules under their own names; flink_agents stays ours."""
    import importlib
    import importlib.abc
    import importlib.util
    import json
    import os
    import sys
    from pathlib import Path

    import pytest

    TREE = Path(os.environ["UPSTREAM_TESTS_TREE"]).resolve()
    REPORT = Path(os.environ["UPSTREAM_TESTS_REPORT"])
    INIT = "_package_init_.py"
    TEST_PARTS = {"tests", "e2e_tests"}


    class TestTreeFinder(importlib.abc.MetaPathFinder):
        """Finds flink_agents.<...>.tests.<...> modules in the copied tree, nothing else."""

        def find_spec(self, fullname, path=None, target=None):
            parts = fullname.split(".")
            if parts[0] != "flink_agents" or not TEST_PARTS.intersection(parts[1:]):
                return None
            base = TREE.joinpath(*parts)
            if base.is_dir():
                return importlib.util.spec_from_file_location(
                    fullname, base / INIT, submodule_search_locations=[str(base)]
                )
            module = base.with_suffix(".py")
            if module.is_file():
                return importlib.util.spec_from_file_location(fullname, module)
            return None


    # After pytest's assertion rewriter, which then rewrites the test modules (it finds
    # them through their package's __path__, which this finder sets).
    _after = [type(f).__name__ for f in sys.meta_path].index
    try:
        _position = _after("AssertionRewritingHook") + 1
    except ValueError:
        _position = 0
    sys.meta_path.insert(_position, TestTreeFinder())
    import flink_agents  # noqa: E402

    _ours = Path(flink_agents.__file__).resolve()
    if TREE in _ours.parents:
        raise SystemExit(f"flink_agents resolves into the upstream tree: {_ours}")


    def _dotted(path):
        return ".".join(Path(path).resolve().relative_to(TREE).with_suffix("").parts)


    class UpstreamModule(pytest.Module):
        def _getobj(self):
            try:
                return importlib.import_module(_dotted(self.path))
            except pytest.skip.Exception:
                raise
            except BaseException as error:
                raise self.CollectError(
                    f"{type(error).__name__}: {error}".splitlines()[0]
                ) from error


    def pytest_pycollect_makemodule(module_path, parent):
        return UpstreamModule.from_parent(parent, path=module_path)


    _out = REPORT.open("w", encoding="utf-8")


    def _first_line(report):
        crash = getattr(report.longrepr, "reprcrash", None)
        text = crash.message if crash is not None else str(report.longrepr)
        for line in text.splitlines():
            if line.strip():
                return line.strip()
        return "(no message)"


    def _write(record):
        _out.write(json.dumps(record) + "\\n")
        _out.flush()


    def pytest_runtest_logreport(report):
        if report.when == "call" or report.outcome != "passed":
            if report.skipped and report.when == "teardown":
                return
            if report.passed and report.when != "call":
                return
            outcome = "skipped" if report.skipped else report.outcome
            _write({
                "nodeid": report.nodeid,
                "when": report.when,
                "outcome": outcome,
                "message": "" if report.passed else _first_line(report),
            })


    def pytest_collectreport(report):
        if report.failed:
            _write({"nodeid": report.nodeid, "when": "collect", "outcome": "error",
                    "message": _first_line(report)})
    '''
)

PYTEST_INI = textwrap.dedent(
    """
    [pytest]
    markers =
        integration: upstream's tests that need live external services
    asyncio_default_fixture_loop_scope = function
    """
)


@dataclass
class Outcome:
    """One test's result (a module that failed to import stands for its test functions)."""

    nodeid: str
    """Node id relative to ``python/flink_agents/``."""
    outcome: str
    """``passed``, ``failed`` or ``skipped``."""
    message: str = ""
    """The first line of the failure."""
    when: str = "call"


@dataclass
class AreaCount:
    """The outcomes of an area (or of all)."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    known: dict[str, int] = field(default_factory=dict)
    """Known failures by kind (`KNOWN`)."""
    failures: list[Outcome] = field(default_factory=list)

    def ratio(self, *leaving_out: str) -> float:
        """Passed over passed + failed, the known failures of the kinds given left out."""
        failed = self.failed - sum(self.known.get(kind, 0) for kind in leaving_out)
        total = self.passed + failed
        return self.passed / total if total else 1.0


REPOSITORY_FILES = ("e2e-test/cross-language-event-snapshots", "docs/yaml-schema.json")
"""Files outside ``python/`` that upstream's tests read (by a path from their own file):
the event JSON snapshots of both languages and the YAML schema."""


def export_upstream(source: Path, rev: str, into: Path) -> Path:
    """Upstream's repository root with ``python/`` and `REPOSITORY_FILES`: SOURCE itself
    when it is a checkout, else exported from SOURCE (a git repository, bare or not)."""
    if (source / "python" / "flink_agents").is_dir():
        return source
    paths = ["python"]
    for path in REPOSITORY_FILES:
        found = subprocess.run(
            ["git", "-C", str(source), "cat-file", "-e", f"{rev}:{path}"],
            capture_output=True,
            check=False,
        )
        if found.returncode == 0:
            paths.append(path)
    archive = subprocess.run(
        ["git", "-C", str(source), "archive", rev, *paths], check=True, capture_output=True
    ).stdout
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _test_dirs(package: Path) -> Iterable[Path]:
    for path in sorted(package.rglob("*")):
        nested = any(parent.name in ("tests", "e2e_tests") for parent in path.parents)
        if path.is_dir() and path.name in ("tests", "e2e_tests") and not nested:
            yield path


def build_tree(upstream: Path, root: Path, *, e2e: bool = False) -> Path:
    """Copies upstream's test folders to ROOT/python/flink_agents/... (``__init__.py``
    renamed) and `REPOSITORY_FILES` to ROOT/...; the ``python`` folder of the copy. With
    ``e2e``, only the ``e2e_tests`` folder (see `main`)."""
    package = upstream / "python" / "flink_agents"
    tree = root / "python"
    for folder in _test_dirs(package):
        if e2e and folder.name != "e2e_tests":
            continue
        target = tree / "flink_agents" / folder.relative_to(package)
        shutil.copytree(folder, target, ignore=shutil.ignore_patterns("__pycache__"))
        for init in target.rglob("__init__.py"):
            init.rename(init.with_name("_package_init_.py"))
        for sub in [target, *[p for p in target.rglob("*") if p.is_dir()]]:
            init = sub / "_package_init_.py"
            if not init.exists():
                init.write_text("", encoding="utf-8")
    for path in REPOSITORY_FILES:
        source = upstream / path
        if source.is_dir():
            shutil.copytree(source, root / path)
        elif source.is_file():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, root / path)
    (tree / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    return tree


def area_of(relative: str) -> str:
    path = relative.split("::", 1)[0]
    for pattern, area in AREAS:
        if fnmatch.fnmatch(path, pattern):
            return area
    return "other"


def known_reason(nodeid: str) -> tuple[str, str] | None:
    """(kind, reason) of a known failure (`KNOWN`), None for an open one."""
    for pattern, known in KNOWN.items():
        if fnmatch.fnmatch(nodeid, pattern):
            return known
    return None


def _excluded(relative: str) -> bool:
    return any(fnmatch.fnmatch(relative, pattern) for pattern in EXCLUDED)


def _test_functions(module: Path) -> list[str]:
    """Test names of a module pytest could not import (parametrization not expanded)."""
    names: list[str] = []
    tree = ast.parse(module.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name.startswith("test"):
                names.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            names.extend(
                f"{node.name}::{item.name}"
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                and item.name.startswith("test")
            )
    return names


def _relative(nodeid: str) -> str:
    return nodeid.removeprefix("flink_agents/")


def read_outcomes(report: Path, tree: Path) -> list[Outcome]:
    """One outcome per test from the plugin's records (setup and teardown errors fail)."""
    by_id: dict[str, Outcome] = {}
    for line in report.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        nodeid = _relative(record["nodeid"])
        if record["when"] == "collect":
            module = tree / "flink_agents" / nodeid
            if not module.is_file():
                continue
            for name in _test_functions(module) or ["<module>"]:
                by_id[f"{nodeid}::{name}"] = Outcome(
                    f"{nodeid}::{name}", "failed", f"import: {record['message']}", "collect"
                )
            continue
        outcome = "failed" if record["outcome"] == "error" else record["outcome"]
        known = by_id.get(nodeid)
        if known is not None and known.outcome == "failed":
            continue  # the first failure (setup or call) is the one to report
        by_id[nodeid] = Outcome(nodeid, outcome, record["message"], record["when"])
    return list(by_id.values())


def summarize(outcomes: Iterable[Outcome]) -> dict[str, AreaCount]:
    areas: dict[str, AreaCount] = defaultdict(AreaCount)
    for outcome in outcomes:
        for name in (area_of(outcome.nodeid), "ALL"):
            count = areas[name]
            if outcome.outcome == "passed":
                count.passed += 1
            elif outcome.outcome == "skipped":
                count.skipped += 1
            else:
                count.failed += 1
                known = known_reason(outcome.nodeid)
                if known is not None:
                    count.known[known[0]] = count.known.get(known[0], 0) + 1
                if name != "ALL":
                    count.failures.append(outcome)
    return dict(areas)


_NOISE = re.compile(r"0x[0-9a-f]+|/tmp/\S+")


def _group_key(message: str) -> str:
    return _NOISE.sub("…", message)[:200]


def print_report(
    areas: dict[str, AreaCount],
    *,
    files: bool,
    outcomes: list[Outcome],
    excluded: dict[str, str] = EXCLUDED,
) -> None:
    print(
        "ratio: passed / (passed + failed); contract: without the tests of upstream's "
        "internals;\nopen: without every known failure (internals, by design, not here)\n"
    )
    header = ("area", "passed", "failed", "skipped", "ratio", "contract", "open")
    print(f"{header[0]:<18}" + "".join(f"{h:>9}" for h in header[1:]))
    for name in sorted(areas, key=lambda n: (n == "ALL", n)):
        c = areas[name]
        row = (c.passed, c.failed, c.skipped)
        ratios = (c.ratio(), c.ratio(INTERNALS), c.ratio(INTERNALS, BY_DESIGN, NOT_HERE))
        print(
            f"{name:<18}" + "".join(f"{v:>9}" for v in row) + "".join(f"{r:>9.2f}" for r in ratios)
        )
    if files:
        per_file: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        for outcome in outcomes:
            index = ("passed", "failed", "skipped").index(outcome.outcome)
            per_file[outcome.nodeid.split("::", 1)[0]][index] += 1
        print("\nfile (passed / failed / skipped)")
        for name, (passed, failed, skipped) in sorted(per_file.items()):
            print(f"  {name}: {passed} / {failed} / {skipped}")
    failures = [f for name, c in areas.items() if name != "ALL" for f in c.failures]
    open_failures = [f for f in failures if known_reason(f.nodeid) is None]
    groups: dict[str, list[str]] = defaultdict(list)
    for outcome in open_failures:
        groups[_group_key(outcome.message)].append(outcome.nodeid)
    print(f"\nOpen failures ({len(open_failures)}), by first error line, largest first:")
    for message, ids in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        print(f"\n[{len(ids)}] {message}")
        for nodeid in sorted(ids):
            print(f"    {nodeid}")
    by_reason: dict[tuple[str, str], list[Outcome]] = defaultdict(list)
    for outcome in failures:
        known = known_reason(outcome.nodeid)
        if known is not None:
            by_reason[known].append(outcome)
    for kind in (INTERNALS, BY_DESIGN, NOT_HERE):
        reasons = {r: items for (k, r), items in by_reason.items() if k == kind}
        total = sum(len(items) for items in reasons.values())
        print(f"\nKnown, {kind} ({total}):")
        for reason, items in sorted(reasons.items(), key=lambda item: -len(item[1])):
            print(f"\n[{len(items)}] {reason}")
            for outcome in sorted(items, key=lambda o: o.nodeid):
                print(f"    {outcome.nodeid}: {outcome.message[:140]}")
    print("\nNot run:")
    for pattern, reason in excluded.items():
        print(f"  {pattern}: {reason}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("source", type=Path, help="upstream checkout or git repository")
    parser.add_argument("--rev", default="HEAD", help="revision to export from a git repository")
    parser.add_argument("--python", default=sys.executable, help="interpreter with our package")
    parser.add_argument("--keep", type=Path, help="build the tree here and keep it")
    parser.add_argument("--files", action="store_true", help="print counts per test file")
    parser.add_argument("--json", type=Path, help="write every outcome to this file")
    parser.add_argument(
        "--e2e",
        action="store_true",
        help=f"run upstream's end-to-end jobs ({E2E_FOLDER}) instead of its unit tests",
    )
    parser.add_argument(
        "--real-ollama",
        action="store_true",
        help="with --e2e: use the Ollama server on port 11434 and the ollama CLI on PATH, "
        "not the fake ones",
    )
    parser.add_argument(
        "--ollama-port",
        type=int,
        default=DEFAULT_PORT,
        help="with --e2e: the fake Ollama's port (0: a free one; the agents' Ollama "
        "connections call 11434 unless given a base_url: other ports are for tests)",
    )
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    argv = list(sys.argv[1:] if argv is None else argv)
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])  # pytest's arguments go after "--", anywhere
    args.pytest_args = [*args.pytest_args, *argv[split + 1 :]]

    workdir = Path(tempfile.mkdtemp(prefix="upstream-tests-"))
    fake_ollama: FakeOllamaServer | None = None
    try:
        if args.e2e and not args.real_ollama:
            try:
                fake_ollama = FakeOllamaServer(args.ollama_port).start()
            except OllamaPortInUseError as error:
                print(error, file=sys.stderr)
                return 2
            write_cli(workdir / "bin", args.python)
        upstream = export_upstream(args.source.resolve(), args.rev, workdir / "export")
        root = args.keep.resolve() if args.keep else workdir / "copy"
        if root.exists():
            shutil.rmtree(root)
        tree = build_tree(upstream, root, e2e=args.e2e)
        plugin_dir = workdir / "plugin"
        plugin_dir.mkdir()
        (plugin_dir / f"{PLUGIN}.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
        report = workdir / "outcomes.jsonl"
        excluded = E2E_EXCLUDED if args.e2e else EXCLUDED
        ignores = [f"--ignore-glob={tree / 'flink_agents' / pattern}" for pattern in excluded]
        target = tree / "flink_agents" / E2E_FOLDER if args.e2e else tree / "flink_agents"
        env = {
            **os.environ,
            "PYTHONPATH": str(plugin_dir),
            "UPSTREAM_TESTS_TREE": str(tree),
            "UPSTREAM_TESTS_REPORT": str(report),
        }
        if fake_ollama is not None:
            env["PATH"] = os.pathsep.join([str(workdir / "bin"), env.get("PATH", "")])
            env["OLLAMA_HOST"] = fake_ollama.base_url
        command = [
            args.python, "-P", "-m", "pytest", "-q", "-p", PLUGIN, "-p", "no:cacheprovider",
            "-c", str(tree / "pytest.ini"), "--rootdir", str(tree), "-o", "addopts=",
            "--no-header", "-rN", "--tb=no", "--continue-on-collection-errors",
            *ignores, *args.pytest_args, str(target),
        ]  # fmt: skip
        # The jobs' Python workers import the copied modules by name (cloudpickle ships
        # their agents by reference) without the plugin: they find them from their working
        # directory, the tree's (on their sys.path; "-P" keeps it off the tests' own).
        with e2e_model_server(workdir) if args.e2e else nullcontext({}) as model_env:
            env.update(model_env)  # the providers' tests answered by a local model server
            subprocess.run(command, cwd=tree if args.e2e else plugin_dir, env=env, check=False)
        outcomes = read_outcomes(report, tree)
        if args.json:
            args.json.write_text(
                json.dumps([o.__dict__ for o in outcomes], indent=1), encoding="utf-8"
            )
        print_report(summarize(outcomes), files=args.files, outcomes=outcomes, excluded=excluded)
    finally:
        if fake_ollama is not None:
            fake_ollama.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
