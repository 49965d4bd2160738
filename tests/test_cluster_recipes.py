"""The cluster recipes in deploy/ fit the sweep config they run: every custom resource a system asks
for is advertised by some node group, the entry points and configs they name exist and validate,
and results go to object storage."""

from __future__ import annotations

import json
import shlex

import yaml

from biaseval.config import load_config
from conftest import REPO

CONFIG = REPO / "conf" / "cluster-sweep.yaml"


def _asked(config) -> set[str]:
    return {name for system in config.systems.values() for name in system.resources}


def test_cluster_launcher_groups_advertise_what_the_systems_ask_for(data_dir):
    launcher = yaml.safe_load((REPO / "deploy" / "cluster" / "ray-cluster-aws.yaml").read_text(encoding="utf-8"))
    types = launcher["available_node_types"]
    assert launcher["head_node_type"] in types
    advertised = {name for t in types.values() for name in t.get("resources", {})}
    config = load_config(CONFIG)
    assert _asked(config) <= advertised
    gpu_groups = [t for t in types.values() if "gpu_worker" in t.get("resources", {})]
    assert gpu_groups and all(t["node_config"]["InstanceType"].startswith(("g", "p")) for t in gpu_groups)
    assert any("winomt" in c and "cluster" in c for c in launcher["setup_commands"])


def test_rayjob_runs_the_sweep_into_a_bucket_on_matching_groups(data_dir):
    job = yaml.safe_load((REPO / "deploy" / "kubernetes" / "rayjob-sweep.yaml").read_text(encoding="utf-8"))
    args = shlex.split(job["spec"]["entrypoint"])
    assert args[:2] == ["python", "jobs/sweep.py"] and (REPO / args[1]).is_file()
    config_path = REPO / args[args.index("--config") + 1]
    assert config_path == CONFIG
    assert args[args.index("--out") + 1].startswith("s3://")
    groups = job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    advertised = set()
    for group in groups:
        advertised |= set(json.loads(json.loads(group["rayStartParams"]["resources"])))
    assert _asked(load_config(config_path)) <= advertised
    gpu = [g for g in groups if "gpu_worker" in g["rayStartParams"]["resources"]]
    assert gpu[0]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"


def test_the_cluster_sweep_keeps_its_translation_store_where_every_node_reaches_it(data_dir):
    """Workers on several nodes send and write through one translation store: the cluster config puts
    it in object storage (a head-only path made workers on other nodes miss it), and waits for the
    autoscaler to add the GPU nodes its open model asks for."""
    from biaseval.run.filesystem import is_remote

    config = load_config(CONFIG)
    assert config.cache.path and is_remote(config.cache.path)
    assert config.sweep.placement_wait_s > 0
