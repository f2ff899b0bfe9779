"""Runs upstream's (Apache Flink Agents') own Python tests against this package.

Usage::

    .venv/bin/python tools/upstream_tests.py /work/.mirror/apache+flink-agents/repo
    .venv/bin/python tools/upstream_tests.py ~/src/flink-agents --files -k yaml

SOURCE is an upstream checkout (its root or its ``python/`` folder) or a git repository,
bare mirrors included (its ``python/`` tree at ``--rev``, default ``HEAD``, is exported with
``git archive``). A measurement, not part of CI: upstream's tests are copied to a temporary
tree and never into this repository.

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
their first error line; those of tests that check upstream's internals rather than its API
(`INTERNALS`) are listed apart with the reason, and a second ratio leaves them out.
`EXCLUDED` lists what is not run and why.
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
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "AREAS",
    "EXCLUDED",
    "INTERNALS",
    "Outcome",
    "area_of",
    "build_tree",
    "internal_reason",
    "main",
    "summarize",
]

EXCLUDED: dict[str, str] = {
    "e2e_tests/*": (
        "end-to-end jobs: they need upstream's Java runtime jar on a Flink cluster and a "
        "live Ollama or provider (copied only for the helpers other tests import)"
    ),
}
"""Upstream test paths (relative to ``python/flink_agents/``, fnmatch) that are not run."""

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
    ("runtime/*", "runtime"),
)
"""Area of a test file (relative path, fnmatch; first match wins)."""

INTERNALS: dict[str, str] = {
    "runtime/tests/test_python_java_utils.py::*": (
        "upstream's Python half of its Java bridge (pemja calls from its Java operator)"
    ),
    "runtime/tests/test_cross_language_metric_group.py::*": (
        "its Java resource wrappers and Java metric groups (the Java bridge)"
    ),
    "runtime/tests/test_java_embedding_model.py::*": "its Java embedding-model wrapper",
    "runtime/tests/test_plan_java_function_routing.py::*": (
        "routing of Java actions in its plan (no Java actions here)"
    ),
    "runtime/tests/test_async_thread_pool.py::*": (
        "the thread pool of its FlinkRunnerContext (the runtime here is another one)"
    ),
    "runtime/tests/test_flink_runner_context_*.py::*": (
        "its FlinkRunnerContext class (the runtime here has its own contexts)"
    ),
    "runtime/tests/test_remote_execution_environment.py::*": (
        "its RemoteExecutionEnvironment internals (the job graph it hands to Java)"
    ),
    "runtime/tests/test_durable_execution.py::*": (
        "its durable-execution internals (call records for its Java action-state store)"
    ),
    "runtime/memory/mem0/tests/test_mem0_op_recording.py::*": (
        "how its mem0 memory records operations for its durable store"
    ),
    "runtime/memory/mem0/tests/test_mem0_recording_hook.py::*": (
        "its hook into mem0's private call path"
    ),
    "runtime/skill/tests/*": (
        "its skill runtime's internal classes (repositories, manager, parser) and prompt wording"
    ),
    "plan/tests/test_agent_plan_cross_language.py::*": "its plan's Java-action and JSON internals",
    "api/tests/test_cross_language_event_snapshots.py::*": (
        "byte-for-byte JSON its Java runtime reads (cross-language snapshots)"
    ),
    "api/tests/test_core_options.py::test_core_options_module_does_not_import_pyflink": (
        "reads upstream's own source file (api/core_options.py), not copied"
    ),
    "api/tests/test_core_options.py::test_runtime_import_chain_does_not_call_get_gateway": (
        "imports its runtime's FlinkRunnerContext module"
    ),
    "api/yaml/tests/test_specs.py::test_*checked_in_schema*": (
        "compares with upstream's checked-in docs/yaml-schema.json (its repository's file)"
    ),
    "api/yaml/tests/test_loader.py::test_build_agents_keeps_unknown_tool_injected_arg_*": (
        "by design: an injected argument that is not a parameter is refused when the YAML "
        "is read (upstream waits for its plan's validation)"
    ),
    "api/yaml/tests/test_loader.py::test_build_agents_builds_java_tool_descriptor": (
        "by design: Java tools are refused when the YAML is read (no Java runtime here)"
    ),
    "integrations/embedding_models/*tests/*": (
        "mocks of its own SDK call paths (the shared provider layer here makes other calls)"
    ),
}
"""Tests of upstream's internals (fnmatch on the node id, relative to
``python/flink_agents/``): their failures are listed apart, with the reason."""

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


    sys.meta_path.insert(0, TestTreeFinder())
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
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    internals: int = 0
    failures: list[Outcome] = field(default_factory=list)

    def ratio(self, *, without_internals: bool = False) -> float:
        failed = self.failed - (self.internals if without_internals else 0)
        total = self.passed + failed
        return self.passed / total if total else 1.0


def export_python_tree(source: Path, rev: str, into: Path) -> Path:
    """The ``python/`` folder of SOURCE (a checkout or a git repository, bare or not)."""
    for candidate in (source / "python", source):
        if (candidate / "flink_agents").is_dir():
            return candidate
    archive = subprocess.run(
        ["git", "-C", str(source), "archive", rev, "python"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "python"


def _test_dirs(package: Path) -> Iterable[Path]:
    for path in sorted(package.rglob("*")):
        nested = any(parent.name in ("tests", "e2e_tests") for parent in path.parents)
        if path.is_dir() and path.name in ("tests", "e2e_tests") and not nested:
            yield path


def build_tree(upstream_python: Path, tree: Path) -> None:
    """Copies upstream's test folders to TREE/flink_agents/..., ``__init__.py`` renamed."""
    package = upstream_python / "flink_agents"
    for folder in _test_dirs(package):
        target = tree / "flink_agents" / folder.relative_to(package)
        shutil.copytree(folder, target, ignore=shutil.ignore_patterns("__pycache__"))
        for init in target.rglob("__init__.py"):
            init.rename(init.with_name("_package_init_.py"))
        for sub in [target, *[p for p in target.rglob("*") if p.is_dir()]]:
            init = sub / "_package_init_.py"
            if not init.exists():
                init.write_text("", encoding="utf-8")
    (tree / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")


def area_of(relative: str) -> str:
    path = relative.split("::", 1)[0]
    for pattern, area in AREAS:
        if fnmatch.fnmatch(path, pattern):
            return area
    return "other"


def internal_reason(nodeid: str) -> str | None:
    for pattern, reason in INTERNALS.items():
        if fnmatch.fnmatch(nodeid, pattern):
            return reason
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
                count.internals += internal_reason(outcome.nodeid) is not None
                if name != "ALL":
                    count.failures.append(outcome)
    return dict(areas)


_NOISE = re.compile(r"0x[0-9a-f]+|/tmp/\S+")


def _group_key(message: str) -> str:
    return _NOISE.sub("…", message)[:200]


def print_report(areas: dict[str, AreaCount], *, files: bool, outcomes: list[Outcome]) -> None:
    print(f"{'area':<18}{'passed':>7}{'failed':>7}{'skipped':>8}{'ratio':>7}{'w/o int.':>9}")
    for name in sorted(areas, key=lambda n: (n == "ALL", n)):
        count = areas[name]
        print(
            f"{name:<18}{count.passed:>7}{count.failed:>7}{count.skipped:>8}"
            f"{count.ratio():>7.2f}{count.ratio(without_internals=True):>9.2f}"
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
    contract = [f for f in failures if internal_reason(f.nodeid) is None]
    internals = [f for f in failures if internal_reason(f.nodeid) is not None]
    groups: dict[str, list[str]] = defaultdict(list)
    for outcome in contract:
        groups[_group_key(outcome.message)].append(outcome.nodeid)
    print(f"\nFailures ({len(contract)}), grouped by first error line, largest first:")
    for message, ids in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        print(f"\n[{len(ids)}] {message}")
        for nodeid in sorted(ids):
            print(f"    {nodeid}")
    by_reason: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in internals:
        by_reason[internal_reason(outcome.nodeid) or ""].append(outcome)
    print(f"\nInternals ({len(internals)}): tests of upstream's internals, not its API")
    for reason, items in sorted(by_reason.items(), key=lambda item: -len(item[1])):
        print(f"\n[{len(items)}] {reason}")
        for outcome in sorted(items, key=lambda o: o.nodeid):
            print(f"    {outcome.nodeid}: {outcome.message[:160]}")
    print("\nNot run:")
    for pattern, reason in EXCLUDED.items():
        print(f"  {pattern}: {reason}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("source", type=Path, help="upstream checkout or git repository")
    parser.add_argument("--rev", default="HEAD", help="revision to export from a git repository")
    parser.add_argument("--python", default=sys.executable, help="interpreter with our package")
    parser.add_argument("--keep", type=Path, help="build the tree here and keep it")
    parser.add_argument("--files", action="store_true", help="print counts per test file")
    parser.add_argument("--json", type=Path, help="write every outcome to this file")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="upstream-tests-"))
    try:
        upstream_python = export_python_tree(args.source.resolve(), args.rev, workdir)
        tree = args.keep.resolve() if args.keep else workdir / "tree"
        if tree.exists():
            shutil.rmtree(tree)
        build_tree(upstream_python, tree)
        plugin_dir = workdir / "plugin"
        plugin_dir.mkdir()
        (plugin_dir / f"{PLUGIN}.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
        report = workdir / "outcomes.jsonl"
        ignores = [f"--ignore-glob={tree / 'flink_agents' / pattern}" for pattern in EXCLUDED]
        env = {
            **os.environ,
            "PYTHONPATH": str(plugin_dir),
            "UPSTREAM_TESTS_TREE": str(tree),
            "UPSTREAM_TESTS_REPORT": str(report),
        }
        command = [
            args.python, "-m", "pytest", "-q", "-p", PLUGIN, "-p", "no:cacheprovider",
            "-c", str(tree / "pytest.ini"), "--rootdir", str(tree), "-o", "addopts=",
            "--no-header", "-rN", "--tb=no", "--continue-on-collection-errors",
            *ignores, *args.pytest_args, str(tree / "flink_agents"),
        ]  # fmt: skip
        subprocess.run(command, cwd=plugin_dir, env=env, check=False)
        outcomes = read_outcomes(report, tree)
        if args.json:
            args.json.write_text(
                json.dumps([o.__dict__ for o in outcomes], indent=1), encoding="utf-8"
            )
        print_report(summarize(outcomes), files=args.files, outcomes=outcomes)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
