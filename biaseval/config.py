"""Run configuration: YAML in, one frozen, validated RunConfig out — before anything runs.

Every name is resolved here (suites, backends, detectors, datasets) and every backend's options
are validated by that backend's own model, so a typo fails in milliseconds with the file, line
and field named, not after an hour of paid API calls.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .detect import RuleSet, builtin
from .errors import ConfigError
from .registry import Registry
from .suites import SUITES
from .translators import TRANSLATORS


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RateLimits(_Frozen):
    """A system's quota, enforced across all its actors together."""

    requests_per_s: float | None = Field(default=None, gt=0)
    chars_per_min: float | None = Field(default=None, gt=0)
    burst_s: float = Field(default=0.0, ge=0, description="seconds' worth of capacity that may go at once "
                           "(0: strict pacing, never over the rate in any window)")


class RetryConfig(_Frozen):
    max_attempts: int = Field(default=6, ge=1, description="attempts per request before its texts are recorded as failed")
    backoff_s: float = Field(default=1.0, ge=0, description="first backoff; doubles per attempt, with full jitter")
    max_backoff_s: float = Field(default=60.0, ge=0)
    timeout_s: float = Field(default=60.0, gt=0, description="per-request timeout")


class SystemConfig(_Frozen):
    backend: str
    version: str = Field(default="", description="model/version string recorded on every row")
    options: dict[str, Any] = Field(default_factory=dict)
    suites: tuple[str, ...] | None = Field(default=None, description="only these suites (default: all it covers)")
    actors: int = Field(default=1, ge=1, description="Ray actors hosting this system's backend")
    num_cpus: float = Field(default=0.0, ge=0, description="CPUs reserved per actor (0 for I/O-bound clients)")
    num_gpus: float = Field(default=0.0, ge=0)
    resources: dict[str, float] = Field(default_factory=dict, description="custom Ray resources per actor")
    concurrency: int = Field(default=1, ge=1, description="requests in flight per actor")
    limits: RateLimits = RateLimits()
    retry: RetryConfig = RetryConfig()
    price_per_million_chars: float | None = Field(default=None, ge=0, description="for the cost estimate")
    max_chars: int | None = Field(default=None, ge=0, description="refuse a sweep that would send more")


class SweepConfig(_Frozen):
    shard_size: int = Field(default=5000, ge=1, description="items per shard (one Parquet file each)")
    texts_per_task: int = Field(default=1000, ge=1, description="texts a live system's actor sends per task "
                                "(its results reach the store when the task ends)")
    in_flight: int = Field(default=2, ge=1, description="tasks queued per actor")


class CacheConfig(_Frozen):
    """The translation store, which is also the cache: where it lives and whether to use it."""

    path: str | None = Field(default=None, description="default: $BIASEVAL_CACHE_DIR/translations")
    enabled: bool = True


class MetricsConfig(_Frozen):
    bootstrap: int = Field(default=1000, ge=1)
    seed: int = 0
    confidence: float = Field(default=0.95, gt=0, lt=1)


class RunConfig(_Frozen):
    name: str = "run"
    description: str = ""
    suites: tuple[str, ...] = Field(min_length=1)
    systems: dict[str, SystemConfig] = Field(min_length=1)
    detectors: dict[str, str] = Field(default_factory=dict, description="suite -> detector override")
    rule_sets: dict[str, dict[str, Any]] = Field(default_factory=dict, description="extra detector rule sets")
    sweep: SweepConfig = SweepConfig()
    cache: CacheConfig = CacheConfig()
    metrics: MetricsConfig = MetricsConfig()
    published: str | None = Field(default=None, description="published results to compare with in the report")

    @field_validator("suites")
    @classmethod
    def _unique(cls, suites: tuple[str, ...]) -> tuple[str, ...]:
        dupes = sorted({s for s in suites if suites.count(s) > 1})
        if dupes:
            raise ValueError(f"suite listed twice: {', '.join(dupes)}")
        return suites

    def select_systems(self, names: list[str]) -> "RunConfig":
        """The same run restricted to some of its systems (``--systems a,b``)."""
        known: Registry[str] = Registry("system")
        for name in self.systems:
            known.add(name, name)
        chosen = {known.get(name, "--systems"): self.systems[name] for name in names}
        return self.model_copy(update={"systems": chosen})

    def config_hash(self) -> str:
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def detector_registry(self) -> Registry[RuleSet]:
        reg: Registry[RuleSet] = Registry("detector")
        for name, rule_set in builtin().items():
            reg.add(name, rule_set)
        for name, entry in self.rule_sets.items():
            reg.add(name, RuleSet(name=name, **entry))
        return reg

    def detector_for(self, suite: str) -> RuleSet:
        name = self.detectors.get(suite, SUITES.get(suite).default_detector)
        return self.detector_registry().get(name)

    def suites_of(self, system: str) -> list[str]:
        """The run's suites this system translates."""
        cfg = self.systems[system]
        backend = TRANSLATORS.get(cfg.backend)
        options = backend.Options.model_validate(cfg.options)
        wanted = cfg.suites if cfg.suites is not None else self.suites
        return [s for s in self.suites if s in wanted and backend.covers(options, s)]


def load_config(path: str | Path) -> RunConfig:
    """Parse and validate a run config; ConfigError names the file, line and field at fault."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config ({exc.strerror})") from None
    try:
        node = yaml.compose(text)
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{where}: invalid YAML: {problem}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(raw).__name__}")
    try:
        config = RunConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_format_errors(path, node, exc)) from None
    _check_names(config, path, node)
    return config


def _check_names(config: RunConfig, path: Path, node: yaml.Node) -> None:
    def fail(field: tuple, message: str) -> None:
        raise ConfigError(f"{_where(path, node, field)}: {'.'.join(map(str, field))}: {message}")

    for i, suite in enumerate(config.suites):
        if suite not in SUITES:
            fail(("suites", i), SUITES.unknown_message(suite))
    for suite, detector in config.detectors.items():
        if suite not in config.suites:
            fail(("detectors", suite), f"suite {suite!r} is not in this run's suites")
    for name, entry in config.rule_sets.items():
        if name in builtin():
            fail(("rule_sets", name), "a built-in detector has this name; choose another")
        try:
            RuleSet(name=name, **entry)
        except ValidationError as exc:
            raise ConfigError(_format_errors(path, node, exc, prefix=("rule_sets", name))) from None
    detectors = config.detector_registry()
    for suite, detector in config.detectors.items():
        if detector not in detectors:
            fail(("detectors", suite), detectors.unknown_message(detector))
    for name, system in config.systems.items():
        if system.backend not in TRANSLATORS:
            fail(("systems", name, "backend"), TRANSLATORS.unknown_message(system.backend))
        backend = TRANSLATORS.get(system.backend)
        try:
            backend.Options.model_validate(system.options)
        except ValidationError as exc:
            raise ConfigError(_format_errors(path, node, exc, prefix=("systems", name, "options"))) from None
        for suite in system.suites or ():
            if suite not in config.suites:
                fail(("systems", name, "suites"), f"suite {suite!r} is not in this run's suites")
        if not config.suites_of(name):
            fail(("systems", name), f"covers none of this run's suites ({', '.join(config.suites)})")


def _format_errors(path: Path, node: yaml.Node, exc: ValidationError, prefix: tuple = ()) -> str:
    lines = []
    for err in exc.errors():
        field = prefix + tuple(err["loc"])
        message = err["msg"]
        if err["type"] == "extra_forbidden":
            message = "unknown key"
        lines.append(f"{_where(path, node, field)}: {'.'.join(map(str, field))}: {message}")
    return "\n".join(lines)


def _where(path: Path, node: yaml.Node | None, field: tuple) -> str:
    """``file:line`` of the deepest YAML node on ``field``'s path (the key itself when it is unknown)."""
    line = None
    for key in field:
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if k.value == str(key)), None)
            if match is None:
                break
            line = match[0].start_mark.line + 1
            node = match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return f"{path}:{line}" if line else str(path)
