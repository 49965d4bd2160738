"""Run at the start of every Python process of a local Ray that biaseval starts for itself
(``biaseval.run.cluster.local_ray_env`` puts this folder first on their PYTHONPATH).

In Ray's dashboard process only, it turns off the one network call no Ray setting reaches: the usage
module's cloud detection, which asks 169.254.169.254 (Azure, AWS) and metadata.google.internal
(a DNS query) which cloud the machine is on, whether usage statistics are on or off and with or
without ``include_dashboard`` (Ray 2.60: ``ray._common.usage.usage_lib.get_cloud_from_metadata_requests``,
called by ``UsageStatsHead.run``). The answer would only go into a usage report that is never sent.
Then the ``sitecustomize`` this file hides, if any, runs as it would have. Standard library only: it
runs before anything else, in every Python process Ray starts (workers included, where it does
nothing but that)."""

import os
import sys


def _in_rays_dashboard() -> bool:
    script = (sys.argv[0] if sys.argv else "").replace(os.sep, "/")
    return script.endswith("/ray/dashboard/dashboard.py")


def _no_cloud_probe() -> None:
    try:
        from ray._common.usage import usage_lib
    except ImportError as error:
        print(f"biaseval: Ray's usage module moved ({error}); its cloud probe may run", file=sys.stderr)
        return
    if not hasattr(usage_lib, "get_cloud_from_metadata_requests"):
        print("biaseval: Ray's usage module has no get_cloud_from_metadata_requests; its cloud probe may run",
              file=sys.stderr)
        return
    usage_lib.get_cloud_from_metadata_requests = lambda: "unknown"


def _run_the_sitecustomize_hidden_here() -> None:
    """Python runs only the first ``sitecustomize`` on sys.path: run the next one, as if this folder
    were not there (each folder once, so two files doing the same cannot loop)."""
    import importlib.machinery
    import importlib.util

    ran = sys.__dict__.setdefault("_sitecustomize_folders_run", set())
    here = os.path.dirname(os.path.abspath(__file__))
    ran.add(here)
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) not in ran]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None and spec.origin:
        ran.add(os.path.dirname(os.path.abspath(spec.origin)))
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


if _in_rays_dashboard():
    _no_cloud_probe()
_run_the_sitecustomize_hidden_here()
