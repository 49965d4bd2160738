"""Ray job entry point for a sweep.

Locally (starts its own Ray):      python jobs/sweep.py --config conf/paper.yaml --out runs/paper
On a cluster (Ray sets RAY_ADDRESS for submitted jobs):

    ray job submit --address http://HEAD:8265 --working-dir . \
        --runtime-env-json '{"pip": ["-e ."], "env_vars": {"BIASEVAL_DATA_DIR": "/mnt/data"}}' \
        -- python jobs/sweep.py --config conf/paper.yaml --out /mnt/shared/runs/paper

``--out`` is an object-store URI (``s3://bucket/runs/paper``: workers write their shards there,
the driver publishes the rest, ``_MANIFEST.json`` last) or a directory every node can write (a
shared filesystem). Rerunning the same command resumes an interrupted sweep.
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
    parser.add_argument("--out", required=True, help="run directory every node can write, or an object-store URI")
    parser.add_argument("--address", default=None, help="Ray address (default: RAY_ADDRESS, else local)")
    args = parser.parse_args(argv)
    try:
        summary = sweep(args.config, args.out, address=args.address)
    except BiasevalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    run = summary.run
    where = (lambda name: run.remote.uri(name)) if run.remote is not None else (lambda name: str(run.root / name))
    print(f"report: {where('report.md')}\nmetrics: {where('metrics.parquet')} ({summary.metrics.height} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
