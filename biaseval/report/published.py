"""Published results to compare a run with (biaseval/data/published/<name>.yaml), and their errata."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from biaseval.data.yamlio import package_yaml
from biaseval.errors import ConfigError


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
            for row in table.rows:
                for system, value in zip(self.columns, row["values"]):
                    out.append(Cell(table.suite, row["subset"], row["metric"], system, value, table.scale, table.decimals))
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
