"""What the Ray cluster offers a sweep: the Ray session it runs in (a private local one unless an
address is given, which stays on this machine: ``start_local_ray``), how many actors a system gets
(``actors_for``), and whether some live node can host a system's actor at all (``check_placement``).
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping

from biaseval.config import RunConfig, SystemConfig
from biaseval.errors import BiasevalError

# CPUs left to Ray's own tasks when actors are sized to the cluster ("auto"): an actor pool that takes
# every CPU starves the pipeline's read/write tasks.
RESERVED_CPUS = 1


def actors_for(cfg: SystemConfig, cluster: dict[str, float]) -> int:
    """How many actors host a system: its ``actors``, or for ``auto`` as many as the cluster's totals
    (``ray.cluster_resources()``) fit with the resources each actor asks for (GPUs, custom
    resources, CPUs less RESERVED_CPUS). An actor that asks for nothing (an API client) gets 1: its
    throughput is set by its quota and ``concurrency``, not by the cluster."""
    if cfg.actors != "auto":
        return cfg.actors
    wants = {"GPU": cfg.num_gpus, "CPU": cfg.num_cpus, **cfg.resources}
    fits = []
    for name, amount in wants.items():
        if amount and amount > 0:
            total = cluster.get(name, 0.0) - (RESERVED_CPUS if name == "CPU" else 0)
            fits.append(int(total // amount))
    return max(1, min(fits)) if fits else 1


# A private local Ray stays on this machine (docs/cluster.md, "A local Ray stays on this machine"):
# these settings reach every process it starts, through the environment they inherit.
LOCAL_RAY_SETTINGS = {
    # one node, on 127.0.0.1: Ray's servers listen on loopback only, and no process asks the route to
    # 8.8.8.8 which address is its own (a UDP connect, Ray's way of finding a node's address)
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    # no usage reports to usage-stats.ray.io (ray.init turns them off too; said here for the record)
    "RAY_USAGE_STATS_ENABLED": "0",
    # the actors are the sweep's work, not background chores: Ray starts workers at niceness 15, which
    # on a busy machine leaves them about 3 % of a core against any ordinary process (a sweep crawls,
    # an actor's start misses its deadline). Ray's own job submission sets 0 for the same reason.
    "RAY_worker_niceness": "0",
}
# First on the PYTHONPATH of Ray's processes: its sitecustomize turns off the dashboard's cloud probe,
# the one call no setting reaches (see the file)
RAY_STARTUP = Path(__file__).resolve().parent / "ray_startup"


def local_ray_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the settings that keep a local Ray on this machine: LOCAL_RAY_SETTINGS, and
    RAY_STARTUP put before whatever PYTHONPATH ``env`` has (kept: users and tools set their own)."""
    path = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(RAY_STARTUP)]
    return {**env, **LOCAL_RAY_SETTINGS, "PYTHONPATH": os.pathsep.join([str(RAY_STARTUP), *path])}


def start_local_ray(num_cpus: int, **options) -> None:
    """``ray.init`` of a new private Ray on this machine (never one that `ray start` left running here),
    without the dashboard, that attempts no connection beyond loopback: its processes are started
    with ``local_ray_env``, and this process gives them 127.0.0.1 as the node's address. This
    process's environment and Ray's settings in it are left as they were."""
    import ray
    from ray._private import ray_constants

    ours = {key: value for key, value in local_ray_env(os.environ).items() if os.environ.get(key) != value}
    saved = {key: os.environ.get(key) for key in ours}
    os.environ.update(ours)
    # Ray read RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER when this process imported it; the node's address is
    # chosen here, from this constant, at the time of the call
    multi_node = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **options)
    finally:  # put back what was there, except what ray.init itself changed meanwhile
        ray_constants.ENABLE_RAY_CLUSTER = multi_node
        for key, value in saved.items():
            if os.environ.get(key) != ours[key]:
                continue
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _job_env_vars() -> dict:
    """The env_vars of the runtime_env this process was submitted with (``ray job submit``), if any."""
    import json

    try:
        job = json.loads(os.environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR") or "{}")
    except ValueError:
        return {}
    return (job.get("runtime_env") or {}).get("env_vars") or {}


def ray_running(address: str | None = None) -> bool:
    """Whether a sweep's Ray is there without starting one: Ray is up in this process, or a cluster's
    address is given (``address`` or RAY_ADDRESS). A private local Ray is started only when there is
    work for it."""
    import ray

    return ray.is_initialized() or bool(address or os.environ.get("RAY_ADDRESS"))


@contextmanager
def ray_session(address: str | None = None, *, verbose: bool = False) -> Iterator[None]:
    """Use a running Ray, connect to ``address``/``RAY_ADDRESS``, or start a private local one (and
    stop it after). Without an address a Ray started earlier with ``ray start`` on this host is not
    joined: a sweep joins a cluster only when told to. Ray's own warnings (its token authentication
    notice, say) and what the workers print (each ShardWorker's line naming its node) reach the
    terminal only when ``verbose``; the workers' lines stay in their log files (``worker-*.out`` in the
    Ray session's ``logs``) either way."""
    import ray

    if ray.is_initialized():
        yield
        return
    address = address or os.environ.get("RAY_ADDRESS")
    # The workers get the driver's BIASEVAL_* settings (data folder, offline, cache) — except those a
    # submitted job's runtime_env already sets: Ray refuses to merge the same variable twice.
    env = {k: v for k, v in os.environ.items() if k.startswith("BIASEVAL_") and k not in _job_env_vars()}
    quiet = {"logging_level": "WARNING" if verbose else "ERROR", "log_to_driver": verbose}
    if address:
        ray.init(address=address, runtime_env={"env_vars": env} if env else None, **quiet)
    else:
        # always a new cluster of our own (plain ray.init() would connect to one that `ray start` left
        # running here, and refuse num_cpus)
        start_local_ray(os.cpu_count() or 1, configure_logging=True, **quiet)
    try:
        yield
    finally:
        ray.shutdown()


class PlacementError(BiasevalError):
    """A system asks for resources that no live node of the Ray cluster has."""


def actor_bundle(cfg: SystemConfig) -> dict[str, float]:
    """What one actor of the system asks Ray for (CPUs, GPUs, custom resources); zeros left out."""
    bundle = {"CPU": cfg.num_cpus, "GPU": cfg.num_gpus, **cfg.resources}
    return {name: amount for name, amount in bundle.items() if amount}


def unplaceable(bundle: dict[str, float], nodes: list[dict]) -> str | None:
    """None when some live node's total resources hold ``bundle`` (``ray.nodes()`` rows), else what
    is missing, in words."""
    alive = [node.get("Resources") or {} for node in nodes if node.get("Alive")]
    if any(all(total.get(k, 0.0) >= v for k, v in bundle.items()) for total in alive):
        return None
    short = [f"{k!r} ({v:g} per actor; most on one live node: {max((t.get(k, 0.0) for t in alive), default=0):g})"
             for k, v in bundle.items() if not any(t.get(k, 0.0) >= v for t in alive)]
    if short:
        return "resource " + ", ".join(short)
    return f"no single live node holds all of {bundle}"


def check_placement(config: RunConfig, systems: list[str], *, stream=sys.stderr) -> None:
    """Before anything is submitted: every system's actor fits on some live node, or the sweep stops
    here naming the resource (a Ray actor that fits nowhere waits forever). With
    ``sweep.placement_wait_s`` the actors are created anyway — their demand is what makes an
    autoscaler add a node — and ``execute`` gives such a system up after that long."""
    import ray

    nodes = ray.nodes()
    for system in systems:
        missing = unplaceable(actor_bundle(config.systems[system]), nodes)
        if missing is None:
            continue
        if not config.sweep.placement_wait_s:
            raise PlacementError(
                f"systems.{system}: no live node of the Ray cluster has {missing}; nothing was sent. Start a "
                f"node with it (ray start --resources=...), change systems.{system}.resources/num_gpus/num_cpus, "
                f"or set sweep.placement_wait_s to wait for an autoscaler to add one")
        print(f"sweep: {system}: no live node has {missing} yet; waiting up to "
              f"{config.sweep.placement_wait_s:g} s for one (sweep.placement_wait_s)", file=stream, flush=True)
