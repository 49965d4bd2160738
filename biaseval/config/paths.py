"""The folders a config names, resolved by the one rule of ``biaseval.data.paths``: relative to the
config file's folder (``config_dir``), whatever the current directory."""

from __future__ import annotations

from pathlib import Path

from biaseval.config.monitor import MonitorConfig
from biaseval.data.paths import from_file, location_from_file


def cache_location(cache, config_dir: Path) -> str | None:
    """``cache.path`` (a ``CacheConfig``): None for the default store, else a URI or a local folder."""
    return None if cache.path is None else location_from_file(cache.path, config_dir)


def monitor_store(monitor: MonitorConfig, config_dir: Path) -> Path:
    """``monitor.store``: the monitoring runs' folder (local)."""
    return from_file(monitor.store, config_dir)


def history_location(monitor: MonitorConfig, config_dir: Path) -> str | None:
    """``monitor.history.location``: None for the monitor's store, else a URI or a local folder."""
    where = monitor.history.location
    return location_from_file(where, config_dir) if where else None


def baseline_location(run: str, config_dir: Path) -> Path:
    """``monitor.baselines.<system>.run``: a local run directory."""
    return from_file(run, config_dir)
