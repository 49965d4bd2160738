"""What a sweep shows while it translates: per system, the texts it has sent and the items it has
written, each as done/total with a rate and the time left.

``Board`` holds the counts and turns them into numbers and words (pure: counts and a clock in,
rates, times left and lines out). ``open_progress`` draws it: on a terminal, a live display (rich)
redrawn as the counts change; anywhere else (a CI log, a file) one plain line every
``BIASEVAL_PROGRESS_S`` seconds (default 10) and one when the translation ends.

The counts are named the same way here, in ``biaseval validate``, ``biaseval plan`` and the sweep's
last lines (docs/cluster.md, "Counts"):

- **items**: an item of a suite as one system translates it, one row of a shard (a suite of 3,390
  items run with two systems is 6,780 items);
- **texts sent** (``plan``: texts to send): the distinct source texts a live system sends, those
  the translation store already holds left out; recorded systems send none.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

ITEMS = "items"
TEXTS = "texts sent"
WINDOW_S = 30.0  # a rate is measured over the last half minute: it follows a quota's pace, not the start-up
EVERY_S = 10.0  # seconds between plain lines, unless BIASEVAL_PROGRESS_S says otherwise
REDRAW_S = 0.25  # the live display is redrawn at most this often


@dataclass
class Row:
    """One count of one system: its texts sent, or its items."""

    system: str
    unit: str  # ITEMS or TEXTS
    total: int
    done: int = 0  # in finished tasks
    running: int = 0  # within tasks still running, as their workers last said
    samples: deque = field(default_factory=deque)  # (time, count), the oldest at or before the window

    @property
    def count(self) -> int:
        return min(self.total, self.done + self.running)


class Board:
    """The counts of a sweep's translation, per system: ``finished`` when a task ends, ``running``
    for what the workers report from within their tasks, ``sample`` to note the time; ``rate``,
    ``eta`` and ``line`` read them. ``clock``: seconds, any origin (a test's own)."""

    def __init__(self, totals: dict[tuple[str, str], int], clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.start = clock()
        self.rows = [Row(system, unit, total) for (system, unit), total in totals.items() if total]
        for row in self.rows:
            row.samples.append((self.start, 0))

    def row(self, system: str, unit: str) -> Row | None:
        return next((r for r in self.rows if r.system == system and r.unit == unit), None)

    def finished(self, system: str, unit: str, units: int) -> None:
        row = self.row(system, unit)
        if row is not None:
            row.done += units

    def running(self, system: str, texts: int) -> None:
        """The texts a system's running tasks have sent so far (replaces what was said before)."""
        row = self.row(system, TEXTS)
        if row is not None:
            row.running = texts

    def sample(self) -> float:
        """Note every count at this time (the rates are measured between samples); returns the time."""
        now = self.clock()
        for row in self.rows:
            row.samples.append((now, row.count))
            while len(row.samples) > 2 and row.samples[1][0] <= now - WINDOW_S:
                row.samples.popleft()
        return now

    @staticmethod
    def rate(row: Row) -> float | None:
        """Units a second over the last WINDOW_S seconds (since the start, before that long); None
        before a second sample."""
        (t0, c0), (t1, c1) = row.samples[0], row.samples[-1]
        return (c1 - c0) / (t1 - t0) if t1 > t0 else None

    def eta(self, row: Row) -> float | None:
        """Seconds until the row is done at its rate; 0 when done, None when nothing moves yet."""
        if row.count >= row.total:
            return 0.0
        rate = self.rate(row)
        return (row.total - row.count) / rate if rate else None

    def describe(self, row: Row) -> tuple[str, str, str]:
        """(count, rate, time left) of a row in words: ``412/1,000``, ``5.0/s``, ``ETA 0:01:58``; the last
        two empty before anything moved, ``ETA -:--:--`` when nothing moved for WINDOW_S seconds."""
        count = f"{row.count:,}/{row.total:,}"
        if row.count >= row.total:
            return count, "", "done"
        rate = self.rate(row)
        if not rate:  # not started (nothing to say), or stalled for the whole window
            return count, "", "" if row.count == 0 else "ETA -:--:--"
        return count, f"{number(rate)}/s", f"ETA {clock_time(self.eta(row))}"

    def line(self, now: float | None = None) -> str:
        """Every system's counts in one plain line: ``sweep 0:01:20 | google: texts sent 412/1,000
        (5.0/s, ETA 0:01:58), items 0/3,390 | wmt19: items 3,390/3,390 (done)``."""
        now = self.clock() if now is None else now
        systems: dict[str, list[str]] = {}
        for row in self.rows:
            count, rate, eta = self.describe(row)
            said = ", ".join(x for x in (rate, eta) if x)
            systems.setdefault(row.system, []).append(f"{row.unit} {count}" + (f" ({said})" if said else ""))
        return " | ".join([f"sweep {clock_time(now - self.start)}",
                           *(f"{system}: {', '.join(parts)}" for system, parts in systems.items())])


def number(rate: float) -> str:
    return f"{rate:.1f}" if rate < 10 else f"{rate:,.0f}"


def clock_time(seconds: float) -> str:
    """``H:MM:SS``, rounded up to the second."""
    whole = math.ceil(max(0.0, seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def every_s() -> float:
    """Seconds between plain lines: BIASEVAL_PROGRESS_S when it is a positive number, else EVERY_S."""
    try:
        value = float(os.environ.get("BIASEVAL_PROGRESS_S", ""))
    except ValueError:
        return EVERY_S
    return value if value > 0 else EVERY_S


class PlainProgress:
    """A plain line every ``every`` seconds (checked whenever the driver ``tick``s), and a last one."""

    def __init__(self, board: Board, stream, every: float):
        self.board, self.stream, self.every = board, stream, every
        self.last = board.start

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self.note(self.board.line(self.board.sample()))

    def tick(self) -> None:
        now = self.board.sample()
        if now - self.last >= self.every:
            self.last = now
            self.note(self.board.line(now))

    def note(self, text: str) -> None:
        print(text, file=self.stream, flush=True)


class LiveProgress:
    """rich's live display on a terminal: a line per system and count, redrawn at most every
    REDRAW_S seconds when the driver ``tick``s (it does at least once a second); other messages
    (``note``, or written to ``stream``) are printed above it."""

    def __init__(self, board: Board, console):
        from rich.file_proxy import FileProxy
        from rich.progress import BarColumn, Progress, TextColumn

        self.board = board
        self.stream = FileProxy(console, console.file)  # what is written here goes above the display
        width = max(len(row.system) for row in board.rows)
        self.display = Progress(
            TextColumn(f"{{task.fields[system]:<{width}}}"), TextColumn("{task.fields[unit]:<10}"), BarColumn(),
            TextColumn("{task.fields[count]:>15}"), TextColumn("{task.fields[rate]:>8}"),
            TextColumn("{task.fields[eta]}"), console=console, auto_refresh=False, get_time=board.clock)
        self.tasks = [self.display.add_task("", total=row.total, system=row.system, unit=row.unit, count="",
                                            rate="", eta="") for row in board.rows]
        self.drawn = -math.inf

    def __enter__(self):
        self.tick(force=True)  # the first frame shows the counts
        self.display.start()
        return self

    def __exit__(self, *exc) -> None:
        self.tick(force=True)
        self.display.stop()

    def tick(self, force: bool = False) -> None:
        now = self.board.sample()
        if not force and now - self.drawn < REDRAW_S:
            return
        self.drawn = now
        for task, row in zip(self.tasks, self.board.rows):
            count, rate, eta = self.board.describe(row)
            self.display.update(task, completed=row.count, count=count, rate=rate, eta=eta)
        self.display.refresh()

    def note(self, text: str) -> None:
        self.display.console.print(text, markup=False, highlight=False, soft_wrap=True)


def open_progress(totals: dict[tuple[str, str], int], stream=None, *, every: float | None = None,
                  clock: Callable[[], float] = time.monotonic) -> PlainProgress | LiveProgress:
    """The display for ``totals`` ((system, ITEMS or TEXTS) -> units to do): live when ``stream``
    (default stderr) is a terminal, plain lines otherwise; use it as a context manager."""
    from rich.console import Console

    stream = sys.stderr if stream is None else stream
    board = Board(totals, clock)
    console = Console(file=stream)
    isatty = getattr(stream, "isatty", None)
    if board.rows and isatty is not None and isatty() and console.is_terminal and not console.is_dumb_terminal:
        return LiveProgress(board, console)
    return PlainProgress(board, stream, every_s() if every is None else every)
