"""Published results to compare a run with (biaseval/data/published/<name>.yaml), and their errata."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

import polars as pl

from biaseval.data.yamlio import package_yaml
from biaseval.errors import ConfigError
from biaseval.report import numbers
from biaseval.report.escape import md, row


@dataclass(frozen=True)
class Cell:
    suite: str
    subset: str
    metric: str
    system: str
    value: float  # as printed (in percent where the table's scale is 100)
    scale: float
    decimals: int


@dataclass(frozen=True)
class Erratum:
    suite: str
    subset: str
    metric: str
    system: str
    recomputed: float
    note: str


@dataclass(frozen=True)
class Table:
    title: str
    suite: str
    scale: float
    decimals: int
    rows: tuple[dict, ...]  # label, subset, metric, values (one per column)


@dataclass(frozen=True)
class Published:
    name: str
    cite: str
    columns: tuple[str, ...]
    tables: tuple[Table, ...]
    errata: tuple[Erratum, ...]

    def cells(self) -> list[Cell]:
        out = []
        for table in self.tables:
            for entry in table.rows:
                for system, value in zip(self.columns, entry["values"]):
                    out.append(Cell(table.suite, entry["subset"], entry["metric"], system, value, table.scale,
                                    table.decimals))
        return out

    def erratum(self, suite: str, subset: str, metric: str, system: str) -> Erratum | None:
        for e in self.errata:
            if (e.suite, e.subset, e.metric, e.system) == (suite, subset, metric, system):
                return e
        return None


def available() -> list[str]:
    folder = resources.files("biaseval").joinpath("data/published")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


@cache
def load(name: str) -> Published:
    if name not in available():
        raise ConfigError(f"published: unknown published results {name!r}; known: {', '.join(available())}")
    raw = package_yaml(f"data/published/{name}.yaml")
    tables = tuple(Table(t["title"], t["suite"], t["scale"], t["decimals"], tuple(t["rows"])) for t in raw["tables"])
    errata = tuple(Erratum(**e) for e in raw.get("errata", ()))
    return Published(name, raw.get("cite", ""), tuple(raw["columns"]), tables, errata)


def published_values(published) -> dict:
    """(suite, subset, metric, system) -> (the value ``published`` printed, as printed; its table's scale;
    its decimals; whether a known erratum explains a difference from the recomputed value)."""
    if published is None:
        return {}
    return {(c.suite, c.subset, c.metric, c.system): (f"{c.value:.{c.decimals}f}", c.scale, c.decimals,
                                                      published.erratum(c.suite, c.subset, c.metric, c.system) is not None)
            for c in published.cells()}


# --- a run's metrics beside a paper's tables (both reports) ---------------------------------------

def _lookup(metrics: pl.DataFrame) -> dict[tuple[str, str, str, str], dict]:
    return {(r["suite"], r["subset"], r["metric"], r["system"]): r for r in metrics.iter_rows(named=True)}


@dataclass(frozen=True)
class PublishedCell:
    """One recomputed cell beside the printed one. ``status``: "extra" (a system the paper does not
    print), "match", "erratum" (a known difference; ``note`` numbers it) or "differs"."""

    ours: str
    paper: str | None
    status: str
    note: int | None = None


@dataclass(frozen=True)
class PublishedTable:
    title: str
    suite: str
    systems: tuple[str, ...]
    rows: tuple[tuple[str, tuple[PublishedCell, ...]], ...]  # (row label, one cell per system)


@dataclass(frozen=True)
class PublishedComparison:
    tables: tuple[PublishedTable, ...]
    notes: tuple[tuple[str, str, str], ...]  # (system, row label, the erratum's note), numbered from 1


def compare_published(metrics: pl.DataFrame, published: Published, only_present: bool = False) -> PublishedComparison:
    """Each published table of a suite in ``metrics`` recomputed at the paper's precision, cell by cell:
    the paper's systems (``only_present``: those the run has), then the run's other systems."""
    cells = _lookup(metrics)
    present = set(metrics["system"].unique())
    columns = tuple(c for c in published.columns if c in present or not only_present)
    systems = columns + tuple(sorted(present - set(published.columns)))
    tables: list[PublishedTable] = []
    notes: list[tuple[str, str, str]] = []
    for table in published.tables:
        if table.suite not in set(metrics["suite"]):
            continue
        rows = []
        for entry in table.rows:
            printed = dict(zip(published.columns, entry["values"]))
            line = []
            for system in systems:
                cell = cells.get((table.suite, entry["subset"], entry["metric"], system))
                ours = numbers.at_precision(cell["value"] if cell else None, table.scale, table.decimals)
                if system not in printed:
                    line.append(PublishedCell(ours, None, "extra"))
                    continue
                paper = f"{printed[system]:.{table.decimals}f}"
                if ours == paper:
                    line.append(PublishedCell(ours, paper, "match"))
                    continue
                erratum = published.erratum(table.suite, entry["subset"], entry["metric"], system)
                if erratum is not None:
                    notes.append((system, entry["label"], erratum.note))
                    line.append(PublishedCell(ours, paper, "erratum", len(notes)))
                else:
                    line.append(PublishedCell(ours, paper, "differs"))
            rows.append((entry["label"], tuple(line)))
        tables.append(PublishedTable(table.title, table.suite, systems, tuple(rows)))
    return PublishedComparison(tuple(tables), tuple(notes))


def published_tables(metrics: pl.DataFrame, published: Published) -> list[str]:
    """Each published table recomputed: "recomputed (published)" per cell, marked where they differ."""
    comparison = compare_published(metrics, published)
    out: list[str] = []
    for table in comparison.tables:
        out.append(f"### {md(table.title)}\n")
        out.append(row("", *table.systems))
        out.append("|---" * (len(table.systems) + 1) + "|")
        for label, cells in table.rows:
            line = [label]
            for cell in cells:
                if cell.status == "extra":
                    line.append(cell.ours)
                elif cell.status == "match":
                    line.append(f"{cell.ours} ✓")
                elif cell.status == "erratum":
                    line.append(f"**{cell.ours}** (paper {cell.paper}) [{cell.note}]")
                else:
                    line.append(f"**{cell.ours}** (paper {cell.paper}) ≠")
            out.append(row(*line))
        out.append("")
    if comparison.notes:
        out.append("Known differences between the paper's print and its recorded data:\n")
        out.extend(f"{i}. {md(system)}, {md(label)}: {md(note)}" for i, (system, label, note) in enumerate(comparison.notes, 1))
        out.append("")
    return out
