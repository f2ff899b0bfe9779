"""`flink_agents.api.version_compatibility`: upstream's checks of the installed Flink."""

from __future__ import annotations

import importlib.metadata

import pytest

from flink_agents.api.version_compatibility import FlinkVersionManager, flink_version_manager


def _manager(monkeypatch: pytest.MonkeyPatch, installed: str | None) -> FlinkVersionManager:
    def version(name: str) -> str:
        assert name == "apache-flink"
        if installed is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return installed

    monkeypatch.setattr(importlib.metadata, "version", version)
    return FlinkVersionManager()


@pytest.mark.parametrize(
    ("installed", "major", "ge_2_2", "lt_2_0"),
    [
        ("1.20.3", "1.20", False, True),
        ("2.2.0", "2.2", True, False),
        ("2.2.0-SNAPSHOT", "2.2", True, False),
        ("2.3", "2.3", True, False),
        ("2.1.0.rc1", "2.1", False, False),
    ],
)
def test_versions_compare_by_their_numeric_parts(
    monkeypatch: pytest.MonkeyPatch, installed: str, major: str, ge_2_2: bool, lt_2_0: bool
) -> None:
    manager = _manager(monkeypatch, installed)
    assert manager.version == installed
    assert manager.major_version == major
    assert manager.ge("2.2") is ge_2_2
    assert manager.ge("2.2.0-SNAPSHOT") is ge_2_2
    assert manager.lt("2.0.0") is lt_2_0


def test_without_apache_flink_there_is_no_version(monkeypatch: pytest.MonkeyPatch) -> None:
    manager = _manager(monkeypatch, None)
    assert (manager.version, manager.major_version) == (None, None)
    assert manager.ge("1.0") is False
    assert manager.lt("9.0") is False


def test_the_version_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    manager = _manager(monkeypatch, "2.0.1")
    assert manager.version == "2.0.1"
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "9.9.9")
    assert manager.version == "2.0.1"


def test_the_shared_manager_reads_the_installed_package() -> None:
    assert flink_version_manager.version == importlib.metadata.version("apache-flink")
    assert flink_version_manager.ge("1.20")
