"""The sweep's progress display as a pure unit: counts and a logical clock in, rates, times left and
lines out (biaseval/run/progress.py). No Ray, no wall clock: the clock moves only when a test says.
The display inside a real sweep: tests/test_progress_sweep.py."""

from __future__ import annotations

import io
import re

import pytest

from biaseval.run.polling import SentPolls
from biaseval.run.progress import (
    ITEMS,
    TEXTS,
    WINDOW_S,
    Board,
    LiveProgress,
    PlainProgress,
    clock_time,
    every_s,
    open_progress,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def board(clock: Clock) -> Board:
    return Board({("google", TEXTS): 1000, ("google", ITEMS): 3390, ("wmt19", ITEMS): 3390}, clock)


def test_rate_and_time_left_follow_the_counts():
    clock = Clock()
    b = board(clock)
    google = b.row("google", TEXTS)
    assert b.rate(google) is None and b.eta(google) is None  # one sample: nothing measured yet
    clock.now += 20
    b.running("google", 100)  # within a task still running
    b.sample()
    assert b.rate(google) == pytest.approx(5.0) and b.eta(google) == pytest.approx(180.0)
    assert b.describe(google) == ("100/1,000", "5.0/s", "ETA 0:03:00")
    clock.now += 20
    b.finished("google", TEXTS, 250)  # the task ended: its texts are counted once, not twice
    b.running("google", 0)
    b.sample()
    assert google.count == 250 and b.rate(google) == pytest.approx(250 / 40)
    assert b.describe(b.row("wmt19", ITEMS)) == ("0/3,390", "", "")  # nothing moved: no rate, no time
    b.finished("wmt19", ITEMS, 3390)
    assert b.describe(b.row("wmt19", ITEMS)) == ("3,390/3,390", "", "done")
    assert b.eta(b.row("wmt19", ITEMS)) == 0.0


def test_the_rate_is_measured_over_the_last_window():
    clock = Clock()
    b = board(clock)
    google = b.row("google", TEXTS)
    for _ in range(60):  # a model loading: nothing sent for a minute (the driver samples every second)
        clock.now += 1
        b.sample()
    for _ in range(10):  # then 10 texts a second, sampled every second
        clock.now += 1
        b.running("google", google.running + 10)
        b.sample()
    assert b.rate(google) == pytest.approx(100 / 30)  # the window reaches back 30 s: 20 s idle, 10 s busy
    for _ in range(int(WINDOW_S)):
        clock.now += 1
        b.running("google", google.running + 10)
        b.sample()
    assert b.rate(google) == pytest.approx(10.0)  # the idle start is out of the window
    clock.now += WINDOW_S + 1  # stalled: nothing for longer than the window
    b.sample()
    assert b.rate(google) == 0 and b.describe(google)[2] == "ETA -:--:--"


def test_running_counts_never_pass_the_total():
    clock = Clock()
    b = board(clock)
    b.finished("google", TEXTS, 900)
    b.running("google", 400)  # a stale report from before the task ended
    assert b.row("google", TEXTS).count == 1000


def test_a_line_names_each_system_and_count():
    clock = Clock()
    b = board(clock)
    clock.now += 80
    b.running("google", 412)
    b.finished("wmt19", ITEMS, 3390)
    b.sample()
    assert b.line() == ("sweep 0:01:20 | google: texts sent 412/1,000 (5.2/s, ETA 0:01:55), items 0/3,390 | "
                        "wmt19: items 3,390/3,390 (done)")


def test_plain_lines_come_every_interval_and_at_the_end():
    clock = Clock()
    out = io.StringIO()
    b = board(clock)
    with PlainProgress(b, out, every=10.0) as progress:
        for second in range(1, 36):  # the driver ticks at least once a second
            clock.now += 1
            b.running("google", 5 * second)
            progress.tick()
    lines = out.getvalue().splitlines()
    assert [line.split(" | ")[0] for line in lines] == ["sweep 0:00:10", "sweep 0:00:20", "sweep 0:00:30",
                                                        "sweep 0:00:35"]  # and the last one, at the end
    assert "texts sent 50/1,000 (5.0/s, ETA 0:03:10)" in lines[0]


def test_no_line_is_printed_when_the_block_fails():
    clock = Clock()
    out = io.StringIO()
    with pytest.raises(RuntimeError):
        with PlainProgress(board(clock), out, every=10.0):
            raise RuntimeError("a task failed")
    assert out.getvalue() == ""  # the error says what happened; no count line after it


def test_the_live_display_shows_count_rate_and_time_left():
    clock = Clock()
    out = Terminal()
    progress = open_progress({("google", TEXTS): 1000, ("wmt19", ITEMS): 3390}, out, clock=clock)
    assert isinstance(progress, LiveProgress)
    with progress:
        clock.now += 10
        progress.board.running("google", 50)
        progress.note("sweep: google: an actor was lost; a new one takes over its tasks")
        print("sweep: aws: no live node has resource 'x' yet", file=progress.stream)
        progress.tick()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())  # without the terminal's control codes
    assert re.search(r"google\s+texts sent .*50/1,000\s+5\.0/s ETA 0:03:10", text), text
    assert re.search(r"wmt19\s+items\s.*0/3,390", text), text
    assert "an actor was lost" in text and "no live node has resource 'x' yet" in text  # above the display


def test_plain_lines_anywhere_but_a_terminal(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich would call this a terminal; a file is still a file
    progress = open_progress({("google", TEXTS): 10}, io.StringIO())
    assert isinstance(progress, PlainProgress) and progress.every == 10.0


@pytest.mark.parametrize(("value", "every"), [("", 10.0), ("2.5", 2.5), ("0", 10.0), ("-1", 10.0), ("soon", 10.0)])
def test_the_interval_setting(monkeypatch, value, every):
    monkeypatch.setenv("BIASEVAL_PROGRESS_S", value)
    assert every_s() == every


def test_clock_time():
    assert [clock_time(s) for s in (0, 0.2, 59.5, 3600, 3 * 3600 + 61)] == \
           ["0:00:00", "0:00:01", "0:01:00", "1:00:00", "3:01:01"]


def test_texts_within_running_tasks_are_what_actors_sent_less_what_ended():
    polls = SentPolls()
    a, b = object(), object()
    polls.sent = {a: 120, b: 30}  # the actors' latest answers: texts sent, all their tasks together
    polls.finished(a, 100)  # a's first task ended with 100 texts
    assert polls.running([a, b]) == 20 + 30
    polls.finished(b, 50)  # b's answer is older than its task's end: nothing negative
    assert polls.running([a, b]) == 20
