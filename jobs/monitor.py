"""Ray job entry point for drift monitoring (what a scheduled job runs).

    python jobs/monitor.py --config conf/monitor.yaml [--dry-run]

Exits like `biaseval monitor`: 0 nothing changed, 5 significant drift, 6 a system unavailable.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from biaseval.errors import BiasevalError  # noqa: E402
from biaseval.monitor import run_monitor  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--address", default=None)
    args = parser.parse_args(argv)
    try:
        result = run_monitor(args.config, dry_run=args.dry_run, address=args.address)
    except BiasevalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    for s in result.systems:
        print(f"{s.system}: {s.status}" + (f" — {s.message}" if s.message else ""))
    print(f"monitor: {'ALARM' if result.alarm else 'no significant change'}; run {result.run_id}")
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
