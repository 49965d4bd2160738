"""The request runner as the backend tests drive it: no real sleeping — each wait the runner asks for
is recorded in ``sleeps`` and is the only thing that moves its clock — and no jitter surprises."""

from __future__ import annotations

from biaseval.translate.runner import RequestRunner, RetryPolicy


def recording_runner(backend, sleeps: list[float] | None = None, **policy) -> RequestRunner:
    policy.setdefault("backoff_s", 0.0)
    policy.setdefault("timeout_s", 5.0)
    sleeps = sleeps if sleeps is not None else []
    return RequestRunner(backend, RetryPolicy(**policy), sleep=sleeps.append, clock=lambda: sum(sleeps), seed=0)
