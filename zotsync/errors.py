"""One error base; each subclass carries the exit code the CLI maps it to."""

from __future__ import annotations


class ZotsyncError(Exception):
    """A failure the user can act on; its message is the one line printed on stderr."""

    exit_code = 1


class ConfigError(ZotsyncError):
    """Usage or configuration problem: bad key, malformed YAML, missing file or credentials."""

    exit_code = 2


class CatalogueError(ConfigError):
    """The curated catalogue cannot be read or does not follow its schema."""


class SourceError(ZotsyncError):
    """The Zotero source failed (HTTP, unreadable snapshot or database) after any retries."""


class StoreError(ZotsyncError):
    """The local SQLite store is unusable, or another run holds its lock."""


class ExportError(ZotsyncError):
    """An export could not be written."""


class FileError(ZotsyncError):
    """A file or folder zotsync makes (a log file, what `init` writes, the schedule's log folder) cannot
    be made or opened: a run-time failure (exit 1) like an export that cannot be written, not a usage
    error."""


class Interrupted(ZotsyncError):
    """Ctrl-C (SIGINT) while a command ran: exit 130, one line, the store as the interrupted
    transaction found it."""

    exit_code = 130

    def __init__(self) -> None:
        super().__init__("interrupted")

    @staticmethod
    def of(signal: BaseException | None) -> Interrupted:
        """How a run stopped by `signal` (a KeyboardInterrupt, or Terminated for SIGTERM) ends."""
        return TerminatedRun() if isinstance(signal, Terminated) else Interrupted()


class Terminated(KeyboardInterrupt):
    """SIGTERM (`timeout`, systemd stopping the unit, `kill`), raised in the main thread like Ctrl-C, so
    that the run unwinds the same way: transactions roll back, the lock is released, the log ends."""


class TerminatedRun(Interrupted):
    """A run ended by SIGTERM: exit 143 (128 + 15, as the shell reports it), one line."""

    exit_code = 143

    def __init__(self) -> None:
        ZotsyncError.__init__(self, "terminated (SIGTERM)")


class TooMuchRemoval(ZotsyncError):
    """The safety valve: a pull would remove more of the page than `sync.max_removal` allows."""


class EmptiedPage(TooMuchRemoval):
    """The safety valve's other side: a sync would leave the page empty where it had entries."""
