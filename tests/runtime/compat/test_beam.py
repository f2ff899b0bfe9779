"""Apache Beam's GCS warning: what `compat.beam` assumes about it holds in the installed
Beam, and the filter drops it only for a bare `google.cloud` package."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from flink_agents.runtime.flink.compat.beam import ASSUMPTIONS, quiet_unused_filesystem_warning


@pytest.mark.parametrize("assumption", ASSUMPTIONS, ids=lambda a: a.text[:40])
def test_the_installed_beam_logs_as_assumed(assumption) -> None:
    assumption.check()


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
