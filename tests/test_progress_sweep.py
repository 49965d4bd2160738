"""The progress display inside a real sweep, against a slow backend: a live system whose texts all go
in one task shows them being sent within that task, with a rate and the time left, in plain lines
(its output is not a terminal). The fake OpenAI server answers the first request and holds every
other one until the display has shown that first text: the sweep cannot finish unless progress
within a running task reaches the display. The display's arithmetic and intervals on a logical
clock: tests/test_progress.py."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest
import yaml

from biaseval.pipeline import sweep
from fakes.base import Gate
from fakes.openai_server import FakeOpenAI

KEY = "sk-fake-openai-key-0123456789"
TEXTS = 80  # otsc-en into Spanish: 40 occupations x her/him, every source distinct
PARTIAL = re.compile(rf"llm: texts sent (\d+)/{TEXTS} \(([\d.]+)/s, ETA (\d+:\d\d:\d\d)\), items 0/{TEXTS}")


class Lines:
    """A stream that keeps what is written (not a terminal: the display writes plain lines)."""

    def __init__(self) -> None:
        self.text = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self.text += text
        return len(text)

    def flush(self) -> None:
        pass

    def partial(self) -> list[re.Match]:
        """Lines that show some but not all texts sent, with a rate and the time left."""
        with self._lock:
            found = [PARTIAL.search(line) for line in self.text.splitlines()]
        return [m for m in found if m and 0 < int(m.group(1)) < TEXTS]


@pytest.fixture(scope="module", autouse=True)
def _key_before_ray():
    """The key must be in the environment before the module's Ray starts its workers."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BIASEVAL_TEST_OPENAI_KEY", KEY)
        yield


def config(tmp_path: Path, base_url: str) -> Path:
    path = tmp_path / "slow.yaml"
    path.write_text(yaml.safe_dump({
        "name": "slow", "suites": ["otsc-en"], "targets": {"otsc-en": ["es"]},
        "cache": {"path": str(tmp_path / "store")}, "metrics": {"bootstrap": 50},
        "sweep": {"texts_per_task": 1000},  # every text in one task
        "systems": {"llm": {"backend": "openai", "version": "fake 2026-01", "concurrency": 1,
                            "options": {"model": "gpt-test", "base_url": base_url,
                                        "api_key_env": "BIASEVAL_TEST_OPENAI_KEY"}}},
    }), encoding="utf-8")
    return path


def test_texts_sent_within_a_running_task_are_shown_with_rate_and_time_left(tmp_path, ray_local, monkeypatch):
    monkeypatch.setenv("BIASEVAL_PROGRESS_S", "0.2")
    lines = Lines()
    # A passing run waits for the progress line, not for this deadline, which only ends a failing one
    # timing: bounds a failure (no progress line ever shown), so that it ends in the assertion, not a hang
    deadline = time.monotonic() + 120

    def release() -> bool:
        return bool(lines.partial()) or time.monotonic() > deadline  # timing: the deadline above

    with FakeOpenAI(key=KEY, models=("gpt-test",)) as fake:
        fake.gate = Gate(1, None, release)
        summary = sweep(config(tmp_path, fake.base_url), tmp_path / "run", stream=lines)
        assert fake.count == TEXTS
    shown = lines.partial()
    assert shown, lines.text
    first = shown[0]
    assert int(first.group(1)) == 1, first.group(0)  # the first text, while the task held the other 79
    assert float(first.group(2)) > 0 and first.group(3) != "0:00:00"
    assert summary.sweep.sent == TEXTS and summary.sweep.items == TEXTS
    last = lines.text.splitlines()[-1]
    assert re.fullmatch(rf"sweep \d+:\d\d:\d\d \| llm: texts sent {TEXTS}/{TEXTS} \(done\), items {TEXTS}/{TEXTS} "
                        rf"\(done\)", last), last
    assert "\x1b" not in lines.text  # plain text: no terminal control codes in a log
