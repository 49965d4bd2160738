"""Errors biaseval raises for bad input. Each message names the file, line or field at fault."""


class BiasevalError(Exception):
    """Base class: the CLI prints the message (no traceback) and exits non-zero."""

    exit_code = 2


class ConfigError(BiasevalError):
    """A config file is invalid: bad YAML, unknown name, wrong type, unknown key."""


class DataError(BiasevalError):
    """A dataset is missing, corrupt (checksum) or cannot be downloaded."""


class RecordedOutputError(BiasevalError):
    """A recorded-translation file does not line up with its source."""


class RunDirError(BiasevalError):
    """An output directory holds something a rerun cannot resume from."""


class SweepFailed(BiasevalError):
    """A worker died or a backend failed; finished shards are kept for the rerun."""

    exit_code = 3


class OutputError(BiasevalError):
    """The output location cannot be used: not writable, its object store unreachable, its bucket missing."""


class DiskFullError(OutputError):
    """A write found no space left (disk full, quota used up); the message names the file. Finished
    work is kept: free space and rerun the same command."""

    exit_code = 3


class RunLockedError(BiasevalError):
    """Another biaseval driver holds the run's lock; the message names it (host, pid, since)."""


class MissingExtra(ConfigError):
    """A package an optional part of biaseval needs is not installed (a backend's client library, the
    plotting or embedding extras)."""

    def __init__(self, backend: str, extra: str, module: str):
        super().__init__(f"backend {backend!r} needs {module!r}: pip install 'biaseval[{extra}]'")
