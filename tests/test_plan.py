"""`biaseval plan` for a large config: texts after the store, requests, characters, cost, and the time
each system's quota implies — nothing is sent, no credentials are needed."""

from __future__ import annotations

import math

import pytest
from click.testing import CliRunner

from biaseval.cli import main
from biaseval.costs import duration, quota_time, request_count
from biaseval.translators import TRANSLATORS
from conftest import REPO


def _rows(output: str) -> dict[str, list[str]]:
    rows = {}
    for line in output.splitlines()[1:]:
        parts = line.split()
        if parts and parts[0] in ("google", "google-llm", "azure", "aws", "apertium"):
            rows[parts[0]] = parts
    return rows


def test_plan_of_a_large_config(data_dir):
    result = CliRunner().invoke(main, ["plan", "--config", str(REPO / "conf" / "plan-large.yaml")])
    assert result.exit_code == 0, result.output
    rows = _rows(result.output)
    # WinoMT 7 × 3,888 + OTSC 4 × 2 × 40 items for the cloud systems; Apertium only Spanish
    assert rows["aws"][2] == f"{7 * 3888 + 4 * 2 * 40:,}" and rows["apertium"][2] == f"{3888 + 2 * 40:,}"
    to_send = int(rows["aws"][5].replace(",", ""))
    chars = int(rows["aws"][7].replace(",", ""))
    assert rows["aws"][6] == f"≥{to_send:,}"  # Amazon Translate takes one text per request
    assert " ".join(rows["aws"][9:11]) == duration(to_send / 20)  # 20 requests/s binds
    assert rows["aws"][11] == "(requests/s)"
    # at most 1,024 strings and 30,000 characters a request: here the characters decide
    assert rows["google"][6] == f"≥{max(math.ceil(to_send / 1024), math.ceil(chars / 30_000)):,}"
    assert rows["google"][-2:] == ["(chars/min)", "—"]
    assert float(rows["azure"][8]) == pytest.approx(chars / 1e6 * 10.0, abs=0.01)
    assert "no quota set" in " ".join(rows["apertium"])
    assert f"at least {duration(to_send / 20)} (aws, bound by its requests/s)" in result.output


def test_request_count_and_quota_time():
    google = TRANSLATORS.get("google")
    assert request_count(0, 0, google, {"project": "p"}) == 0
    assert request_count(2048, 10_000, google, {"project": "p"}) == 2  # by the 1,024-string limit
    assert request_count(10, 90_000, google, {"project": "p"}) == 3  # by the 30,000-character limit
    assert request_count(10, 500, TRANSLATORS.get("aws"), {}) == 10
    assert quota_time(100, 600_000, 10, 60_000) == (600.0, "chars/min")
    assert quota_time(100, 600, 10, 60_000) == (10.0, "requests/s")
    assert quota_time(100, 600, None, None) == (None, None)
    assert [duration(s) for s in (5, 90, 7200, 3 * 86400)] == ["5 s", "1.5 min", "2.0 h", "3.0 days"]
