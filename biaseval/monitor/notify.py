"""The monitor's notification: when one is due, what it says, and its delivery.

Due (``due``) when the verdict is not ok (drift, a model changed, a system unavailable), when a
system recovered from an outage, or on every run with ``notify.on_ok``. A dry run notifies no one.

The body (``message``) is the run's summary (drift.json) with, per system, its verdict and message
(an outage names its error), the model change or recovery, the largest significant changes with
their intervals, the first flipped items (source, translation before and after, labels), then the
run's cost beside the plan's estimate and the report's link; ``text`` says the same in a few lines
for people (a chat webhook shows it).

Delivery (``deliver``): the command gets the body on stdin, the webhook a JSON POST with the auth
header whose value is read from ``notify.webhook_auth_env`` (``read_secret``: stripped, remembered by
the redactor). Each is tried up to ``notify.attempts`` times, waiting ``backoff_s`` doubled per try
(or the receiver's Retry-After); a webhook's 4xx other than 408 and 429 is not retried, nor is a
redirect, which is never followed (the auth header would go with it). A channel that still failed is
logged, named in the result, and adds ``EXIT_NOT_DELIVERED`` to the exit status. The auth value and
the webhook's path and query (which often hold a token) never reach a log: logs name the webhook by
scheme and host, and every reason goes through the redactor, which knows both.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable

import polars as pl

from biaseval.config.monitor import NotifyConfig
from biaseval.credentials import Secret, read_secret, redact, remember_url
from biaseval.monitor.verdict import SystemDrift
from biaseval.run.cost import money, units
from biaseval.urls import opener, origin

MAX_WAIT_S = 60.0


def check(notify: NotifyConfig) -> None:
    """Before the run: a webhook's auth variable that is not set is a config error (naming it), not a
    notification lost an hour later."""
    _auth(notify)


def _auth(notify: NotifyConfig) -> Secret | None:
    """The webhook's auth value, read from its variable (None: no webhook or no auth configured)."""
    if not (notify.webhook and notify.webhook_auth_env):
        return None
    return read_secret(notify.webhook_auth_env, f"the webhook's {notify.webhook_auth_header} header",
                       where="monitor.notify.webhook_auth_env")


def due(verdict: str, systems: list[SystemDrift], notify: NotifyConfig) -> bool:
    return verdict != "ok" or any(s.recovered for s in systems) or notify.on_ok


def message(summary: dict, systems: list[SystemDrift], notify: NotifyConfig, cost: dict | None,
            report: str | None) -> dict:
    """The notification's body: ``summary`` with each system's evidence, the cost, the report and ``text``."""
    body = {**summary, "report": report, "cost": cost_summary(cost), "systems": []}
    for doc, s in zip(summary["systems"], systems):
        body["systems"].append({**doc, "models": s.models, "model_change": s.model_change, "recovered": s.recovered,
                                "largest_changes": largest(s.changes, notify.evidence),
                                "flipped": sum(i["flipped"] for i in s.suites),
                                "first_flips": first_flips(s.flips, notify.evidence)})
    body["text"] = text(body)
    return body


def largest(changes: pl.DataFrame | None, n: int) -> list[dict]:
    """The ``n`` largest significant changes, one per test (p_m and p_f of one label shift are one)."""
    if changes is None:
        return []
    return (changes.filter(pl.col("significant")).sort(pl.col("change").abs(), "metric", descending=[True, False])
            .unique(["suite", "subset", "test"], keep="first", maintain_order=True).head(n)
            .select("suite", "subset", "metric", "baseline_value", "value", "change", "change_low", "change_high",
                    "p", "p_adjusted").to_dicts())


def first_flips(flips: pl.DataFrame | None, n: int) -> list[dict]:
    if flips is None:
        return []
    return flips.head(n).select("suite", "item_id", "source", pl.col("translation_base").alias("before"),
                                pl.col("translation").alias("after"), pl.col("label_base").alias("label_before"),
                                pl.col("label").alias("label_after")).to_dicts()


def cost_summary(cost: dict | None) -> dict | None:
    """run.json's cost, as the notification gives it: totals, and per system billed units and both costs."""
    if not cost:
        return None
    billed, planned = cost.get("billed") or {"systems": {}}, cost.get("planned") or {"systems": {}}
    names = sorted(set(billed["systems"]) | set(planned["systems"]))
    if not names:  # recorded outputs only: nothing sent, nothing billed
        return None
    return {"billed": billed.get("total"), "planned": planned.get("total"),
            "systems": {n: {"billed": billed["systems"].get(n, {}).get("cost"),
                            "planned": planned["systems"].get(n, {}).get("cost"),
                            "units": units(billed["systems"].get(n, {}))} for n in names}}


def text(body: dict) -> str:
    lines = [f"biaseval monitor {body['run_id']}: {body['verdict'].upper()} (exit {body['exit_code']})"]
    for s in body["systems"]:
        head = f"{s['system']}: {s['status']}" + (f" — {s['message']}" if s["message"] else "")
        lines.append(head + (f" (baseline: {s['baseline']})" if s["baseline"] else ""))
        for c in s["largest_changes"]:
            lines.append(f"  {c['suite']} {c['subset']} {c['metric']}: {c['baseline_value']:.4f} -> {c['value']:.4f}, "
                         f"change {c['change']:+.4f} [{c['change_low']:+.4f}, {c['change_high']:+.4f}], "
                         f"adjusted p {c['p_adjusted']:.2g}")
        if s["first_flips"]:
            lines.append(f"  {s['flipped']} labels flipped; first:")
            lines += [f"    {f['source']!r}: {f['before']!r} ({f['label_before']}) -> {f['after']!r} ({f['label_after']})"
                      for f in s["first_flips"]]
    if body["cost"]:
        lines.append(f"cost: {money(body['cost']['billed'])} billed (estimated {money(body['cost']['planned'])})")
    if body["report"]:
        lines.append(f"report: {body['report']}")
    return "\n".join(lines)


class _Failed(Exception):
    def __init__(self, reason: str, retry: bool = True, after: float | None = None):
        super().__init__(reason)
        self.retry, self.after = retry, after


def deliver(notify: NotifyConfig, body: dict, stream, sleep: Callable[[float], None] = time.sleep) -> list[str]:
    """Send ``body`` to every configured channel; returns why each channel that failed for good failed."""
    payload = json.dumps(body, default=str).encode()
    remember_url(notify.webhook)  # its path and query may be its token: out of every reason logged
    secret = _auth(notify)
    failures = []
    channels = []
    if notify.command:
        channels.append(("command", lambda: _run_command(notify, payload)))
    if notify.webhook:
        channels.append((f"webhook {origin(notify.webhook)}", lambda: _post(notify, payload, secret)))
    for name, send in channels:
        for attempt in range(1, notify.attempts + 1):
            try:
                send()
                print(f"monitor: notified {name}" + (f" (try {attempt})" if attempt > 1 else ""), file=stream)
                break
            except _Failed as failed:
                reason = redact(str(failed))
                if not failed.retry or attempt == notify.attempts:
                    failures.append(f"{name}: {reason} (after {attempt} tr{'y' if attempt == 1 else 'ies'})")
                    print(f"monitor: notification NOT delivered to {failures[-1]}", file=stream)
                    break
                wait = min(MAX_WAIT_S, notify.backoff_s * 2 ** (attempt - 1))
                wait = max(wait, min(MAX_WAIT_S, failed.after)) if failed.after is not None else wait
                print(f"monitor: {name} failed ({reason}); trying again in {wait:g} s", file=stream)
                sleep(wait)
    return failures


def _run_command(notify: NotifyConfig, payload: bytes) -> None:
    try:
        done = subprocess.run(notify.command, check=False, shell=True, input=payload, capture_output=True,
                              timeout=notify.timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise _Failed(f"{type(exc).__name__}: {exc}") from None
    if done.returncode != 0:
        raise _Failed(f"exited {done.returncode}: {redact(done.stderr.decode(errors='replace')).strip()[:500]}")


def _post(notify: NotifyConfig, payload: bytes, secret: Secret | None) -> None:
    headers = {"Content-Type": "application/json"}
    if secret:
        headers[notify.webhook_auth_header] = secret.reveal()
    request = urllib.request.Request(notify.webhook, data=payload, method="POST", headers=headers)
    try:  # a redirect is never followed: the body (and any auth header) go where configured or nowhere
        with opener(credential=True).open(request, timeout=notify.timeout_s) as response:
            response.read()
    except urllib.error.HTTPError as exc:
        after = exc.headers.get("Retry-After") if exc.headers else None
        retry = exc.code in (408, 429) or exc.code >= 500
        raise _Failed(f"HTTP {exc.code} {exc.reason}", retry, _seconds(after)) from None
    except (OSError, ValueError) as exc:  # refused, unreachable, timed out; a malformed URL
        reason = getattr(exc, "reason", exc)
        raise _Failed(f"{type(exc).__name__}: {reason}", not isinstance(exc, ValueError)) from None


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None

