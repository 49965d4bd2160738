"""Every timing allowance in the tests says why it is safe: a test that waits (``time.sleep``), sets a
deadline from the clock, or asserts on elapsed time carries a ``# timing:`` comment, on the statement
or the line above, saying why a loaded or slow machine cannot make it fail (a lower bound that load
only lengthens, a bound many times what is needed, a condition polled until a generous deadline...).
What needs no allowance at all is better: a logical clock (tests/fakes/base.py ``ManualClock``), an
event, a count, CPU time instead of wall time (tests/procs.py ``cpu_seconds``)."""

from __future__ import annotations

import ast
import tokenize
from pathlib import Path

from conftest import REPO

TIME_CALLS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns", "time_ns"}
MARK = "# timing:"


def _is_clock(node: ast.AST) -> bool:
    """``time.monotonic()`` and the like (the wall clock, not CPU time)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TIME_CALLS
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "time")


def _is_sleep(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "sleep"
            and isinstance(node.func.value, ast.Name) and node.func.value.id in ("time", "asyncio"))


def _uses(node: ast.AST, names: set[str]) -> bool:
    return any(_is_clock(n) or isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def timing_statements(source: str) -> list[tuple[int, int, str]]:
    """(first line, last line, what) of each statement that is a timing allowance."""
    tree = ast.parse(source)
    clocked: set[str] = set()  # names given a wall-clock reading (started, elapsed, deadline...)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(_is_clock(n) for n in ast.walk(node.value)):
            clocked |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        end = node.end_lineno or node.lineno
        if isinstance(node, ast.Expr) and _is_sleep(node.value):
            found.append((node.lineno, end, "a sleep"))
        elif isinstance(node, ast.Assert) and _uses(node.test, clocked):
            found.append((node.lineno, end, "an assertion on elapsed time"))
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Add) \
                and (_is_clock(node.value.left) or _is_clock(node.value.right)):
            found.append((node.lineno, end, "a deadline"))
    return found


def _comments(path: Path) -> dict[int, str]:
    with path.open("rb") as handle:
        return {t.start[0]: t.string for t in tokenize.tokenize(handle.readline) if t.type == tokenize.COMMENT}


def test_every_timing_allowance_says_why():
    missing = []
    for path in sorted((REPO / "tests").glob("*.py")):
        comments = _comments(path)
        for first, last, what in timing_statements(path.read_text(encoding="utf-8")):
            if not any(comments.get(line, "").startswith(MARK) for line in range(first - 1, last + 1)):
                missing.append(f"{path.relative_to(REPO)}:{first}: {what} without a '{MARK} <why>' comment")
    assert not missing, "\n".join(missing)


def test_the_rule_sees_what_it_should():
    source = '''
import time
def f(clock):
    started = time.monotonic()
    time.sleep(0.5)
    clock.sleep(9)  # a logical clock: no allowance
    deadline = time.monotonic() + 30
    elapsed = time.perf_counter() - started
    assert elapsed < 10
    assert clock.now >= 3
    assert time.monotonic() - started < 60
'''
    assert [(first, what) for first, _, what in timing_statements(source)] == [
        (5, "a sleep"), (7, "a deadline"), (9, "an assertion on elapsed time"), (11, "an assertion on elapsed time")]
