"""Ray job entry point for a sweep.

Locally (starts its own Ray):      python jobs/sweep.py --config conf/paper.yaml --out runs/paper
On a cluster (Ray sets RAY_ADDRESS for submitted jobs):

    ray job submit --address http://HEAD:8265 --working-dir . \
        --runtime-env-json '{"pip": ["-e ."], "env_vars": {"BIASEVAL_DATA_DIR": "/mnt/data"}}' \
        -- python jobs/sweep.py --config conf/paper.yaml --out /mnt/shared/runs/paper

``--out`` must be a directory every node can write (a shared filesystem); rerunning the same
command resumes an interrupted sweep.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Running from a checkout without installing the package: make `biaseval` importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from biaseval.errors import BiasevalError  # noqa: E402
from biaseval.pipeline import sweep  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--address", default=None, help="Ray address (default: RAY_ADDRESS, else local)")
    args = parser.parse_args(argv)
    try:
        summary = sweep(args.config, args.out, address=args.address)
    except BiasevalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"report: {summary.run.report}\nmetrics: {summary.run.metrics} ({summary.metrics.height} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
