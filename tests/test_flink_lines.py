"""The supported Flink lines agree in the three places that name them: the package's
apache-flink requirement (installable next to each line's releases, nothing newer),
tools/flink_lines.sh (the smoke set runs on each) and docs/deployment.md's table."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

# Every supported line with its first release and the newest (the one tools/flink_lines.sh
# installs today): the requirement must admit both.
LINES = {
    "1.20": ["1.20.0", "1.20.5"],
    "2.0": ["2.0.0", "2.0.2"],
    "2.1": ["2.1.0", "2.1.3"],
    "2.2": ["2.2.0", "2.2.1"],
    "2.3": ["2.3.0"],
}


def _flink_requirement() -> Requirement:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (spec,) = [d for d in config["project"]["dependencies"] if d.startswith("apache-flink")]
    return Requirement(spec)


def test_the_requirement_admits_every_supported_line_and_nothing_newer() -> None:
    specifier = _flink_requirement().specifier
    for line, releases in LINES.items():
        for release in releases:
            assert specifier.contains(Version(release)), f"{release} ({line}) is refused"
    for unsupported in ("1.19.3", "2.4.0", "3.0.0"):
        assert not specifier.contains(Version(unsupported)), f"{unsupported} is admitted"


def test_the_smoke_script_runs_every_line() -> None:
    script = (ROOT / "tools" / "flink_lines.sh").read_text()
    match = re.search(r"^ALL_LINES=\(([^)]*)\)", script, re.MULTILINE)
    assert match, "ALL_LINES=(...) not found in tools/flink_lines.sh"
    assert match.group(1).split() == list(LINES)


def test_the_deployment_page_has_a_row_per_line() -> None:
    page = (ROOT / "docs" / "deployment.md").read_text()
    rows = re.findall(r"^\| (\d+\.\d+)(?: LTS)? \|", page, re.MULTILINE)
    assert rows == list(LINES)
