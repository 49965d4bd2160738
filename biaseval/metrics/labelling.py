"""The labelling pass of scoring: every shard file of a run read in groups, each output labelled with
its suite's detector for its target language, appended to labels.parquet, and counted by everything a
metric groups by (``label_and_count``). ``metrics/scoring.py`` computes the metrics from those counts."""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from biaseval.config import RunConfig
from biaseval.errors import ConfigError, RunDirError
from biaseval.label.entities import label_languages
from biaseval.label.reference_words import ReferenceWords, label_outputs
from biaseval.label.rules import LABEL_ENUM, RuleSet, label_series
from biaseval.metrics.examples import CANDIDATES, pick
from biaseval.run.filesystem import Folder
from biaseval.suites import SUITES

# What scoring reads from the shards, and what labels.parquet holds: the label beside what metrics
# group by. Sources are in items.parquet and translations in the shards (join on system, item_id);
# each suite's detector is named in metrics.parquet.
LABEL_INPUT = ["system", "suite", "subset", "item_id", "tgt_lang", "translation", "error", "gold", "occupation",
               "female_share", "stereotype"]
# reason / evidence: why a corpus detector (WinoMT's entity alignment) chose the label, which words
# decided; null for rule-set detectors.
LABEL_COLUMNS = ["system", "suite", "item_id", "label", "reason", "evidence", "error"]
LABEL_SCHEMA = {"system": pl.String, "suite": pl.String, "item_id": pl.String, "label": pl.String,
                "reason": pl.String, "evidence": pl.String, "error": pl.String}
_DICTIONARY = pa.dictionary(pa.int32(), pa.string())  # how labels.parquet's suite and label columns are written


# What metrics group by: the counts scoring keeps, one table per view (one row per combination,
# with its count). "sets": per subset, for every scorer; "occupations": per occupation and target
# language, for suites scored per occupation. Kept apart, each stays small however many items.
SET_KEYS = {
    "tgbi": ["system", "suite", "subset", "label"],
    "otsc": ["system", "suite", "subset", "label"],
    "winomt": ["system", "suite", "subset", "tgt_lang", "stereotype", "gold", "label"],
    # reason: the paper's decision; partner: the decision on the item's other-gender version
    "mtgeneval": ["system", "suite", "subset", "tgt_lang", "gold", "label", "reason", "partner"],
}
SET_KEYS["mittens"] = ["system", "suite", "subset", "gold", "label", "reason"]  # reason: no-reader (2xx)
SET_KEYS["gest"] = ["system", "suite", "subset", "label"]  # subset: <lang>/<stereotype>
OCCUPATION_KEYS = ["system", "suite", "tgt_lang", "occupation", "female_share", "label"]


# Word-list suites are scored per word (embedding features), from their rows themselves.
ROW_COLUMNS = ["system", "suite", "subset", "source", "tgt_lang", "translation", "label"]


def count_keys(suite: str) -> dict[str, list[str]]:
    s = SUITES.get(suite)
    if s.scorer == "embedding":
        return {"rows": ROW_COLUMNS}
    views = {"sets": SET_KEYS[s.scorer]}
    if dict(s.scorer_params).get("per_occupation"):
        views["occupations"] = OCCUPATION_KEYS
    return views


def corpus_labelled(suite: str, config: RunConfig) -> bool:
    """Whether the suite's detectors label a whole corpus at once (entity alignment; MT-GenEval's
    reference words, which pair each output with its other-gender version; MiTTenS's person reader)
    rather than one text at a time; they cannot be mixed within a suite."""
    kinds = {is_corpus_detector(config.detector_for(suite, t)) for t in SUITES.get(suite).targets}
    if len(kinds) > 1:
        raise ConfigError(f"detectors of {suite}: entity-alignment detectors cannot be mixed with rule sets")
    return kinds == {True}


def is_corpus_detector(detector) -> bool:
    """A detector that labels a whole language's rows at once (``label_frame``: entity alignment,
    MiTTenS's person reader; MT-GenEval's reference words), not one text at a time."""
    return hasattr(detector, "label_frame") or isinstance(detector, ReferenceWords)


def label_corpus(rows: pl.DataFrame, suite: str, config: RunConfig, items_path) -> pl.DataFrame:
    """All rows of a corpus-labelled suite, labelled language by language (the entity's position comes
    from items.parquet)."""
    if items_path is None:
        raise RunDirError(f"{suite}: scoring needs the run's items.parquet (entity positions, references)")
    if all(isinstance(config.detector_for(suite, t), ReferenceWords) for t in SUITES.get(suite).targets):
        return label_references(rows, suite, items_path)
    entities = (pl.scan_parquet(items_path).filter(pl.col("suite") == suite)
                .select("item_id", "entity_index").collect())
    rows = rows.join(entities, on="item_id", how="left")
    languages = [(tgt, part) for tgt in SUITES.get(suite).targets
                 if (part := rows.filter(pl.col("tgt_lang") == tgt)).height]
    if not languages:
        return rows.with_columns([pl.lit(None, dtype=pl.String).alias(c) for c in ("label", "reason", "evidence")])
    return pl.concat(label_languages([(config.detector_for(suite, tgt), part) for tgt, part in languages]))


def label_references(rows: pl.DataFrame, suite: str, items_path) -> pl.DataFrame:
    """All rows of an MT-GenEval suite labelled by ``mt-geneval-words`` (its references and lines come
    from items.parquet)."""
    columns = ["item_id", "line", "reference", "counterfactual"]
    found = pl.scan_parquet(items_path).collect_schema().names()
    if "counterfactual" not in found:
        raise RunDirError(f"{items_path}: has no counterfactual references (written by an older biaseval); "
                          f"sweep the run again to rewrite it")
    items = pl.scan_parquet(items_path).filter(pl.col("suite") == suite).select(columns).collect()
    params = dict(SUITES.get(suite).scorer_params)
    return label_outputs(rows.join(items, on="item_id", how="left"), paired=bool(params.get("paired")),
                         hypothesis=params.get("hypothesis", "whole"))


def label(translations: pl.DataFrame, suite: str, config: RunConfig) -> pl.DataFrame:
    """The shard rows of one suite with a ``label`` column: the suite's detector for each row's
    target language. Where every detector of the suite is a rule set, the labels come as
    ``LABEL_ENUM`` (codes of LABELS), else as strings."""
    targets = SUITES.get(suite).targets
    detectors = {tgt: config.detector_for(suite, tgt) for tgt in targets}
    codes = all(isinstance(d, RuleSet) for d in detectors.values())

    def labelled(frame: pl.DataFrame, detector) -> pl.DataFrame:
        if codes:
            return frame.with_columns(label_series(detector, frame["translation"], LABEL_ENUM).alias("label"))
        return frame.with_columns(detector.expr("translation").alias("label"))

    if len(targets) == 1:
        return labelled(translations, detectors[targets[0]])
    return pl.concat([labelled(translations.filter(pl.col("tgt_lang") == tgt), detectors[tgt]) for tgt in targets])


def label_and_count(files: dict[str, list], config: RunConfig, labels_path, items_path=None,
                    shards: Folder | None = None) -> tuple[dict[str, pl.DataFrame], int]:
    """Label every shard file (a few groups in memory at a time), write labels.parquet (renamed into
    place when complete: system, suite, item_id, label, error — the rest joins from items.parquet), and
    return the counts the suites' scorers need (per view: "sets", "occupations") with the number of rows.
    ``files`` are names in ``shards`` (the run's shard store), or local paths when it is None.

    Shards are read in groups of about ``BATCH_ROWS`` rows. Polars runs one group's reading, labelling
    and counting on about one core, so groups are labelled in threads (polars releases the GIL; two
    per core, at most 16, as a group's work alternates between Python and native code: 10 % faster
    than one per core on 2 cores) and written by one more thread, in the order of the files, while
    later groups are labelled: at most ``threads + 2`` groups are in memory."""
    label_schema = {c: LABEL_SCHEMA[c] for c in LABEL_COLUMNS}
    # polars' strings go to the writer as Arrow string views, without a copy; the file records no
    # Arrow schema, so every reader sees plain UTF-8 strings, as before.
    schema = pl.DataFrame(schema=label_schema).to_arrow(compat_level=pl.CompatLevel.newest()).schema
    # A group's suite is the same on every row: written as a one-value dictionary and added to the
    # counts after counting, not compared row by row. Labels are few values: written from their codes
    # (rule sets label as LABEL_ENUM) as a dictionary. Both read back as plain strings, like the rest.
    at, label_at = LABEL_COLUMNS.index("suite"), LABEL_COLUMNS.index("label")
    for i in (at, label_at):
        schema = schema.set(i, pa.field(LABEL_COLUMNS[i], _DICTIONARY))
    copied = [c for c in LABEL_COLUMNS if c not in ("suite", "label")]
    tmp = labels_path.with_name(f".{labels_path.name}.{os.urandom(6).hex()}.tmp")
    jobs = []
    for suite, paths in files.items():
        corpus = corpus_labelled(suite, config)
        groups = [paths] if corpus else _groups(paths, shards)
        every = -(-len(groups) // PICKED_GROUPS)  # the examples come from at most PICKED_GROUPS groups, spread
        for k, group in enumerate(groups):
            jobs.append((suite, group, corpus, k % every == 0))
    workers = max(1, min(len(jobs), 2 * (os.cpu_count() or 1), 16))

    def label_group(job) -> tuple:
        suite, group, corpus, picked = job
        keys = count_keys(suite)
        scorer, params = SUITES.get(suite).scorer, dict(SUITES.get(suite).scorer_params)
        columns = LABEL_INPUT + ["source"] if "rows" in keys or corpus else _columns_for(suite, keys)
        rows_in = _read_shards(group, columns, shards)
        labelled = label_corpus(rows_in, suite, config, items_path) if corpus else label(rows_in, suite, config)
        labelled = labelled.with_columns([pl.lit(None, dtype=pl.String).alias(c)
                                          for c in ("reason", "evidence") if c not in labelled.columns])
        table = labelled.select(copied).cast({c: label_schema[c] for c in copied}).to_arrow(
            compat_level=pl.CompatLevel.newest())
        table = table.add_column(at, schema.field(at), _repeated(suite, labelled.height))
        table = table.add_column(label_at, schema.field(label_at), _dictionary(labelled["label"]))
        views = {}
        if picked and scorer != "embedding":  # a word list's outputs are words: the study lists them all
            views["examples"] = (pick(labelled, scorer, params, limit=None if corpus else CANDIDATES)
                                 .with_columns(pl.lit(suite, dtype=pl.String).alias("suite")))
        for view, view_keys in keys.items():
            if view == "rows":
                part, columns = labelled, view_keys
            else:  # lazily: the streaming engine counts faster
                part = (labelled.lazy().group_by([k for k in view_keys if k != "suite"]).len()
                        .rename({"len": "count"}).collect())
                columns = [*view_keys, "count"]
            views[view] = part.with_columns(pl.lit(suite, dtype=pl.String).alias("suite"),
                                            pl.col("label").cast(pl.String)).select(columns)
        return table, views, labelled.height

    counts: dict[str, list[pl.DataFrame]] = {}
    rows = 0
    try:
        # Dictionary pages for the columns with few values; item ids (one per row) are written plain,
        # as a dictionary of them would only be dropped again when it outgrows its page.
        with pq.ParquetWriter(tmp, schema, compression="zstd", write_statistics=False, store_schema=False,
                              use_dictionary=[c for c in LABEL_COLUMNS if c != "item_id"]) as writer, \
                ThreadPoolExecutor(max_workers=workers) as labelling, ThreadPoolExecutor(max_workers=1) as writing_:
            labelled_groups: deque = deque()
            written = None

            def take_next() -> None:
                nonlocal written, rows
                table, views, height = labelled_groups.popleft().result()
                if written is not None:
                    written.result()
                written = writing_.submit(writer.write_table, table)
                for view, frame in views.items():
                    counts.setdefault(view, []).append(frame)
                rows += height

            for job in jobs:
                labelled_groups.append(labelling.submit(label_group, job))
                if len(labelled_groups) > workers:
                    take_next()
            while labelled_groups:
                take_next()
            if written is not None:
                written.result()
        os.replace(tmp, labels_path)
    finally:
        tmp.unlink(missing_ok=True)
    merged = {}
    for view, parts in counts.items():
        frame = pl.concat(parts, how="diagonal_relaxed")
        merged[view] = frame if view in ("rows", "examples") else (
            frame.group_by([c for c in frame.columns if c != "count"]).agg(pl.col("count").sum()))
    return merged, rows


def _dictionary(labels: pl.Series) -> pa.DictionaryArray:
    """A label column as an Arrow dictionary of plain strings: from its codes where it is an Enum."""
    if isinstance(labels.dtype, pl.Enum):
        codes = labels.to_physical().cast(pl.Int32).to_arrow()
        return pa.DictionaryArray.from_arrays(codes, _strings(labels.dtype.categories))
    return labels.cast(pl.String).to_arrow().dictionary_encode().cast(_DICTIONARY)


def _repeated(value: str, n: int) -> pa.DictionaryArray:
    """``value`` on ``n`` rows, as a dictionary of one value."""
    return pa.DictionaryArray.from_arrays(pl.zeros(n, pl.Int32, eager=True).to_arrow(), _strings(pl.Series([value])))


def _strings(values: pl.Series) -> pa.Array:
    """Strings as an Arrow array, made by polars (pyarrow would import pandas to look at a list)."""
    return values.cast(pl.String).to_arrow().cast(pa.string())


BATCH_ROWS = 65_536  # a group labelled: ~20 MB with the columns scoring reads (the 1 M-item bench's peak)
# Groups of a suite the examples are picked from (metrics/examples.py), every k-th where it has more: a
# pick costs a few milliseconds a group, and eight groups of 65,536 rows give plenty to choose from.
PICKED_GROUPS = 8


def _columns_for(suite: str, keys: dict[str, list[str]]) -> list[str]:
    """The shard columns a rule-set suite's labelling and counts use: what labels.parquet keeps, what
    its views group by, and the target language and gold gender (the examples': metrics/examples.py).
    Not the suite: every row of a suite's shards has its name (reading it costs as much as reading
    the system)."""
    wanted = {"system", "item_id", "translation", "error"} | {k for view in keys.values() for k in view if k != "suite"}
    wanted |= {"tgt_lang", "gold"}  # the examples' (metrics/examples.py): few values each, cheap to read
    return [c for c in LABEL_INPUT if c in wanted]


def _read_shards(group: list, columns: list[str], shards: Folder | None) -> pl.DataFrame:
    """A group of shard files as one frame; a file that cannot be read is named in the error."""
    try:
        return shards.read_frame(group, columns) if shards is not None else pl.read_parquet(group, columns=columns)
    except Exception:  # noqa: BLE001 - find the file at fault, each checked against its page checksums
        for path in group:
            try:
                if shards is not None:
                    shards.read_table([path], columns, verify=True)
                else:
                    pq.read_table(path, columns=columns, page_checksum_verification=True)
            except Exception as exc:  # noqa: BLE001
                where = shards.uri(path) if shards is not None else str(path)
                raise RunDirError(f"{where}: damaged ({type(exc).__name__}: {str(exc).strip()[:300]}); rerun the "
                                  f"sweep with the same --out to write it again") from None
        raise


def _groups(paths: list, shards: Folder | None = None) -> list[list]:
    """Consecutive files, about BATCH_ROWS rows a group (from the files' metadata)."""
    groups, current, rows = [], [], 0
    for path in paths:
        n = shards.parquet_metadata(path).num_rows if shards is not None else pq.read_metadata(path).num_rows
        if current and rows + n > BATCH_ROWS:
            groups.append(current)
            current, rows = [], 0
        current.append(path)
        rows += n
    return groups + ([current] if current else [])
