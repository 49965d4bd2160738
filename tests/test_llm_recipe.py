"""The self-hosted LLM recipe fits the sweep config that uses it: conf/cluster-llm.yaml's openai
system points at the service KubeRay makes for deploy/kubernetes/rayservice-llm.yaml, asks for the
model it serves, keeps no more requests in flight than its replicas take, never sends a request
longer than its context, and runs on nodes the RayJob recipe has. (The recipe itself needs GPUs and
was not run here.)"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import yaml

from biaseval.config import load_config
from biaseval.run.plan import prepare
from biaseval.translate.backends.openai import OpenAIOptions, OpenAITranslator
from conftest import REPO

SERVICE = REPO / "deploy" / "kubernetes" / "rayservice-llm.yaml"
CONFIG = REPO / "conf" / "cluster-llm.yaml"


def _recipe():
    service = yaml.safe_load(SERVICE.read_text(encoding="utf-8"))
    [app] = yaml.safe_load(service["spec"]["serveConfigV2"])["applications"]
    [llm] = app["args"]["llm_configs"]
    return service, app, llm


def test_the_config_points_at_the_service_and_its_model(data_dir):
    service, app, llm = _recipe()
    assert service["kind"] == "RayService" and app["import_path"] == "ray.serve.llm:build_openai_app"
    assert app["route_prefix"] == "/"
    [(name, system)] = load_config(CONFIG).systems.items()
    assert system.backend == "openai"
    options = OpenAIOptions.model_validate(system.options)
    url = urlsplit(options.base_url)
    namespace = service["metadata"].get("namespace", "default")
    assert url.hostname == f"{service['metadata']['name']}-serve-svc.{namespace}.svc.cluster.local"
    assert (url.scheme, url.port, url.path) == ("http", 8000, "/v1")  # the Serve proxy's port and the OpenAI app
    assert options.allow_insecure_http and options.no_key  # in-cluster, and Ray Serve LLM checks no key
    assert options.model == llm["model_loading_config"]["model_id"]
    assert llm["model_loading_config"]["model_source"] in system.version


def test_the_rate_limit_and_concurrency_are_sized_to_the_deployment(data_dir):
    service, _, llm = _recipe()
    config = load_config(CONFIG)
    [system] = config.systems.values()
    deployment = llm["deployment_config"]
    scaling = deployment["autoscaling_config"]
    in_flight = system.actors * system.concurrency
    assert in_flight <= scaling["max_replicas"] * deployment["max_ongoing_requests"]  # never over what it holds
    assert in_flight >= scaling["min_replicas"] * scaling["target_ongoing_requests"]  # enough to scale it up
    assert llm["engine_kwargs"]["max_num_seqs"] >= deployment["max_ongoing_requests"]
    # every replica has a GPU node of its own
    [gpu] = [g for g in service["spec"]["rayClusterConfig"]["workerGroupSpecs"]
             if "nvidia.com/gpu" in g["template"]["spec"]["containers"][0]["resources"]["limits"]]
    per_replica = llm["engine_kwargs"].get("tensor_parallel_size", 1)
    assert int(gpu["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]) == per_replica
    assert gpu["maxReplicas"] >= scaling["max_replicas"]
    # the tokens/min ceiling is not what binds at the request rate (a request costs prompt + max_tokens)
    options = OpenAIOptions.model_validate(system.options)
    prepared = prepare(config, CONFIG.parent)
    longest = 0
    for suite, data in prepared.suites.items():
        items = data.slice(0, data.size)
        for (tgt,), group in items.group_by(["tgt_lang"]):
            source = max(group["source"].to_list(), key=len)
            longest = max(longest, OpenAITranslator.tokens_per_batch(options, [source], data.suite.src_lang, tgt).quota)
    # and no request is longer than the engine's context
    assert longest <= llm["engine_kwargs"]["max_model_len"]
    typical = OpenAITranslator.tokens_per_batch(options, ["I've known her for a long time, my friend works as a "
                                                          "construction worker."], "en", "de").quota
    assert system.limits.tokens_per_min >= system.limits.requests_per_s * 60 * typical


def test_the_sweep_runs_on_nodes_the_rayjob_recipe_has(data_dir):
    job = yaml.safe_load((REPO / "deploy" / "kubernetes" / "rayjob-sweep.yaml").read_text(encoding="utf-8"))
    advertised = set()
    for group in job["spec"]["rayClusterSpec"]["workerGroupSpecs"]:
        advertised |= set(json.loads(json.loads(group["rayStartParams"]["resources"])))
    [system] = load_config(CONFIG).systems.values()
    assert set(system.resources) <= advertised and system.num_gpus == 0  # clients on CPU nodes
    assert load_config(CONFIG).cache.path.startswith("s3://")  # one store every node reaches
