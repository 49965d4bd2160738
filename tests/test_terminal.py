"""What a person sees in the terminal: `biaseval sweep` run as a command (its own process, its own
local Ray, stderr a pipe as in CI) says only what biaseval says — plain progress lines, no Ray
warnings, no worker lines unless --verbose — and ends with the headline numbers, the items without a
translation and where report.html and report.md are; a recorded system whose outputs lack two items
ends with exit status 0, as `sweep --help` and docs/cluster.md say. Also `list suites` and `list
backends`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from biaseval.cli import main
from conftest import REPO
from fakes.base import Gate
from fakes.openai_server import FakeOpenAI
from procs import kill_sessions

ITEMS = 704  # winomt-hi
KEY = "sk-fake-openai-key-0123456789"


def _biaseval(*args: str, cwd: Path, env: dict | None = None, outputs: list | None = None,
              timeout: float = 300) -> subprocess.CompletedProcess:
    """``biaseval ARGS`` as a user runs it, stdout and stderr pipes, read as they come (``outputs``
    gets the two ``Output`` readers, for a test to watch); whatever it leaves running is stopped."""
    proc = subprocess.Popen([sys.executable, "-m", "biaseval.cli", *args], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **(env or {})})
    readers = [Output(proc.stdout), Output(proc.stderr)]
    if outputs is not None:
        outputs.extend(readers)
    try:
        proc.wait(timeout=timeout)
    finally:
        survivors = kill_sessions({proc.pid})
        proc.wait()
        for reader in readers:
            reader.thread.join()
    assert survivors == []
    return subprocess.CompletedProcess(proc.args, proc.returncode, readers[0].text, readers[1].text)


class Output:
    """What a process writes to one pipe, read by a thread as it comes (``text`` so far)."""

    def __init__(self, pipe) -> None:
        self.text = ""
        self.thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self.thread.start()

    def _read(self, pipe) -> None:
        for line in pipe:
            self.text += line


def recorded_with_gaps(tmp_path: Path, missing: int = 2) -> Path:
    """A winomt-hi run of one recorded system (``source ||| translation`` files) whose file for the
    pro-stereotypical items lacks ``missing`` of their sources (sources edited after recording)."""
    from biaseval.suites import SUITES

    items = SUITES.get("winomt-hi").open().slice(0, ITEMS)
    for (subset,), group in items.group_by(["subset"]):
        sources = list(dict.fromkeys(group["source"].to_list()))
        once = [s for s in sources if group["source"].to_list().count(s) == 1]
        kept = [s for s in sources if subset != "pro" or s not in once[:missing]]
        (tmp_path / f"{subset}.txt").write_text("".join(f"{s} ||| He did it.\n" for s in kept), encoding="utf-8")
    path = tmp_path / "recorded.yaml"
    path.write_text(yaml.safe_dump({
        "name": "recorded", "suites": ["winomt-hi"], "metrics": {"bootstrap": 50},
        "systems": {"mine": {"backend": "recorded", "version": "v1",
                             "options": {"format": "pairs", "files": {"winomt-hi": "{stem}.txt"}}}},
    }), encoding="utf-8")
    return path


@pytest.mark.slow
def test_recorded_gaps_end_with_status_0_a_note_the_numbers_and_the_reports(tmp_path, data_dir):
    out = tmp_path / "run"
    done = _biaseval("sweep", "--config", str(recorded_with_gaps(tmp_path)), "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    # only biaseval speaks: no Ray warning, no worker's line, no terminal codes in a pipe
    for noise in ("WARNING", "Token authentication", "ShardWorker", "(pid=", "\x1b"):
        assert noise not in done.stderr + done.stdout, noise
    progress = [line for line in done.stderr.splitlines() if line.startswith("sweep 0:")]
    assert progress and progress[-1].endswith(f"| mine: items {ITEMS}/{ITEMS} (done)"), done.stderr
    # the gaps: said once, at the end, as what a rerun cannot change
    assert ("note: mine: 2 items have no recorded output (e.g. not recorded: source not in pro.txt); they are left "
            "out of the metrics, and a rerun cannot add them") in done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"sweep: {ITEMS} items in 1 shard (0 reused); 0 texts sent; ")
    assert lines[1].startswith("summary (95% intervals")  # the summary report.md and report.html open with
    row = next(line for line in lines if line.startswith("mine "))
    assert re.fullmatch(r"mine\s+\d+\.\d \[\d+\.\d, \d+\.\d\]\s+[+-]\d+\.\d \[.*\]\s+[+-]\d+\.\d \[.*\]", row), row
    assert lines[-3:] == [f"report: {out / 'report.html'}", f"report: {out / 'report.md'}",
                          f"metrics: {out / 'metrics.parquet'} ({_metric_rows(out):,} rows)"]


def _metric_rows(out: Path) -> int:
    import polars as pl

    return pl.scan_parquet(out / "metrics.parquet").select(pl.len()).collect().item()


@pytest.mark.slow
def test_verbose_shows_what_the_workers_print(tmp_path, data_dir):
    """Ray forwards a worker's output when it gets to it: the fake LLM holds the sweep's requests
    until the ShardWorker's line has reached the command's stderr, so it cannot end before."""
    outputs: list[Output] = []

    def worker_line() -> bool:
        return any(re.search(r"biaseval: ShardWorker llm on node \w+ pid \d+", o.text) for o in outputs)

    deadline = time.monotonic() + 120  # timing: bounds a failure (the line never comes), not a passing run
    with FakeOpenAI(key=KEY, models=("gpt-test",)) as fake:
        fake.gate = Gate(1, None, lambda: worker_line() or time.monotonic() > deadline)  # timing: the deadline above
        config = tmp_path / "llm.yaml"
        config.write_text(yaml.safe_dump({
            "name": "llm", "suites": ["otsc-en"], "targets": {"otsc-en": ["es"]}, "metrics": {"bootstrap": 50},
            "systems": {"llm": {"backend": "openai", "version": "fake 2026-01",
                                "options": {"model": "gpt-test", "base_url": fake.base_url,
                                            "api_key_env": "BIASEVAL_TEST_OPENAI_KEY"}}},
        }), encoding="utf-8")
        done = _biaseval("sweep", "--config", str(config), "--out", str(tmp_path / "run"), "--verbose", cwd=tmp_path,
                         env={"BIASEVAL_TEST_OPENAI_KEY": KEY}, outputs=outputs)
    assert done.returncode == 0, done.stderr[-3000:]
    # Ray forwards what a worker prints to stdout to the driver's stdout
    assert re.search(r"biaseval: ShardWorker llm on node \w+ pid \d+", done.stdout), done.stdout[-3000:]


def test_help_and_docs_give_the_exit_status_of_missing_recordings():
    help_text = " ".join(CliRunner().invoke(main, ["sweep", "--help"]).output.split())
    assert "0 done; items that recorded outputs lack" in help_text and "are no error: a rerun cannot add them" in help_text
    assert "4 a live system left texts without a translation" in help_text
    cluster = " ".join((REPO / "docs" / "cluster.md").read_text(encoding="utf-8").split())
    assert "| 0 | done; items that recorded outputs lack" in cluster
    assert "| 4 | a live system left texts without a translation" in cluster
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert "4 a live system left texts untranslated" in readme and "recorded outputs lack" in readme


def test_list_suites_gives_items_languages_and_source(data_dir):
    listed = CliRunner().invoke(main, ["list", "suites"])
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert lines[0].split() == ["suite", "items", "languages", "scorer", "detectors", "source"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert re.fullmatch(r"winomt-en\s+27,216\s+en→de,es,fr,he,it,ru,uk \(\+ar,nl,pt on request\)\s+winomt\s+"
                        r"entity-alignment\s+Stanovsky et al\. \(2019\); dataset mt-gender "
                        r"\(gabrielStanovsky/mt_gender@c0a3b45\)", rows["winomt-en"])
    assert re.search(r"^mittens-2en\s+1,744\s+26 languages→en\s", rows["mittens-2en"])
    assert re.search(r"^mt-geneval-counterfactual\s+4,800\s+en→ar,de,es,fr,hi,it,pt,ru\s.*Currey et al\. \(2022\)",
                     rows["mt-geneval-counterfactual"])
    assert re.search(r"^otsc-en\s+320\s+en→es,it,fr,de\s.*the lexicon occupations\.csv$", rows["otsc-en"])
    assert re.search(r"^otsc-hi\s+4,284\s+hi→en\s.*Singh \(2023\); dataset gender-bias-hi-en-eval", rows["otsc-hi"])


def test_list_suites_without_the_data_counts_only_what_it_can(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASEVAL_DATA_DIR", str(tmp_path / "nothing"))
    monkeypatch.setenv("BIASEVAL_CACHE_DIR", str(tmp_path / "cache"))
    listed = CliRunner().invoke(main, ["list", "suites"])
    assert listed.exit_code == 0, listed.output
    rows = {line.split()[0]: line for line in listed.output.splitlines()[1:]}
    assert re.search(r"^winomt-en\s+—\s.*\(dataset not here: biaseval data fetch mt-gender\)$", rows["winomt-en"])
    assert re.search(r"^otsc-hi\s+—\s+hi→en\s.*\(dataset not here: biaseval data fetch gender-bias-hi-en-eval\)$",
                     rows["otsc-hi"])
    assert re.search(r"^otsc-en\s+320\s", rows["otsc-en"])  # its lexicon ships with biaseval
    assert not (tmp_path / "cache").exists()  # nothing was downloaded, or even tried


def test_list_backends_is_plain_text():
    listed = CliRunner().invoke(main, ["list", "backends"])
    assert listed.exit_code == 0
    assert "`" not in listed.output
    assert re.search(r"^azure\s+Azure AI Translator via azure\.ai\.translation\.text\.TextTranslationClient\.$",
                     listed.output, re.M)
