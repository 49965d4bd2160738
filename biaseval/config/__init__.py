"""Run configuration: YAML in, one frozen, validated RunConfig out — before anything runs.
The package owns the config models (``monitor.py``: the ``monitor:`` section) and their checks; it
may import errors, registry, data, suites, translate and label (to resolve names), nothing later.

Every name is resolved here (suites, backends, detectors, datasets) and every backend's options
are validated by that backend's own model, so a typo fails in milliseconds with the file, line
and field named, not after an hour of paid API calls.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from biaseval.config.frozen import Frozen as _Frozen
from biaseval.config.monitor import MonitorConfig
from biaseval.config.naming import check_run_names, check_system_names, name_error
from biaseval.data.paths import from_file
from biaseval.data.yamlio import YamlDoc, read_yaml
from biaseval.errors import ConfigError
from biaseval.label.rules import Detector, RuleSet, builtin
from biaseval.names import Name
from biaseval.registry import Registry
from biaseval.suites import SUITES, resolve_suite
from biaseval.translate import TRANSLATORS
from biaseval.translate.conditions import Condition, Gender, conditions_of, expand
from biaseval.urls import check_url


def _unset(value) -> bool:
    return value is None


class RateLimits(_Frozen):
    """A system's quota, enforced across all its actors together."""

    requests_per_s: float | None = Field(default=None, gt=0)
    chars_per_min: float | None = Field(default=None, gt=0)
    # (left out of dumps while unset, as the price fields below: configs without them hash as before)
    tokens_per_min: float | None = Field(default=None, gt=0, exclude_if=_unset, description="tokens in any minute, as the backend "
                                         "estimates them before sending (LLM backends; see docs/backends.md)")
    burst_s: float = Field(default=0.0, ge=0, description="seconds' worth of capacity that may go at once "
                           "(0: strict pacing, never over the rate in any window)")


class RetryConfig(_Frozen):
    max_attempts: int = Field(default=6, ge=1, description="attempts per request before its texts are recorded as failed")
    backoff_s: float = Field(default=1.0, ge=0, description="first backoff; doubles per attempt, with full jitter")
    max_backoff_s: float = Field(default=60.0, ge=0)
    timeout_s: float = Field(default=60.0, gt=0, description="per-request timeout")


_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class SystemConfig(_Frozen):
    backend: str
    version: str = Field(default="", description="model/version string recorded on every row; a cloud system "
                         "needs one (or a max_age): its stored translations are reused only while it is the same")
    max_age: str | None = Field(default=None, pattern=r"^\s*\d+(\.\d+)?\s*[smhd]\s*$",
                                description="reuse stored translations only this young, e.g. 30d, 12h (a cloud "
                                            "model changes under the same name)")
    options: dict[str, Any] = Field(default_factory=dict)
    suites: tuple[str, ...] | None = Field(default=None, description="only these suites (default: all it covers)")
    targets: tuple[str, ...] | None = Field(default=None, min_length=1,
                                            description="only these target languages (default: every target of "
                                                        "each suite), e.g. a model for one language pair")
    actors: int | Literal["auto"] = Field(default=1, description="Ray actors hosting this system's backend, or "
                                          "'auto': as many as the cluster's resources fit (see sweep.actors_for)")
    num_cpus: float = Field(default=0.0, ge=0, description="CPUs reserved per actor (0 for I/O-bound clients)")
    num_gpus: float = Field(default=0.0, ge=0)
    resources: dict[str, float] = Field(default_factory=dict, description="custom Ray resources per actor")
    concurrency: int = Field(default=1, ge=1, description="requests in flight per actor")
    limits: RateLimits = RateLimits()
    retry: RetryConfig = RetryConfig()
    price_per_million_chars: float | None = Field(default=None, ge=0, description="for the cost estimate")
    price_per_million_input_tokens: float | None = Field(default=None, ge=0, exclude_if=_unset, description="for the cost estimate "
                                                         "of a backend billed in tokens (LLMs): prompt tokens")
    price_per_million_output_tokens: float | None = Field(default=None, ge=0, exclude_if=_unset, description="the same for the "
                                                          "tokens of the replies")
    max_chars: int | None = Field(default=None, ge=0, description="refuse a sweep that would send more")
    # gender control (biaseval/translate/conditions.py); left out of dumps while unset, so a config
    # without conditions hashes as before
    conditions: dict[str, Condition] = Field(default_factory=dict, exclude_if=lambda v: not v, description="named "
                                             "option overrides, each asking for a gender; each runs as its own "
                                             "system, <name>[<condition>]")
    requests: Gender | None = Field(default=None, exclude_if=lambda v: v is None, description="the gender this "
                                    "system is asked for (set on each condition's system; scored by control_acc)")
    condition_of: str | None = Field(default=None, exclude_if=lambda v: v is None, description="the system this "
                                     "one is a condition of (set by conditions:, never by hand)")

    @field_validator("actors", mode="before")
    @classmethod
    def _actors(cls, value):
        return _positive_actors(value)

    @property
    def max_age_s(self) -> float | None:
        if self.max_age is None:
            return None
        text = self.max_age.strip()
        return float(text[:-1]) * _AGE_UNITS[text[-1]]


def _positive_actors(value):
    """A whole number ≥ 1 or "auto" — one clear message for anything else."""
    if value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return value
    from pydantic_core import PydanticCustomError

    raise PydanticCustomError("actors", "expected a whole number of actors (at least 1) or 'auto', not {value}",
                              {"value": repr(value)})


class SweepConfig(_Frozen):
    shard_size: int = Field(default=5000, ge=1, description="items per shard (one Parquet file each)")
    texts_per_task: int = Field(default=1000, ge=1, description="texts a live system's actor sends per task "
                                "(its results reach the store when the task ends)")
    in_flight: int = Field(default=2, ge=1, description="tasks queued per actor")
    task_retries: int = Field(default=2, ge=0, description="times a task runs again on a new actor after its "
                              "actor died (process or node lost) before the sweep gives up")
    placement_wait_s: float = Field(default=0.0, ge=0, description="how long to wait for a live node that can host "
                                    "a system's actor (its CPUs, GPUs, custom resources), e.g. while an autoscaler "
                                    "adds one; 0: fail at once naming the missing resource")


class EmbeddingModel(_Frozen):
    path: str = Field(min_length=1, description="a fastText .bin, a .vec, or word2vec/GloVe text (relative to the config)")
    format: Literal["bin", "vec", "text"] | None = Field(default=None, description="default: from the extension")
    dim: int | None = Field(default=None, ge=1, description="expected dimension (checked)")


DEFAULT_PAIRS = {"en": ("she", "he"), "it": ("lei", "lui"), "es": ("ella", "él"), "fr": ("elle", "il"),
                 "de": ("sie", "er"), "pt": ("ela", "ele")}


class EmbeddingConfig(_Frozen):
    """The embedding-bias study: a model per language, the female/male target words per language,
    and how each language's intensity and direction are binned: ``bins`` equal-width bins over the
    observed range, or, with ``bin_width``, bins of that width from 0 (for every language)."""

    models: dict[str, EmbeddingModel] = Field(default_factory=dict, description="language -> model")
    pairs: dict[str, tuple[str, str]] = Field(default_factory=lambda: dict(DEFAULT_PAIRS),
                                              description="language -> (female word, male word)")
    bins: dict[str, int] = Field(default_factory=lambda: {"en": 5, "it": 3}, description="language -> bins")
    default_bins: int = Field(default=5, ge=1)
    bin_width: float | None = Field(default=None, gt=0, le=2, description="fixed-width bins from 0 (e.g. 0.1) "
                                    "instead of equal-width bins over the observed range")
    examples: int = Field(default=3, ge=0, description="example words listed per bin")

    def pair(self, language: str) -> tuple[str, str]:
        return self.pairs.get(language) or DEFAULT_PAIRS[language]

    def bins_for(self, language: str) -> int:
        return self.bins.get(language, self.default_bins)


class CacheConfig(_Frozen):
    """The translation store, which is also the cache: where it lives and whether to use it."""

    path: str | None = Field(default=None, description="a folder (relative to the config file) or an object-store "
                             "URI; default: $BIASEVAL_CACHE_DIR/translations")
    enabled: bool = True


class MetricsConfig(_Frozen):
    bootstrap: int = Field(default=1000, ge=1)
    seed: int = 0
    confidence: float = Field(default=0.95, gt=0, lt=1)


class OutputConfig(_Frozen):
    """Where ``--out`` URIs (s3://, gs://) are reached; credentials come from the standard chains."""

    allow_insecure_http: bool = Field(default=False, description="allow an http:// endpoint that is not a "
                                      "loopback address (signed requests and files then travel unencrypted)")
    endpoint: str | None = Field(default=None, description="an S3-compatible server, e.g. https://minio:9000 "
                                 "(default: $AWS_ENDPOINT_URL_S3 / $AWS_ENDPOINT_URL)")
    region: str | None = Field(default=None, description="default: $AWS_REGION / $AWS_DEFAULT_REGION")

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            check_url(value, allow_insecure_http=info.data.get("allow_insecure_http", False),
                      carries="the store's signed requests and the run's files")
        return value


class RunConfig(_Frozen):
    name: Name = Field(default="run", description="the run's name: in run ids, monitoring run folders and "
                       "report titles (a name: see biaseval/names.py)")
    description: str = ""
    suites: tuple[str, ...] = Field(min_length=1, description="suite names, or paths of template suite files")
    systems: dict[str, SystemConfig] = Field(min_length=1)
    lexicon: str | None = Field(default=None, description="an occupation lexicon for every template suite "
                                "that uses one (relative to the config file)")
    targets: dict[str, tuple[str, ...]] = Field(default_factory=dict,
                                                description="suite -> the target languages to run (default: all)")
    detectors: dict[str, str | dict[str, str]] = Field(
        default_factory=dict, description="suite -> detector, or suite -> {target language -> detector}")
    rule_sets: dict[str, dict[str, Any]] = Field(default_factory=dict, description="extra detector rule sets")
    sweep: SweepConfig = SweepConfig()
    cache: CacheConfig = CacheConfig()
    metrics: MetricsConfig = MetricsConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    monitor: MonitorConfig | None = None
    published: str | None = Field(default=None, description="published results to compare with in the report")
    output: OutputConfig = OutputConfig()

    @field_validator("suites")
    @classmethod
    def _unique(cls, suites: tuple[str, ...]) -> tuple[str, ...]:
        dupes = sorted({s for s in suites if suites.count(s) > 1})
        if dupes:
            raise ValueError(f"suite listed twice: {', '.join(dupes)}")
        return suites

    def select_systems(self, names: list[str]) -> "RunConfig":
        """The same run restricted to some of its systems (``--systems a,b``): a system with conditions
        comes with them all; ``azure[gender=female]`` names one condition alone."""
        known: Registry[str] = Registry("system")
        for name in self.systems:
            known.add(name, name)
        chosen = {}
        for name in [known.get(name, "--systems") for name in names]:
            for n in (name, *conditions_of(self.systems, name)):
                chosen.setdefault(n, self.systems[n])
        return self.model_copy(update={"systems": chosen})

    def config_hash(self) -> str:
        # where results are stored does not change them
        blob = json.dumps(self.model_dump(mode="json", exclude={"output"}), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def detector_registry(self) -> Registry[Detector]:
        reg: Registry[Detector] = Registry("detector")
        for name, rule_set in builtin().items():
            reg.add(name, rule_set)
        for name, entry in self.rule_sets.items():
            reg.add(name, RuleSet(name=name, **entry))
        return reg

    def detector_name(self, suite: str, tgt: str) -> str:
        override = self.detectors.get(suite)
        if isinstance(override, dict):
            override = override.get(tgt)
        return override or SUITES.get(suite).detector_for(tgt)

    def detector_for(self, suite: str, tgt: str) -> Detector:
        return self.detector_registry().get(self.detector_name(suite, tgt))

    def suites_of(self, system: str) -> list[str]:
        """The run's suites this system translates."""
        cfg = self.systems[system]
        backend = TRANSLATORS.get(cfg.backend)
        options = backend.Options.model_validate(cfg.options)
        wanted = cfg.suites if cfg.suites is not None else self.suites
        return [s for s in self.suites if s in wanted and backend.covers(options, s) and self.targets_of(system, s)]

    def targets_of(self, system: str, suite: str) -> tuple[str, ...]:
        """The suite's target languages this system translates into."""
        targets = SUITES.get(suite).targets
        wanted = self.systems[system].targets
        return targets if wanted is None else tuple(t for t in targets if t in wanted)


def load_config(path: str | Path) -> RunConfig:
    """Parse and validate a run config; ConfigError names the file, line and field at fault.

    Template suites are loaded (and registered) here; the config returned names every suite by its
    name, whether the file gave a name or a path."""
    doc = read_yaml(path, "config")
    config = doc.validate(RunConfig)
    check_system_names(config.systems, doc)  # before a name becomes a folder, a file name, a cell, a label
    config = config.model_copy(update={"systems": expand(config.systems, lambda field, message: name_error(
        doc, field, message))})  # conditions as systems
    config = resolve_suites(config, doc.path.resolve().parent, doc)
    check_run_names(config.systems, config.suites, doc)
    _check_names(config, doc)
    return config


def _check_embedding(config: RunConfig, doc: YamlDoc) -> None:
    """Every language of a word-list suite needs a model that exists and a female/male pair."""
    for suite in config.suites:
        s = SUITES.get(suite)
        if s.scorer != "embedding":
            continue
        for language in (s.src_lang, *s.targets):
            model = config.embedding.models.get(language)
            if model is None:
                raise doc.fail(("embedding", "models"), f"no embedding model for {language!r} (suite {suite})")
            path = from_file(model.path, doc.path.resolve().parent)
            if not path.is_file():
                raise doc.fail(("embedding", "models", language, "path"), f"model file {path} not found")
            if language not in config.embedding.pairs and language not in DEFAULT_PAIRS:
                raise doc.fail(("embedding", "pairs"), f"no female/male word pair for {language!r}")


def _check_monitor(config: RunConfig, doc: YamlDoc) -> None:
    if config.monitor is None:
        return
    for system, baseline in config.monitor.baselines.items():
        if system not in config.systems:
            raise doc.fail(("monitor", "baselines", system), f"{system!r} is not a system of this config")
        if isinstance(baseline, str):
            if baseline != "previous":
                raise doc.fail(("monitor", "baselines", system), "expected 'previous', {system: ...} or {run: ...}")
        elif set(baseline) == {"system"}:
            if baseline["system"] not in config.systems:
                raise doc.fail(("monitor", "baselines", system, "system"), f"{baseline['system']!r} is not a system of this config")
        elif set(baseline) != {"run"}:
            raise doc.fail(("monitor", "baselines", system), "expected 'previous', {system: ...} or {run: ...}")


def resolve_suites(config: RunConfig, config_dir: Path, doc: YamlDoc | None = None) -> RunConfig:
    lexicon = None
    if config.lexicon:
        lexicon = from_file(config.lexicon, config_dir)
    names = []
    for i, name in enumerate(config.suites):
        where = doc.where(("suites", i)) + f": suites.{i}" if doc else ""
        suite = resolve_suite(name, config_dir, lexicon, where)
        if suite.name in config.targets:
            wanted = config.targets[suite.name]
            available = suite.targets + tuple(t for t in suite.optional_targets if t not in suite.targets)
            unknown = [t for t in wanted if t not in available]
            if unknown or not wanted:
                message = (f"{suite.name} has target languages {', '.join(available)}; not {', '.join(unknown)}"
                           if unknown else "no target language left")
                raise doc.fail(("targets", suite.name), message) if doc else ConfigError(message)
            if tuple(wanted) != suite.targets:
                suite = suite.with_targets(tuple(wanted))
        SUITES.put(suite.name, suite)  # this run's version of the suite (its targets), until another run's
        names.append(suite.name)
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes and doc:
        raise doc.fail(("suites",), f"suite listed twice: {', '.join(dupes)}")
    return config.model_copy(update={"suites": tuple(names)})


def _check_names(config: RunConfig, doc: YamlDoc) -> None:
    def fail(field: tuple, message: str) -> None:
        raise doc.fail(field, message)

    for suite in config.targets:
        if suite not in config.suites:
            fail(("targets", suite), f"suite {suite!r} is not in this run's suites")
    for suite, detector in config.detectors.items():
        if suite not in config.suites:
            fail(("detectors", suite), f"suite {suite!r} is not in this run's suites")
        if isinstance(detector, dict):
            for tgt in detector:
                if tgt not in SUITES.get(suite).targets:
                    fail(("detectors", suite, tgt), f"{suite} has no target language {tgt!r}")
    for name, entry in config.rule_sets.items():
        if name in builtin():
            fail(("rule_sets", name), "a built-in detector has this name; choose another")
        doc.validate(RuleSet, {"name": name, **entry}, prefix=("rule_sets", name))
    detectors = config.detector_registry()
    for suite in config.suites:
        for tgt in SUITES.get(suite).targets:
            name = config.detector_name(suite, tgt)
            override = config.detectors.get(suite)
            field = ("detectors", suite) + ((tgt,) if isinstance(override, dict) else ())
            if name not in detectors:
                fail(field if override else ("suites",), detectors.unknown_message(name))
            check = getattr(detectors.get(name), "check", None)  # a corpus detector's analyser must be installed
            if check is not None:
                try:
                    check(tgt)
                except ConfigError as exc:
                    fail(field if override else ("suites",), f"{suite} → {tgt}: {exc}")
    _check_embedding(config, doc)
    _check_monitor(config, doc)
    for name, system in config.systems.items():
        if system.backend not in TRANSLATORS:
            fail(("systems", name, "backend"), TRANSLATORS.unknown_message(system.backend))
        backend = TRANSLATORS.get(system.backend)
        if system.condition_of is not None:
            _check_condition(config, doc, name, system, backend)
            continue  # the rest is its base system's, checked there
        doc.validate(backend.Options, system.options, prefix=("systems", name, "options"))
        if getattr(backend, "CLOUD", False) and not system.version.strip() and system.max_age is None:
            fail(("systems", name, "version"),
                 f"a cloud system ({system.backend}) needs a version (e.g. the model and the date you pinned it: "
                 f"'nmt 2026-12') or a max_age for stored translations (e.g. 30d): its provider changes the model "
                 f"under the same name, and translations stored under an empty version would be reused forever")
        for suite in system.suites or ():
            if suite not in config.suites:
                fail(("systems", name, "suites"), f"suite {suite!r} is not in this run's suites")
        if not config.suites_of(name):
            fail(("systems", name), f"covers none of this run's suites ({', '.join(config.suites)})")


def _check_condition(config: RunConfig, doc: YamlDoc, name: str, system: SystemConfig, backend) -> None:
    """A condition's options are valid for its backend and change what the system outputs."""
    base = system.condition_of
    field = ("systems", base, "conditions", name[len(base) + 1:-1], "options")
    options = doc.validate(backend.Options, system.options, prefix=field)
    plain = backend.Options.model_validate(config.systems[base].options)
    if backend.identity_options(options) == backend.identity_options(plain):
        raise doc.fail(field, f"changes no option that decides {base}'s output (only operational ones, or none): "
                              f"it would be {base} again under another name")
