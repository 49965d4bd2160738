"""The summary both reports open with: one row per system, a group of columns per suite (per suite and
target language where the suite is scored per language, as WinoMT's Table 2 is laid out), each
column a headline metric as its field reads it, with its interval, n, the published value where the
run names a paper that printed one for the same system and outputs, and letters from the paired tests.

Headline metrics: WinoMT Acc, ΔG, ΔS; MT-GenEval accuracy on the feminine and on the masculine items
and the gap; MiTTenS overall accuracy, the worst case, misgendered and the unscored share (no pronoun
into English, not read out of it); GEST's masculine rate f_m and stereotype rate f_s per target language
(n: the outputs whose speaker's gender was read); OTSC p_m and p_f per set; TGBI; gender control's share
asked for.

Letters (a compact letter display): within a column, two systems whose cells share no letter differ
significantly on the items both translated: McNemar's exact test on the outcome the column's share
counts (``metrics/paired.py``), Holm-adjusted over the column's pairs. Only share columns whose
outcome the paired tests compare get letters; a column where no pair differs gets none.

Pure: the metrics frame (and the published cells, the sets' gold genders) in, rows of strings out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from biaseval.metrics.paired import adjust, pair_subset
from biaseval.report import numbers

ALPHA = 0.05
MAX_WIDTH = 120  # characters a table of the summary may take (report.html's page holds about that)
MAX_SETS = 8  # OTSC-like suites: the first sets in the summary, all of them in the suite's section


@dataclass(frozen=True)
class Column:
    label: str  # with its unit: "Acc (%)"
    subset: str
    metric: str
    test: str | None = None  # the group of the paired tests on this column's outcome ("" for the whole suite)
    complement: bool = False  # shows 1 − the row's share (MiTTenS: not read = 1 − read)


@dataclass(frozen=True)
class Cell:
    value: str
    ci: str | None = None
    n: int | None = None
    paper: str | None = None  # the published value, as printed
    differs: bool = False  # the recomputed value, at the paper's precision, is not the printed one
    erratum: bool = False  # ... and a known erratum says why (the published tables list it)
    letters: str = ""
    note: str | None = None  # which group a worst case is


@dataclass(frozen=True)
class Group:
    title: str
    suite: str
    columns: tuple[Column, ...]
    cells: dict[str, tuple[Cell | None, ...]] = field(default_factory=dict)  # system -> a cell per column


@dataclass(frozen=True)
class Table:
    systems: tuple[str, ...]  # those with a value in one of its groups
    groups: tuple[Group, ...]


@dataclass(frozen=True)
class Summary:
    systems: tuple[str, ...]
    tables: tuple[Table, ...]
    shown: pl.DataFrame  # the metric rows the cells show (their intervals' methods go in the caption)
    lettered: bool  # whether any column has letters
    left_out: tuple[tuple[str, int, int], ...]  # (suite, sets shown, sets in all)


def _ordinary(part: pl.DataFrame) -> pl.DataFrame:
    return part.filter(~pl.col("subset").str.starts_with("vs/") & ~pl.col("subset").str.contains("/occupation/")
                       & ~pl.col("subset").str.contains("/shift/") & ~pl.col("subset").str.starts_with("cell/"))


def _groups(metrics: pl.DataFrame, suites: list[str], set_gold: dict) -> tuple[list[Group], list]:
    """The column groups of every suite in ``suites`` order, and the OTSC-like suites cut short."""
    groups, left_out = [], []
    control = metrics.filter(pl.col("metric") == "control_acc")
    for suite in suites:
        part = _ordinary(metrics.filter(pl.col("suite") == suite))
        names = set(part["metric"].to_list())
        keys = set(part.select("subset", "metric").iter_rows())
        languages = sorted({s for s, m in keys if m == "acc" and s != "all" and s.isalpha() and s.islower()
                            and len(s) <= 3})
        if "worst_case_cells" in names:
            unread = (Column("no pronoun (%)", "all", "unknown") if ("all", "unknown") in keys
                      else Column("not read (%)", "all", "read", complement=True))
            groups.append(Group(suite, suite, (Column("overall (%)", "all", "acc", test=""),
                                               Column("worst case (%)", "all", "worst_case"),
                                               Column("misgendered (%)", "all", "misgendered"), unread)))
        elif "undecided" in names:
            for lang in sorted({s for s in part["subset"].to_list() if "/" not in s}):
                groups.append(Group(f"{suite} · {lang}", suite, (
                    Column("Acc feminine (%)", f"{lang}/feminine", "acc", test=f"{lang}/feminine"),
                    Column("Acc masculine (%)", f"{lang}/masculine", "acc", test=f"{lang}/masculine"),
                    Column(numbers.header("ΔG M−F", "delta_g"), lang, "delta_g"))))
        elif "tgbi" in names:
            groups.append(Group(suite, suite, (Column("TGBI", "all", "tgbi"),)))
        elif ("all", "acc") in keys and "delta_g" in names:
            groups.append(Group(suite, suite, _winomt("all", "")))
        elif languages and "delta_g" in names:
            groups += [Group(f"{suite} · {lang}", suite, _winomt(lang, lang)) for lang in languages]
        elif "f_s" in names:  # GEST: its masculine and stereotype rates per target language; n: outputs read
            for lang in sorted({s for s, m in keys if m == "f_m"}):
                groups.append(Group(f"{suite} · {lang}", suite, (
                    Column(numbers.header("f_m", "f_m"), lang, "f_m"), Column(numbers.header("f_s", "f_s"), lang, "f_s"))))
        elif {"p_m", "p_f"} <= names:
            sets = [s for s in part.filter(pl.col("metric") == "p_f")["subset"].unique(maintain_order=True).to_list()]
            if len(sets) > MAX_SETS:
                left_out.append((suite, MAX_SETS, len(sets)))
            for s in sets[:MAX_SETS]:
                gold = set_gold.get((suite, s))
                groups.append(Group(f"{suite} · {s}", suite, (
                    Column("p_m (%)", s, "p_m", test=s if gold == "male" else None),
                    Column("p_f (%)", s, "p_f", test=s if gold == "female" else None))))
        asked = control.filter(pl.col("suite") == suite)
        if asked.height:
            subset = "all" if "all" in set(asked["subset"].to_list()) else asked["subset"][0]
            groups.append(Group(f"{suite}: gender control", suite, (Column("asked (%)", subset, "control_acc"),)))
    return groups, left_out


def _winomt(subset: str, test: str) -> tuple[Column, ...]:
    return (Column("Acc (%)", subset, "acc", test=test), Column(numbers.header("ΔG", "delta_g"), subset, "delta_g"),
            Column(numbers.header("ΔS", "delta_s"), subset, "delta_s"))


def letters(values: dict[str, float], different: set[frozenset]) -> dict[str, str]:
    """A compact letter display (Piepho 2004's insert-and-absorb): systems that share a letter do not
    differ significantly; each pair in ``different`` shares none. Letters go to the groups in order of
    their best value (``a``: the highest). Empty when no pair differs."""
    if not different:
        return {}
    groups = [frozenset(values)]
    for pair in sorted(different, key=sorted):
        a, b = sorted(pair)
        split = []
        for g in groups:
            split += [g - {b}, g - {a}] if a in g and b in g else [g]
        groups = [g for k, g in enumerate(split) if g and g not in split[:k] and not any(g < h for h in split)]
    groups.sort(key=lambda g: (-max(values[s] for s in g), sorted(g)))
    names = "abcdefghijklmnopqrstuvwxyz"
    return {s: "".join(names[k] for k, g in enumerate(groups) if s in g) for s in values}


def _tests(pairs: pl.DataFrame, suite: str, group: str, systems: list[str]) -> set[frozenset]:
    """The pairs of ``systems`` that differ at ALPHA on a column's outcome, Holm-adjusted together."""
    found = []
    for i, a in enumerate(systems):
        for b in systems[i + 1:]:
            key = (a, suite, pair_subset(b, group or None))
            if key in pairs:
                found.append((frozenset((a, b)), pairs[key]))
    adjusted = adjust([p for _, p in found], "holm")
    return {pair for (pair, _), p in zip(found, adjusted) if p < ALPHA}


def summary(metrics: pl.DataFrame, suites: list[str], systems: list[str], published: dict | None = None,
            set_gold: dict | None = None) -> Summary:
    """The summary of a run's metrics. ``suites`` and ``systems`` in the order to show; ``published``:
    (suite, subset, metric, system) -> (the value as printed, the table's scale, its decimals)
    (``published.published_values``); ``set_gold``:
    (suite, subset) -> the gold gender of a set's items, where every item of it has the same one."""
    published, set_gold = published or {}, set_gold or {}
    groups, left_out = _groups(metrics, suites, set_gold)
    rows = {(r["system"], r["suite"], r["subset"], r["metric"]): r for r in _ordinary(metrics).iter_rows(named=True)}
    # a worst case's row names its group in its subset: found by system, suite and metric
    rows |= {(r["system"], r["suite"], "all", r["metric"]): r
             for r in metrics.filter(pl.col("metric").str.starts_with("worst_")).iter_rows(named=True)}
    p_rows = metrics.filter(pl.col("subset").str.starts_with("vs/") & (pl.col("metric") == "mcnemar_p"))
    pairs = {(r["system"], r["suite"], r["subset"]): r["value"] for r in p_rows.iter_rows(named=True)}
    shown, lettered, filled = [], False, []
    for group in groups:
        cells: dict[str, list] = {s: [] for s in systems}
        for column in group.columns:
            found = {s: rows.get((s, group.suite, column.subset, column.metric)) for s in systems}
            found = {s: r for s, r in found.items() if r is not None and r["value"] is not None}
            shown += [(s, group.suite, r["subset"], column.metric) for s, r in found.items()]
            marks = {}
            if column.test is not None and len(found) > 1:
                values = {s: r["value"] for s, r in found.items()}
                marks = letters(values, _tests(pairs, group.suite, column.test, list(found)))
                lettered = lettered or bool(marks)
            for s in systems:
                cells[s].append(_cell(found.get(s), column, marks.get(s, ""),
                                      published.get((group.suite, column.subset, column.metric, s))))
        if any(c is not None for line in cells.values() for c in line):
            filled.append(Group(group.title, group.suite, group.columns, {s: tuple(c) for s, c in cells.items()}))
    keys = pl.DataFrame(shown, schema=["system", "suite", "subset", "metric"], orient="row")
    used = metrics.join(keys, on=["system", "suite", "subset", "metric"], how="semi") if keys.height else metrics.head(0)
    tables = tuple(Table(tuple(s for s in systems if any(c is not None for g in groups for c in g.cells[s])), groups)
                   for groups in _packed(filled))
    present = [s for s in systems if any(any(c is not None for c in g.cells[s]) for g in filled)]
    return Summary(tuple(present), tables, used, lettered, tuple(left_out))


def _width(group: Group) -> int:
    """About how many characters a group's columns take: its labels, or a value with its interval."""
    return sum(max(len(c.label), 11) + 2 for c in group.columns)


def _packed(groups: list[Group]) -> list[tuple[Group, ...]]:
    """The groups in tables of at most MAX_WIDTH characters, a suite's groups in one table where they
    fit (a suite wider than that fills tables of its own)."""
    by_suite: list[list[Group]] = []
    for g in groups:
        if by_suite and by_suite[-1][0].suite == g.suite:
            by_suite[-1].append(g)
        else:
            by_suite.append([g])
    tables: list[list[Group]] = []
    width = 0
    for suite_groups in by_suite:
        size = sum(_width(g) for g in suite_groups)
        if tables and width + size <= MAX_WIDTH:
            tables[-1] += suite_groups
            width += size
            continue
        tables.append([])
        width = 0
        for g in suite_groups:
            if tables[-1] and width + _width(g) > MAX_WIDTH:
                tables.append([])
                width = 0
            tables[-1].append(g)
            width += _width(g)
    return [tuple(t) for t in tables]


def _cell(row: dict | None, column: Column, marks: str, paper: tuple[str, float, int, bool] | None) -> Cell | None:
    printed = paper[0] if paper else None
    if row is None:
        return Cell("—", paper=printed) if paper else None
    value, low, high = row["value"], row["ci_low"], row["ci_high"]
    if column.complement:
        value, low, high = 1 - value, (None if high is None else 1 - high), (None if low is None else 1 - low)
    note = " / ".join(row["subset"].split("/")[1:]) if column.metric.startswith("worst_") else None
    differs = paper is not None and numbers.at_precision(value, paper[1], paper[2]) != printed
    return Cell(numbers.number(value, column.metric), numbers.interval(low, high, column.metric), row["n"],
                paper=printed, differs=differs and not paper[3], erratum=differs and paper[3], letters=marks,
                note=note)


SUPERSCRIPT = dict(zip("abcdefghijklmnoprstuvwxyz", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ"))


def caption(result: Summary, describe: str, cite: str | None) -> str:
    """What the summary's cells hold, for both reports; ``describe``: its rows' intervals in words
    (``methods.describe``)."""
    text = ("Each cell: the value, its interval and n (items scored). Shares in percent, differences of shares "
            "in percentage points (pp); the worst case names its group. " + describe)
    if result.lettered:
        text += (" Letters: within a column, two systems whose values share no letter differ significantly on "
                 "the items both translated (McNemar's exact test on the outcome the share counts, "
                 f"Holm-adjusted over the column's pairs, α = {ALPHA}); a column where no pair differs has none.")
    if cite:
        text += (f" Paper: the value printed by {cite} for the same system and outputs; marked erratum where "
                 "the recomputed value differs for a known reason (the published tables below give it), and with a "
                 "not-equal sign where it differs for none known.")
    if any(c.metric == "f_m" for t in result.tables for g in t.groups for c in g.columns):
        text += (" GEST: f_m is the masculine rate, f_s the stereotype rate (Pikuliak et al. 2024); n the outputs "
                 "whose speaker's gender was read.")
    for suite, shown, total in result.left_out:
        text += f" {suite}: the first {shown} of its {total} sets; all of them are in its own section."
    return text


def markdown(result: Summary, describe: str, cite: str | None, row) -> list[str]:
    """The summary as Markdown tables (``row`` writes an escaped table row)."""
    if not result.tables:
        return []
    lines = ["## Summary", "", caption(result, describe, cite), ""]
    for table in result.tables:
        groups = table.groups
        head = ["system"] + [f"{g.title}: {c.label}" for g in groups for c in g.columns]
        lines += [row(*head), "|---" * len(head) + "|"]
        for system in table.systems:
            cells = [_md_cell(c) for g in groups for c in g.cells[system]]
            lines.append(row(system, *cells))
        lines.append("")
    return lines


def _md_cell(cell: Cell | None) -> str:
    if cell is None:
        return "—"
    text = cell.value + "".join(SUPERSCRIPT.get(x, x) for x in cell.letters)
    if cell.ci:
        text += f" {cell.ci}"
    if cell.n is not None:
        text += f", n = {numbers.count(cell.n)}"
    if cell.note:
        text += f" ({cell.note})"
    if cell.paper:
        text += f"; paper {cell.paper}" + (" ≠" if cell.differs else " (erratum)" if cell.erratum else "")
    return text


def plain(result: Summary) -> list[str]:
    """The summary as fixed-width text for a terminal: per table, a line per column group and system,
    each cell its value with letters and interval (the units in the column names)."""
    lines: list[str] = []
    for table in result.tables:
        for group in table.groups:
            heads = [c.label for c in group.columns]
            cells = {s: [_plain_cell(c) for c in group.cells[s]] for s in table.systems}
            widths = [max([len(h)] + [len(cells[s][k]) for s in table.systems]) for k, h in enumerate(heads)]
            name = max([len(s) for s in table.systems] + [len(group.title)])
            lines.append(group.title.ljust(name) + "  " + "  ".join(h.rjust(w) for h, w in zip(heads, widths)))
            lines += [s.ljust(name) + "  " + "  ".join(c.rjust(w) for c, w in zip(cells[s], widths))
                      for s in table.systems]
            lines.append("")
    return lines


def _plain_cell(cell: Cell | None) -> str:
    if cell is None:
        return "—"
    return cell.value + (f" {cell.letters}" if cell.letters else "") + (f" {cell.ci}" if cell.ci else "")
