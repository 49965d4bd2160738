"""Ray job entry point for drift monitoring (what a scheduled job runs): ``biaseval monitor`` with
the same options and exit status.

    python jobs/monitor.py --config conf/monitor.yaml [--dry-run] [--address ADDRESS]

Exits like ``biaseval monitor``: 0 nothing changed, 2 bad config or arguments, 5 significant drift,
7 a model changed (and nothing drifted), 6 a system unavailable (and nothing else), plus 10 when a
notification that was due could not be delivered (docs/monitoring.md, "Exit status"). The ``biaseval`` package must be importable: installed in the image, or the
job's ``--working-dir`` (Ray puts it on PYTHONPATH).
"""

from __future__ import annotations

import sys

from biaseval.cli import run_command


def main(argv: list[str] | None = None) -> int:
    return run_command("monitor", argv)


if __name__ == "__main__":
    sys.exit(main())
