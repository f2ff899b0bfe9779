"""Apache Beam internals: the warning its file systems log on import.

PyFlink's process mode imports Beam (in this process, when the first stream environment
starts). Beam 2.61 (the Beam of apache-flink 2.0.2, 2.1.3, 2.2.1 and 2.3.0) logs on logger
`apache_beam.io.filesystems` "Failed to import GCSFileSystem ..." with the ImportError as
its argument when a `google.cloud` package without `google-cloud-storage` is installed
(`googleapis-common-protos`, which the OpenTelemetry exporters install, makes one); Beam
2.48 (apache-flink 1.20.5) logs nothing there. An agent job reads nothing through Beam's
file systems, and every job script printed it.

Reach (checked on apache-beam 2.48.0 and 2.61.0): `quiet_unused_filesystem_warning` drops
that one message when its cause is such a package (the logger's name and the message's
first words). If a Beam changes them, the warning shows again, nothing fails; the check
in `tests/runtime/compat/` says so.
"""

from __future__ import annotations

import logging

from flink_agents._compat import Assumption
from flink_agents.runtime.flink.compat._source import source_has

__all__ = ["ASSUMPTIONS", "FILESYSTEMS_LOGGER", "quiet_unused_filesystem_warning"]

CHECKED_ON = "2.48.0, 2.61.0"

FILESYSTEMS_LOGGER = "apache_beam.io.filesystems"
_MESSAGE = "Failed to import GCSFileSystem"


def _logs_as_filtered() -> bool:
    module = FILESYSTEMS_LOGGER
    if not source_has(module, "GCSFileSystem"):
        return False
    if not source_has(module, _MESSAGE):
        return True  # Beam 2.48: it logs nothing to quiet
    return source_has(module, "_LOGGER = logging.getLogger(__name__)", f"'{_MESSAGE}; '")


GCS_WARNING = Assumption(
    "apache-beam",
    CHECKED_ON,
    f"Beam logs {_MESSAGE!r} with the ImportError as its argument on logger "
    f"{FILESYSTEMS_LOGGER!r}, or nothing",
    _logs_as_filtered,
)
ASSUMPTIONS = (GCS_WARNING,)


class _UnusedFilesystemWarning(logging.Filter):
    """Drops Beam's GCS warning when its only cause is a ``google.cloud`` package without
    ``google-cloud-storage`` in it; any other failure to load it is still logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(_MESSAGE):
            return True
        args = record.args if isinstance(record.args, tuple) else ()
        return not any("from 'google.cloud'" in str(arg) for arg in args)


def quiet_unused_filesystem_warning() -> None:
    """Install the filter on Beam's file-system logger (once). Beam logs the warning when it
    is first imported: in this process, when the first stream environment starts
    (`prepare_flink_environment` comes before)."""
    logger = logging.getLogger(FILESYSTEMS_LOGGER)
    if not any(isinstance(f, _UnusedFilesystemWarning) for f in logger.filters):
        logger.addFilter(_UnusedFilesystemWarning())
