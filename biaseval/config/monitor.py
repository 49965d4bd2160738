"""The ``monitor:`` section of a run config: baselines, significance, notifications, samples, history
(what each setting does: docs/monitoring.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_serializer, field_validator, model_validator

from biaseval.config.frozen import Frozen as _Frozen
from biaseval.urls import check_url, origin


class NotifyConfig(_Frozen):  # where a monitoring run's notification goes, how hard to try (docs/monitoring.md)
    command: str | None = Field(default=None, description="run with the notification (JSON) on stdin")
    allow_insecure_http: bool = Field(default=False, description="allow an http:// webhook (or report link) "
                                      "that is not a loopback address: the body and auth header travel unencrypted")
    webhook: str | None = Field(default=None, description="POST the notification (JSON) to this URL")
    webhook_auth_env: str | None = Field(default=None, pattern=r"^\w+$", description="env variable: the auth value")
    webhook_auth_header: str = Field(default="Authorization", min_length=1)
    timeout_s: float = Field(default=30.0, gt=0)
    attempts: int = Field(default=4, ge=1, description="tries per channel (then the delivery failed)")
    backoff_s: float = Field(default=2.0, ge=0, description="before the 2nd try; doubles (at most 60 s)")
    on_ok: bool = Field(default=False, description="notify also when nothing happened (a heartbeat)")
    report_url: str | None = Field(default=None, description="the report's link, {run_id} filled in")
    evidence: int = Field(default=5, ge=0, description="largest significant changes and first flips it lists")

    @field_validator("webhook")
    @classmethod
    def _webhook(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            check_url(value, allow_insecure_http=info.data.get("allow_insecure_http", False),
                      carries="the notification and its auth header")
        return value

    @field_validator("report_url")
    @classmethod
    def _report_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            try:
                filled = value.format(run_id="RUN")
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(f"only {{run_id}} is filled in ({type(exc).__name__}: {exc})") from None
            check_url(filled, allow_insecure_http=info.data.get("allow_insecure_http", False),
                      carries="its readers' requests")
        return value

    @field_serializer("webhook")
    def _webhook_host(self, value: str | None) -> str | None:
        """Dumped (run.json) as scheme://host[:port]: a chat webhook's path or query is its token."""
        return origin(value) if value else value


class SampleConfig(_Frozen):
    """A fixed, seeded sample of each suite, stratified by target, subset and occupation: ``size`` items,
    or as many as detecting a change of ``detect`` (McNemar, at the monitor's alpha and power) needs."""

    detect: float | None = Field(default=None, gt=0, lt=1)
    size: int | None = Field(default=None, ge=1)
    seed: int = 0

    @model_validator(mode="after")
    def _one_of(self) -> "SampleConfig":
        if (self.detect is None) == (self.size is None):
            raise ValueError("give one of detect (a change to detect, e.g. 0.03) or size (items per suite)")
        return self


class HistoryConfig(_Frozen):
    location: str | None = Field(default=None, description="folder or s3:// / gs:// URI (default: the store)")
    retention_days: int | None = Field(default=None, ge=1, description="compaction drops older rows")
    compact_after: int = Field(default=50, ge=2, description="parts that trigger a compaction into one file")


class MonitorConfig(_Frozen):
    """Scheduled drift monitoring (``biaseval monitor``)."""

    store: str = Field(min_length=1, description="folder of the monitoring runs and their history "
                                                 "(relative to the config file)")
    baselines: dict[str, str | dict[str, str]] = Field(
        default_factory=dict, description="system -> 'previous' (default), {system: <another system of "
        "this config, e.g. recorded outputs>} or {run: <a run directory>}")
    threshold: float = Field(default=0.05, ge=0, description="the smallest change of a metric that matters")
    alpha: float = Field(default=0.05, gt=0, lt=1)
    watch: tuple[str, ...] = Field(default=("acc", "delta_g", "delta_s", "neutral", "p_m", "p_f", "p_n", "P", "tgbi"),
                                   description="metrics whose change can raise the alarm")
    max_failed_share: float = Field(default=0.0, ge=0, le=1, description="a system with more items failed is "
                                    "reported unavailable and not compared")
    flips_in_report: int = Field(default=20, ge=0)
    notify: NotifyConfig = NotifyConfig()
    correction: Literal["bh", "holm", "none"] = Field(default="bh", description="over the run's tests: bh "
                                                      "(false discovery rate), holm (family-wise error) or none")
    power: float = Field(default=0.8, gt=0, lt=1, description="for detectable changes and sample sizes")
    churn: float = Field(default=0.02, ge=0, lt=1, description="share of items expected to flip either way "
                         "between two runs of an unchanged system (sizes the sample, the detectable change)")
    sample: SampleConfig | None = Field(default=None, description="run a fixed stratified sample of each suite")
    history: HistoryConfig = HistoryConfig()

    def monitored(self, systems) -> list[str]:
        """The systems a monitoring run measures: all but those that serve only as another's baseline."""
        baseline_only = {b["system"] for b in self.baselines.values() if isinstance(b, dict) and "system" in b}
        return [s for s in systems if s not in baseline_only]
