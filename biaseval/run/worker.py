"""The Ray actor that hosts one system's backend (``ShardWorker``) and does a sweep's tasks: writes
a recorded system's shards, sends a live system's texts into the translation store, and writes a
live system's shards from the store.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from biaseval.config import SystemConfig
from biaseval.run.filesystem import StoreOptions
from biaseval.run.plan import Shard, build_translator, sent_items
from biaseval.run.rows import SHARD_ERRORS, live_table, translation_table, unfinished
from biaseval.run.rundir import SHARD_KEY, RunDir
from biaseval.run.translation_store import KEY, STORE_POLARS, STORE_SCHEMA, TranslationStore
from biaseval.suites import SUITES, SuiteData
from biaseval.translate import TextTranslator
from biaseval.translate.base import DETAIL_COLUMNS, SystemStopped
from biaseval.translate.runner import RequestRunner, RetryPolicy


class ShardWorker:
    """Hosts one system's backend inside a Ray actor.

    ``run_shard`` (recorded systems) turns a shard of items into a Parquet file. For live systems,
    ``send_shard`` sends the texts a shard owns (retries, shared rate limit) and appends the results
    to the translation store; ``write_shard`` then writes the shard's rows from the store.
    The actor is built first (the backend) and joins a run after (``join``), before any task.
    ``die_after`` (testing only) makes the process exit after that many tasks, as a crashed worker
    would, to show that a rerun resumes cleanly.
    """

    def __init__(self, system: str, cfg_json: str, config_dir: str, suites: dict):
        """Builds (and loads) the backend: what takes time — the imports, a model — and needs nothing
        of the run, so the driver can start its actors while it plans the run. ``join`` then gives
        the actor the run it works for."""
        for suite in suites.values():  # template suites live in the driver's registry only
            SUITES.put(suite.name, suite)
        self.system = system
        self.cfg = SystemConfig.model_validate_json(cfg_json)
        self.translator = build_translator(system, self.cfg, Path(config_dir))
        if isinstance(self.translator, TextTranslator):
            self.translator.load()
        self.cache = self.identity = self.since = self.run = self.run_id = self.limiter = self.die_after = None
        self.done = 0
        self.halted: str | None = None  # the provider said this system cannot go on: no task sends again
        self.sent = 0  # texts this actor's send tasks have finished so far, all tasks together (``progress``)
        self._sent_lock = threading.Lock()  # a runner's threads finish batches at once

    def join(self, run_root: str, run_id: str, store: dict | None = None, limiter=None, die_after: int | None = None,
             run_options: dict | None = None) -> str:
        """Joins the run (before any task; answers with this actor's node once it can work: the driver
        watches actors that never start). ``store`` (live systems): the translation store's ``root``
        and ``options``, the system's ``identity`` and ``since`` (as the driver computed them) and the
        ``marker`` the driver left in the store, checked before anything else so that a store this
        node cannot see fails here."""
        import ray

        node = ray.get_runtime_context().get_node_id()
        if store is not None:
            self.cache = TranslationStore(store["root"], StoreOptions(**store["options"]))
            self.cache.check_reachable(store["marker"], f"node {node}")
            self.identity, self.since = store["identity"], store["since"]
        self.run = RunDir(run_root, StoreOptions(**(run_options or {})))
        self.run_id = run_id
        self.limiter = limiter
        self.die_after = die_after
        # one line in this worker's log: which system it hosts, on which node (placement is checkable)
        print(f"biaseval: ShardWorker {self.system} on node {node} pid {os.getpid()}", flush=True)
        return node

    def progress(self) -> int:
        """The texts this actor's send tasks have finished so far, all together. The driver calls it
        in the actor's own ``progress`` concurrency group, so it answers during a long task: that is
        how the sweep shows progress within one (a counter read; nothing is sent from here)."""
        return self.sent

    def _count_sent(self, texts: int) -> None:
        with self._sent_lock:
            self.sent += texts

    def _finished(self) -> None:
        self.done += 1
        if self.die_after is not None and self.done >= self.die_after:
            os._exit(1)

    def _write(self, shard: Shard, table: pa.Table, errors: int) -> None:
        self.run.write_shard(self.run.shard_path(shard.system, shard.suite, shard.index), table,
                             {SHARD_KEY: shard.key.encode(), SHARD_ERRORS: str(errors).encode()})

    def run_shard(self, shard: Shard, data: SuiteData) -> tuple[int, int]:
        items = data.slice(shard.start, shard.stop)
        translations, errors = self.translator.translate_items_with_errors(items)
        table = translation_table(items, translations, self.system, self.cfg.version, self.run_id, errors=errors)
        # an item its recorded outputs lack is no failure: no rerun can add it, so the shard is not redone
        # and the sweep does not exit 4 for it (its last lines name it: biaseval.cli._untranslated)
        self._write(shard, table, 0)
        self._finished()
        return table.num_rows, 0

    def send_shard(self, shard: Shard, data: SuiteData, item_keys: np.ndarray, keys: np.ndarray) -> tuple[int, int]:
        """``item_keys``: the keys of the shard's items, in order (the driver has them already);
        ``keys``: those this shard sends."""
        import ray

        if self.halted is not None:  # a task queued here before the driver heard of the stop
            raise SystemStopped(self.halted)

        items = sent_items(data.slice(shard.start, shard.stop), self.cfg)
        texts = items.select(KEY).with_columns(pl.Series("key_hash", item_keys))
        texts = texts.filter(pl.col("key_hash").is_in(pl.Series(keys).implode())).unique("key_hash", maintain_order=True)
        limiter = self.limiter
        # the limiter answers when a request may go (it decides and records the start then); a pause
        # is in force there before the thread that heard the Retry-After goes on
        acquire = (lambda requests, chars, tokens=0: ray.get(limiter.acquire.remote(requests, chars, tokens))) \
            if limiter else None
        pause = (lambda seconds: ray.get(limiter.pause.remote(seconds))) if limiter else None
        retry = self.cfg.retry
        runner = RequestRunner(self.translator,
                            RetryPolicy(retry.max_attempts, retry.backoff_s, retry.max_backoff_s, retry.timeout_s),
                            acquire=acquire, pause=pause, concurrency=self.cfg.concurrency, finished=self._count_sent)
        parts, failed, stopped = [], 0, None
        for (src, tgt), group in texts.group_by(["src_lang", "tgt_lang"], maintain_order=True):
            try:
                results = runner.translate(group["source"].to_list(), src, tgt)
            except SystemStopped as exc:  # the provider said stop (a spent quota): keep what was finished
                stopped = exc
                finished = [r is not None for r in exc.results or [None] * group.height]
                group, results = group.filter(pl.Series(finished)), [r for r in exc.results or [] if r is not None]
            sources = group["source"].to_list()
            failed += sum(not r.final for r in results)
            parts.append(_store_rows({
                "key_hash": group["key_hash"],
                "src_lang": [src] * len(sources), "tgt_lang": [tgt] * len(sources), "source": sources,
                "translation": [r.translation for r in results], "error": [r.error for r in results],
                "attempts": [r.attempts for r in results],
                "model": [r.model for r in results],
                "provider": [self.translator.provider] * len(sources),
                "system_version": [self.cfg.version] * len(sources),
                "run_id": [self.run_id] * len(sources),
                "translated_at": [r.translated_at for r in results],
                **_details(results),
            }))
            if stopped is not None:
                break
        parts = [p for p in parts if p.num_rows]
        part = self.cache.append(self.identity, pa.concat_tables(parts)) if parts else None
        if stopped is not None:  # stored; the driver stops this system's work and names the reason
            self.halted = stopped.reason
            raise SystemStopped(stopped.reason)
        self._finished()
        return texts.height, failed, str(part) if part else None

    def write_shard(self, shard: Shard, data: SuiteData, item_keys: np.ndarray, refresh: bool,
                    first: list[str]) -> tuple[int, int]:
        items = sent_items(data.slice(shard.start, shard.stop), self.cfg)
        found, failed = self.cache.latest(self.identity, items, item_keys, run_id=self.run_id if refresh else None,
                                          first=first, since=self.since)
        table = live_table(items, item_keys, found, failed, self.system, self.cfg.version, self.run_id)
        errors = unfinished(table)
        self._write(shard, table, errors)
        self._finished()
        return table.num_rows, errors


def _details(results: list) -> dict[str, list]:
    """The store's detail columns of ``results`` (all None where no result has details: most backends)."""
    if not any(r.details for r in results):
        return {name: [None] * len(results) for name in DETAIL_COLUMNS}
    return {name: [getattr(r.details, name) if r.details else None for r in results] for name in DETAIL_COLUMNS}


def _store_rows(columns: dict) -> pa.Table:
    """Columns of Python values as a table in STORE_SCHEMA, built by polars (pyarrow would import
    pandas to look at the lists, 0.2 s of the worker's first task)."""
    frame = pl.DataFrame({name: pl.Series(name, values, dtype=STORE_POLARS[name]) for name, values in columns.items()})
    return frame.to_arrow().cast(STORE_SCHEMA)

