"""The monitor end to end against the fake Azure Translator (otsc-en, 320 texts), one store, runs in
a row: a first measurement (nothing due), an outage (exit 6), the recovery (exit 0, notified), a
model swap with identical outputs (exit 7), a real shift (exit 5), and a run whose webhook is down
(exit 0 + 10), then the same through the command line. Each notification body is asserted as the
command and the webhook received it; the webhook carries the auth header from the environment and
is retried. Each run's cost in run.json, the report and the notification is checked against
characters counted by hand. Then an LLM (the fake OpenAI server) that reports a new snapshot with
the same answers: a model change, its cost from the server's token counts."""

from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl
import pytest
import yaml
from click.testing import CliRunner
from fakes.azure_server import FakeAzureTranslator
from fakes.local_http import POLL_S
from fakes.openai_server import FakeOpenAI, tokens

from biaseval.cli import main
from biaseval.monitor.run import run_monitor
from biaseval.monitor.verdict import EXIT_DRIFT, EXIT_MODEL_CHANGED, EXIT_NOT_DELIVERED, EXIT_UNAVAILABLE
from biaseval.run.cluster import start_local_ray

KEY = "fake-azure-key-0123456789abcdef"
REGION = "westeurope"
TOKEN = "Bearer hook-s3cret-0123456789"  # the webhook's auth header value, from $BIASEVAL_TEST_HOOK_AUTH
PRICE = 10.0  # per million characters
OPENAI_KEY = "sk-fake-openai-key-0123456789"
TEXTS = 320  # 40 occupations x her/him x es, it, fr, de: every (target, source) distinct
SLOW_FIXTURES = {"azure_ray", "monitored", "llm_swapped"}


class Hook:
    """A local webhook receiver: records each POST (headers, body) and answers the next scripted status."""

    def __init__(self):
        self.received: list[tuple[dict, dict]] = []
        self.statuses: list[int] = []  # answers for the next requests, then 200
        self.always: int | None = None  # answer every request with this
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                hook.received.append((dict(self.headers.items()), body))
                status = hook.always or (hook.statuses.pop(0) if hook.statuses else 200)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/secret-path-token"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture(scope="module")
def azure_ray():
    """A local Ray whose workers have the fake's key; the webhook's auth value in the driver's environment."""
    import ray

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AZURE_TRANSLATOR_KEY", KEY)
        mp.setenv("AZURE_TRANSLATOR_REGION", REGION)
        mp.setenv("BIASEVAL_TEST_HOOK_AUTH", TOKEN)
        mp.setenv("BIASEVAL_TEST_OPENAI_KEY", OPENAI_KEY)
        for name in ("no_proxy", "NO_PROXY"):
            mp.setenv(name, "127.0.0.1,localhost")
        start_local_ray(2, logging_level="WARNING")
        try:
            yield ray
        finally:
            ray.shutdown()


def write_config(folder: Path, endpoint: str, webhook: str, **notify) -> Path:
    config = {
        "name": "watch-azure", "suites": ["otsc-en"], "metrics": {"bootstrap": 200, "seed": 5},
        "cache": {"path": str(folder / "cache")},
        "systems": {"azure": {"backend": "azure", "version": "test", "concurrency": 2,
                              "options": {"endpoint": endpoint}, "price_per_million_chars": PRICE,
                              "retry": {"max_attempts": 2, "backoff_s": 0.01, "max_backoff_s": 0.05,
                                        "timeout_s": 10}}},
        "monitor": {"store": str(folder / "store"), "threshold": 0.02,
                    "notify": {"command": f"cat >> {folder / 'sent.jsonl'} && echo >> {folder / 'sent.jsonl'}",
                               "webhook": webhook, "webhook_auth_env": "BIASEVAL_TEST_HOOK_AUTH",
                               "attempts": 3, "backoff_s": 0.01, "evidence": 3, **notify}},
    }
    path = folder / "monitor.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def monitored(azure_ray, tmp_path_factory):
    folder = tmp_path_factory.mktemp("watch")
    hook = Hook()
    runs, logs, hooks = {}, {}, {}
    with FakeAzureTranslator(key=KEY, region=REGION) as fake:
        fake.genders(honour=0.0, unasked="source")  # "my friend" follows her/him
        path = write_config(folder, fake.endpoint, hook.url)

        def monitor(name: str):
            start = len(hook.received)
            logs[name] = io.StringIO()
            runs[name] = run_monitor(path, stream=logs[name])
            hooks[name] = hook.received[start:]

        fake.fail_times(1, 503)  # the first request is retried: its texts are sent twice, billed once
        monitor("first")
        fake.fail(503, times=1_000)  # the provider is down
        monitor("outage")
        fake.reset()
        hook.statuses = [503]  # the webhook's first answer is a 503: retried
        monitor("recovery")
        fake.mt_system = "Custom"  # another model, the same outputs
        monitor("swap")
        fake.genders(honour=0.0, unasked="male")  # every friend is now male: "her" items flip
        monitor("shift")
        hook.always = 500
        write_config(folder, fake.endpoint, hook.url, on_ok=True, attempts=2)
        monitor("webhook down")
        cli = CliRunner().invoke(main, ["monitor", "--config", str(path)])  # the same, as a scheduler runs it
    hook.close()
    sent = [json.loads(line) for line in (folder / "sent.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return folder, runs, logs, hooks, {body["run_id"]: body for body in sent}, cli


def sources(run) -> list[str]:
    """The distinct (target, source) texts of the run, from its items: what was sent."""
    items = pl.read_parquet(run.root / "items.parquet").unique(["tgt_lang", "source"])
    assert items.height == TEXTS
    return items["source"].to_list()


def system_of(body: dict, name: str = "azure") -> dict:
    return next(s for s in body["systems"] if s["system"] == name)


def test_a_first_measurement_notifies_no_one_and_records_its_cost(monitored):
    _, runs, _, hooks, sent, _ = monitored
    first = runs["first"]
    assert first.exit_code == 0 and first.verdict == "ok" and not first.notified
    assert first.run_id not in sent and hooks["first"] == []
    assert first.systems[0].status == "no baseline" and first.systems[0].models == {"model": ["system=Team"],
                                                                                     "fingerprint": []}
    chars = sum(len(s) for s in sources(first.run))  # by hand: each distinct text billed once
    rows = pl.read_parquet(sorted((first.run.root / "translations").rglob("shard-*.parquet")))
    assert rows["billed_chars"].to_list() == rows["source"].str.len_chars().to_list()
    resent = rows.filter(pl.col("attempts") == 2)
    assert resent.height > 0 and rows.filter(pl.col("attempts") > 2).height == 0
    cost = json.loads((first.run.root / "run.json").read_text(encoding="utf-8"))["cost"]
    billed = cost["billed"]["systems"]["azure"]
    assert billed["texts"] == TEXTS and billed["billed_chars"] == chars
    assert billed["sent_chars"] == chars + resent["source"].str.len_chars().sum()  # the failed try counted as sent
    assert billed["resent_texts"] == resent.height
    assert billed["cost"] == pytest.approx(chars / 1e6 * PRICE) == cost["billed"]["total"]
    assert cost["planned"]["systems"]["azure"]["chars"] == chars
    assert cost["planned"]["total"] == pytest.approx(chars / 1e6 * PRICE)
    report = (first.run.root / "report.md").read_text(encoding="utf-8")
    assert "## Cost" in report and f"| azure | {chars:,} characters; {resent.height:,} texts sent more than once | " \
                                   f"{chars / 1e6 * PRICE:,.4f} | {chars / 1e6 * PRICE:,.4f} |" in report
    html = (first.run.root / "report.html").read_text(encoding="utf-8")
    assert 'class="cost"' in html and f"{chars / 1e6 * PRICE:,.4f}" in html


def test_an_outage_notifies_naming_the_system_and_its_error(monitored):
    _, runs, logs, hooks, sent, _ = monitored
    outage = runs["outage"]
    assert outage.exit_code == EXIT_UNAVAILABLE and outage.verdict == "unavailable" and outage.notified
    body = sent[outage.run_id]
    azure = system_of(body)
    assert body["verdict"] == "unavailable" and azure["status"] == "unavailable"
    assert azure["message"].startswith(f"{TEXTS} of {TEXTS} items failed; first error: gave up after 2 attempts: "
                                       f"AzureTranslatorError: HTTP 503 (503000): Service is temporarily unavailable.")
    assert f"azure: unavailable — {TEXTS} of {TEXTS} items failed" in body["text"]
    assert body["cost"]["billed"] == 0.0  # nothing translated, nothing billed
    billed = json.loads((outage.run.root / "run.json").read_text(encoding="utf-8"))["cost"]["billed"]["systems"]
    assert billed["azure"]["billed_chars"] == 0
    assert billed["azure"]["sent_chars"] == 2 * sum(len(s) for s in sources(outage.run))  # two tries of every text
    [(headers, posted)] = hooks["outage"]
    assert posted == body and headers["Authorization"] == TOKEN
    assert TOKEN not in logs["outage"].getvalue() and "secret-path-token" not in logs["outage"].getvalue()


def test_a_recovery_notifies_and_compares_with_the_last_measurement(monitored):
    _, runs, logs, hooks, sent, _ = monitored
    recovery, first, outage = runs["recovery"], runs["first"], runs["outage"]
    assert recovery.exit_code == 0 and recovery.verdict == "ok" and recovery.notified
    azure = recovery.systems[0]
    assert azure.status == "ok" and azure.baseline == f"previous run {first.run_id}"
    assert azure.recovered == {"since": outage.run_id, "runs": 1, "error": outage.systems[0].message}
    body = sent[recovery.run_id]
    assert system_of(body)["recovered"]["since"] == outage.run_id
    assert f"recovered: unavailable in the 1 run(s) since {outage.run_id}" in body["text"]
    # the webhook answered 503 first: the body went again, with the same header, and got through
    assert [h["Authorization"] for h, _ in hooks["recovery"]] == [TOKEN, TOKEN]
    assert [b for _, b in hooks["recovery"]] == [body, body]
    assert "trying again" in logs["recovery"].getvalue() and not recovery.undelivered


def test_a_model_swap_with_identical_outputs_is_an_event(monitored):
    _, runs, _, _, sent, _ = monitored
    swap = runs["swap"]
    assert swap.exit_code == EXIT_MODEL_CHANGED and swap.verdict == "model changed" and not swap.alarm
    azure = swap.systems[0]
    assert azure.status == "model changed" and azure.suites[0]["flipped"] == 0
    assert azure.suites[0]["text_changed_share"] == 0.0 and not azure.changes["significant"].any()
    body = sent[swap.run_id]
    change = system_of(body)["model_change"]
    assert (change["before"], change["after"]) == (["system=Team"], ["system=Custom"])
    assert system_of(body)["largest_changes"] == [] and system_of(body)["first_flips"] == []
    assert "model changed: system=Team -> system=Custom" in body["text"]
    assert "azure: model changed — model changed: system=Team -> system=Custom (baseline: previous run" in body["text"]
    drift = (swap.run.root / "drift.md").read_text(encoding="utf-8")
    assert "## azure: model changed\n\nmodel changed: system=Team -> system=Custom\n" in drift
    html = (swap.run.root / "report.html").read_text(encoding="utf-8")
    assert "model changed: system=Team -&gt; system=Custom" in html  # the report's verdict names it
    assert '<tr class="status-model-changed">' in html  # marked like drift and outages


def test_a_real_shift_raises_the_alarm_with_changes_and_flips(monitored):
    _, runs, _, hooks, sent, _ = monitored
    shift = runs["shift"]
    assert shift.exit_code == EXIT_DRIFT and shift.verdict == "drift" and shift.alarm
    azure = shift.systems[0]
    assert azure.status == "drift" and azure.model_change is None  # the same model as the run before
    assert azure.suites[0]["flipped"] == TEXTS // 2  # every "her" item: female -> male
    body = sent[shift.run_id]
    mine = system_of(body)
    significant = azure.changes.filter(pl.col("significant"))
    tests = significant.select("suite", "subset", "test").unique()
    assert len(mine["largest_changes"]) == min(3, tests.height) == 3  # p_m and p_f of one subset: one test, once
    assert len({(c["suite"], c["subset"]) for c in mine["largest_changes"]}) == 3
    top = max(significant.iter_rows(named=True), key=lambda r: abs(r["change"]))
    first = mine["largest_changes"][0]
    assert abs(top["change"]) == 1.0 and (first["metric"], first["change"]) == ("p_f", -1.0)  # her: female 1 -> 0
    assert first["change_low"] <= first["change"] <= first["change_high"] and first["p_adjusted"] < 0.05
    flips = mine["first_flips"]
    assert len(flips) == 3 and mine["flipped"] == TEXTS // 2
    for f in flips:
        assert "her" in f["source"] and (f["label_before"], f["label_after"]) == ("female", "male")
        assert f["before"] != f["after"] and f["before"].startswith(f"{f['after'][:2]}:")
    line = f"  {first['suite']} {first['subset']} p_f: 1.0000 -> 0.0000, change -1.0000 [{first['change_low']:+.4f}, "
    assert line in body["text"] and "160 labels flipped; first:" in body["text"]
    assert f"cost: {body['cost']['billed']:,.4f} billed (estimated {body['cost']['planned']:,.4f})" in body["text"]
    assert body["report"] == str(shift.run.root / "report.html") and (shift.run.root / "report.html").exists()
    assert json.loads((shift.run.root / "drift.json").read_text(encoding="utf-8")) == body  # what was sent is kept
    assert hooks["shift"][0][1] == body


def test_a_failed_delivery_is_logged_and_in_the_exit_status(monitored):
    _, runs, logs, hooks, sent, _ = monitored
    down = runs["webhook down"]
    assert down.verdict == "ok" and down.exit_code == 0 + EXIT_NOT_DELIVERED and not down.notified
    assert len(hooks["webhook down"]) == 2  # attempts: 2
    [failure] = down.undelivered
    port = failure.split(":")[2]
    assert failure == f"webhook http://127.0.0.1:{port}: HTTP 500 Internal Server Error (after 2 tries)"
    assert down.run_id in sent  # on_ok: the command got it
    log = logs["webhook down"].getvalue()
    assert "notification NOT delivered to webhook http://127.0.0.1" in log and "notified command" in log
    assert TOKEN not in log and "secret-path-token" not in log


def test_every_notified_run_went_to_both_channels(monitored):
    _, runs, _, hooks, sent, _ = monitored
    notified = {name for name, r in runs.items() if r.run_id in sent}
    assert notified == {"outage", "recovery", "swap", "shift", "webhook down"}
    for name in notified - {"webhook down"}:  # the webhook got what the command got, with the auth header
        assert hooks[name][-1][1] == sent[runs[name].run_id] and hooks[name][-1][0]["Authorization"] == TOKEN
    assert hooks["first"] == []


def test_the_command_line_exits_with_the_status_and_says_what_was_not_delivered(monitored):
    _, runs, _, _, sent, cli = monitored
    chars = sum(len(s) for s in sources(runs["first"].run))
    assert cli.exit_code == EXIT_NOT_DELIVERED, cli.output
    assert "azure: ok (baseline: previous run" in cli.output
    assert f"monitor: cost {chars / 1e6 * PRICE:,.4f} billed (estimated {chars / 1e6 * PRICE:,.4f})" in cli.output
    assert "monitor: notification NOT delivered: webhook http://127.0.0.1:" in cli.output
    assert TOKEN not in cli.output


@pytest.fixture(scope="module")
def llm_swapped(azure_ray, tmp_path_factory):
    """An LLM whose server reports a new dated snapshot under the same model name, answering the same."""
    folder = tmp_path_factory.mktemp("watch-llm")
    with FakeOpenAI(key=OPENAI_KEY, models=("gpt-test",), reported_model="gpt-test-2026-01-01") as fake:
        config = {"name": "watch-llm", "suites": ["otsc-en"], "metrics": {"bootstrap": 100, "seed": 5},
                  "cache": {"path": str(folder / "cache")},
                  "systems": {"llm": {"backend": "openai", "version": "gpt-test",
                                      "options": {"model": "gpt-test", "base_url": fake.base_url,
                                                  "api_key_env": "BIASEVAL_TEST_OPENAI_KEY"},
                                      "price_per_million_input_tokens": 2.0, "price_per_million_output_tokens": 8.0,
                                      "retry": {"max_attempts": 2, "backoff_s": 0.01, "timeout_s": 10}}},
                  "monitor": {"store": str(folder / "store"),
                              "notify": {"command": f"cat > {folder / 'sent.json'}"}}}
        path = folder / "monitor.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        before = run_monitor(path, stream=io.StringIO())
        fake.reported_model = "gpt-test-2026-03-01"
        first = fake.count
        after = run_monitor(path, stream=io.StringIO())
        # the prompt tokens the fake reported for each of the second run's requests (its usage rule)
        prompts = sum(sum(tokens(m["content"]) + 4 for m in r.body["messages"]) + 3 for r in fake.requests[first:])
    return before, after, json.loads((folder / "sent.json").read_text(encoding="utf-8")), prompts


def test_an_llm_reporting_a_new_snapshot_is_a_model_change(llm_swapped):
    before, after, body, prompts = llm_swapped
    assert before.exit_code == 0 and before.systems[0].models == {"model": ["gpt-test-2026-01-01"],
                                                                   "fingerprint": ["fp_fake_0001"]}
    assert after.exit_code == EXIT_MODEL_CHANGED and after.systems[0].status == "model changed"
    assert after.systems[0].suites[0]["text_changed_share"] == 0.0  # the same answers
    change = system_of(body, "llm")["model_change"]
    assert change == {"before": ["gpt-test-2026-01-01"], "after": ["gpt-test-2026-03-01"],
                      "fingerprint_before": ["fp_fake_0001"], "fingerprint_after": ["fp_fake_0001"]}
    billed = json.loads((after.run.root / "run.json").read_text(encoding="utf-8"))["cost"]["billed"]["systems"]["llm"]
    assert billed["input_tokens"] == prompts and billed["texts"] == TEXTS  # the server's usage, request by request
    assert billed["cost"] == pytest.approx(prompts / 1e6 * 2.0 + billed["output_tokens"] / 1e6 * 8.0)
    assert body["cost"]["billed"] == pytest.approx(billed["cost"])
