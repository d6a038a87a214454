"""The exceptions simdex raises. Every one is a :class:`simdex.Error`; those with a natural
builtin counterpart also inherit it (``except ValueError`` catches :class:`InvalidArgument`)."""


class Error(Exception):
    """Base class of every simdex error; the message is the engine's, naming file, structure and
    offset where there is one."""


class CorruptError(Error):
    """Bytes on disk are not a valid simdex structure (damaged, truncated, or not simdex)."""


class UnsupportedError(Error):
    """A simdex file of a format version this build cannot read."""


class InvalidArgument(Error, ValueError):
    """An argument out of range (k above the design's, a bad design name or block size...)."""


class LockedError(Error):
    """Another writer holds the store's lock (open it with ``read_only=True`` to read)."""


class IoError(Error, OSError):
    """An operating-system call failed (missing path, permissions, full disk...)."""


class PoisonedError(Error):
    """An earlier write or fsync failed; the store refuses writes until reopened."""


class CancelledError(Error):
    """The operation was cancelled; nothing was published."""


class ForkError(Error):
    """A process forked from the one that opened a store for writing tried to write, flush or
    compact through the inherited handle. Open the store in the child once the parent has closed
    it, or send the writes to the parent; queries through the inherited handle are allowed."""


class RecoveryWarning(UserWarning):
    """Opening a store found a torn log tail (a write cut short by a crash, or damage to the last
    record): what it held is not applied. ``Store.recovery`` has the log, offset and byte count."""
