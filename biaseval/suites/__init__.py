"""Test suites: what items a run translates and their gold labels. Built-in file suites register on
import; template suites are YAML files found by name in ``<config dir>/suites/`` (then among those
shipped in ``biaseval/data/suites/``), or given as a path. Imports ``data`` only (and ``errors``,
``registry``).
"""

from __future__ import annotations

from pathlib import Path

from biaseval.data.paths import from_file
from biaseval.errors import ConfigError
from biaseval.names import problem
from biaseval.suites import gest, mittens, mt_geneval, tgbi_hi, winomt_en, winomt_en_adj, winomt_hi  # noqa: F401  (registration)
from biaseval.suites.base import (
    ITEM_SCHEMA,
    SUITES,
    FileSuite,
    Subset,
    Suite,
    SuiteData,
    TableData,
)
from biaseval.suites.template import TemplateSuite, load_template

# The built-in suites as defined, before any run narrows one to some target languages (a run
# registers its narrowed copy; the next run starts again from these).
BUILTIN = {name: SUITES.get(name) for name in SUITES}

# The template suites shipped with biaseval (package data: found wherever it is installed).
BUILTIN_SUITES = Path(__file__).resolve().parent.parent / "data" / "suites"


def suite_path(name: str, config_dir: Path) -> Path | None:
    if name.endswith((".yaml", ".yml")):
        return from_file(name, config_dir)
    for folder in (config_dir / "suites", BUILTIN_SUITES):
        candidate = folder / f"{name}.yaml"
        if candidate.is_file():
            return candidate
    return None


def resolve_suite(name: str, config_dir: Path, lexicon: str | Path | None = None, where: str = "") -> Suite:
    """A built-in suite, or the template suite ``name`` (a name or a .yaml path), loaded and registered."""
    if name in BUILTIN:
        return BUILTIN[name]
    if name in SUITES and not isinstance(SUITES.get(name), TemplateSuite):
        return SUITES.get(name)
    if not name.endswith((".yaml", ".yml")) and (reason := problem(name)) is not None:  # a name, not a path
        raise ConfigError(f"{where + ': ' if where else ''}suite {name!r} {reason} (a suite file is given by "
                          f"a path ending in .yaml)")
    path = suite_path(name, config_dir)
    if path is None and name in SUITES:  # a template suite this process loaded from a path
        return SUITES.get(name)
    if path is None:
        message = SUITES.unknown_message(name, where)
        raise ConfigError(f"{message}; no {name}.yaml in {config_dir / 'suites'} or {BUILTIN_SUITES}")
    if not path.is_file():
        raise ConfigError(f"{where}: suite file {path} does not exist" if where else f"{path}: does not exist")
    suite = load_template(path, lexicon)
    if not name.endswith((".yaml", ".yml")) and suite.name != name:
        raise ConfigError(f"{path}: defines suite {suite.name!r}, not {name!r}")
    SUITES.put(suite.name, suite)
    return suite


__all__ = ["ITEM_SCHEMA", "SUITES", "FileSuite", "Subset", "Suite", "SuiteData", "TableData", "TemplateSuite",
           "load_template", "resolve_suite", "suite_path"]
