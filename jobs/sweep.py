"""Ray job entry point for a sweep: ``biaseval sweep`` with the same options and exit status.

Locally (starts its own Ray):      python jobs/sweep.py --config conf/paper.yaml --out runs/paper
On a cluster (Ray sets RAY_ADDRESS for submitted jobs):

    ray job submit --address http://HEAD:8265 --working-dir . \
        --runtime-env-json '{"pip": ["-e ."], "env_vars": {"BIASEVAL_DATA_DIR": "/mnt/data"}}' \
        -- python jobs/sweep.py --config conf/paper.yaml --out /mnt/shared/runs/paper

``--out`` is an object-store URI (``s3://bucket/runs/paper``: workers write their shards there,
the driver publishes the rest, ``_MANIFEST.json`` last) or a directory every node can write (a
shared filesystem). Rerunning the same command resumes an interrupted sweep.

Exits like ``biaseval sweep`` (so a RayJob fails when the sweep did not finish): 0 done (items
that recorded outputs lack are named, and are no error), 2 bad config or arguments, 3 a worker or
backend failed, 4 a live system left texts without a translation (a rerun retries them). The ``biaseval`` package must be importable: installed in the image, or the job's
``--working-dir`` (Ray puts it on PYTHONPATH).
"""

from __future__ import annotations

import sys

from biaseval.cli import run_command


def main(argv: list[str] | None = None) -> int:
    return run_command("sweep", argv)


if __name__ == "__main__":
    sys.exit(main())
