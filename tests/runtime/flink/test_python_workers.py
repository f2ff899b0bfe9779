"""Python worker setup: this interpreter for workers, its environment first for thread mode."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flink_agents.runtime.flink.python_workers import (
    embedded_interpreter_matches,
    prepare_worker_environment,
    python_worker_options,
    quiet_unused_filesystem_warning,
    site_packages_dirs,
    venv_bin_dir,
)


def test_prepare_puts_this_environment_first() -> None:
    env = {"PATH": os.pathsep.join(["/usr/bin", venv_bin_dir()]), "PYTHONPATH": "/repo"}
    prepare_worker_environment(env)
    prepare_worker_environment(env)
    path = env["PATH"].split(os.pathsep)
    assert path[0] == venv_bin_dir() and path.count(venv_bin_dir()) == 1
    python_path = env["PYTHONPATH"].split(os.pathsep)
    assert python_path[0] == "/repo"
    assert set(site_packages_dirs()) <= set(python_path)
    assert len(python_path) == len(set(python_path))


def test_prepare_keeps_java_bin_ahead(tmp_path: Path) -> None:
    java_bin = str(tmp_path / "jdk" / "bin")
    env = {"JAVA_HOME": str(tmp_path / "jdk"), "PATH": os.pathsep.join([java_bin, "/usr/bin"])}
    prepare_worker_environment(env)
    assert env["PATH"].split(os.pathsep)[:3] == [java_bin, venv_bin_dir(), "/usr/bin"]


def test_worker_options_name_this_interpreter() -> None:
    assert python_worker_options("process") == {
        "python.executable": sys.executable,
        "python.client.executable": sys.executable,
        "python.execution-mode": "process",
    }


def test_embedded_interpreter_is_the_first_python3_on_path(tmp_path: Path) -> None:
    other = tmp_path / "other-bin"
    other.mkdir()
    python3 = other / "python3"
    python3.write_text("#!/bin/sh\n")
    python3.chmod(0o755)
    assert embedded_interpreter_matches({"PATH": os.pathsep.join([venv_bin_dir(), str(other)])})
    assert not embedded_interpreter_matches({"PATH": str(other)})
    assert not embedded_interpreter_matches({"PATH": str(tmp_path / "nothing")})


@pytest.fixture
def beam_filesystems_logger() -> Iterator[logging.Logger]:
    """Beam's file-system logger, its filters as they were again after the test."""
    logger = logging.getLogger("apache_beam.io.filesystems")
    filters = list(logger.filters)
    yield logger
    logger.filters[:] = filters


def _gcs_warning(logger: logging.Logger, cause: str) -> None:
    """What Beam logs when its GCS file system fails to load (``apache_beam.io.filesystems``)."""
    logger.warning(
        "Failed to import GCSFileSystem; loading of this filesystem will be skipped. "
        "Error details: %s",
        ImportError(cause),
    )


def test_beams_gcs_warning_for_a_bare_google_cloud_package_is_dropped(
    beam_filesystems_logger: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    bare = "cannot import name 'storage' from 'google.cloud' (unknown location)"
    _gcs_warning(beam_filesystems_logger, bare)
    assert len(caplog.records) == 1  # logged as Beam logs it until the filter is there
    caplog.clear()
    quiet_unused_filesystem_warning()
    quiet_unused_filesystem_warning()  # installed once
    assert len(beam_filesystems_logger.filters) == 1
    _gcs_warning(beam_filesystems_logger, bare)
    assert caplog.records == []
    # Any other failure to load it, and anything else Beam logs there, still shows.
    _gcs_warning(beam_filesystems_logger, "cannot import name 'Blob' from 'google.cloud.storage'")
    beam_filesystems_logger.warning("Failed to import S3FileSystem; ...")
    assert [r.getMessage()[:35] for r in caplog.records] == [
        "Failed to import GCSFileSystem; loa",
        "Failed to import S3FileSystem; ...",
    ]
