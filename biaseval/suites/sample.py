"""A suite narrowed to a fixed, seeded, stratified sample of its items (how many items a paired
comparison needs: ``biaseval/suites/power.py``).

Which items (``sample_suite``): n items spread over the strata, target language, then subset, then
occupation, each level in proportion to its groups' sizes by systematic rounding (``allocate``) from a
seeded offset over the groups in a seeded order, so each group gets its quota rounded down or up and
which ones round up is random; each innermost group then gives its rows with the lowest seeded rank, a
BLAKE2b of the seed and the item's content (``item_ranks``). Every item has the same chance, n / size,
to be drawn, so the sample's occupations look like the suite's on average; nothing depends on the
order of the suite's rows (a shuffled lexicon gives the same items), and the same suite data, size
and seed give the same items in every run, so two monitoring runs stay paired item by item. The
sampled items are read in the suite's order. ``profile`` sets the sample beside its suite.
"""

from __future__ import annotations

import hashlib

import numpy as np
import polars as pl

from biaseval.suites.base import SuiteData

STRATA = ("tgt_lang", "subset", "occupation")
# what an item is, wherever it stands: its id and line number follow its place in a file or lexicon,
# and its female share follows its occupation
CONTENT = ("src_lang", "tgt_lang", "subset", "occupation", "gold", "stereotype", "entity_index", "source", "reference")
SEPARATOR, NULL = "\x1f", "\x00"
GAP = 4096  # items between two sampled ones beyond which they are read apart


def _hashes(texts: list[str]) -> np.ndarray:
    """64-bit BLAKE2b of each text (uint64): stable across processes, machines and library versions."""
    blake = hashlib.blake2b
    digests = b"".join([blake(text.encode("utf-8"), digest_size=8).digest() for text in texts])
    return np.frombuffer(digests, dtype="<u8").astype(np.uint64)


def _hashed(frame: pl.DataFrame, seed: int, tag: str, columns: list[str]) -> np.ndarray:
    """The hash of the seed, a tag and each row's values in ``columns`` (a null apart from "")."""
    parts = [pl.lit(str(seed)), pl.lit(tag), *(pl.col(c).cast(pl.String).fill_null(NULL) for c in columns)]
    return _hashes(frame.select(pl.concat_str(parts, separator=SEPARATOR)).to_series().to_list())


def item_ranks(items: pl.DataFrame, seed: int) -> np.ndarray:
    """Each row's place in the seed's random order of items: a 64-bit BLAKE2b of the seed and the
    item's content (``CONTENT``: what it says and into which language, which subset and occupation,
    never where it stands), so a row keeps its rank wherever it sits in the suite."""
    return _hashed(items, seed, "rank", [c for c in CONTENT if c in items.columns])


def _rounded(sizes, cumulated, total, offset, whole):
    """Systematic rounding (``allocate``), element by element: what each group takes."""
    return (total * cumulated + offset) // whole - (total * (cumulated - sizes) + offset) // whole


def allocate(sizes: list[int], total: int, offset: int = 0) -> list[int]:
    """``total`` (at most ``sum(sizes)``) spread over groups in proportion to their sizes by systematic
    rounding: group g gets the multiples of ``whole`` that fall in its stretch of the cumulated quotas,
    ``(total·C_g + offset) // whole − (total·C_{g−1} + offset) // whole`` (``C_g``: the sizes of groups
    1..g, ``whole``: all of them). Each group gets its quota ``total·s_g/whole`` rounded down or up
    (never more than its size), the groups get ``total`` together, and with ``offset`` drawn uniformly
    from 0..whole−1 each group's expected share is exactly its quota. Integer arithmetic: no rounding
    error decides an item."""
    whole = sum(sizes)
    if not 0 <= total <= whole:
        raise ValueError(f"cannot take {total} of {whole}")
    sizes = np.asarray(sizes, dtype=np.int64)
    return _rounded(sizes, np.cumsum(sizes), total, offset, max(whole, 1)).tolist()


def stratified_indices(items: pl.DataFrame, size: int, seed: int, levels: tuple[str, ...] = STRATA) -> np.ndarray:
    """Sorted row indices of a seeded stratified sample of ``size`` rows of ``items``, nested by
    ``levels`` (``_draw``); within the innermost groups rows go by the seeded rank of their content
    (``item_ranks``: the ``CONTENT`` columns ``items`` has)."""
    strata = items.select(levels).with_columns(pl.all().cast(pl.String).fill_null(""))
    return _draw(strata, item_ranks(items, seed), size, seed)


def _within(expr: pl.Expr, path: list[str]) -> pl.Expr:
    """``expr`` within each parent group (``path``: its columns; none at the top)."""
    return expr.over(path) if path else expr


def _draw(strata: pl.DataFrame, ranks: np.ndarray, size: int, seed: int) -> np.ndarray:
    """The sample: ``size`` rows spread over the first level's groups (``allocate``), then within
    each over the next level's, down to the innermost groups, which give their lowest-ranked rows.
    Each group's subgroups are laid out in a seeded random order (a hash of the seed and their
    values) and rounded from a seeded random offset (a hash of the seed and the group's values), so
    which subgroups round up is random; nothing depends on the rows' order, and every row has the
    same chance, ``size / rows``, to be in the sample. All groups of a level at once (a suite of a
    million items may have as many groups)."""
    if size >= strata.height:
        return np.arange(strata.height)
    if size <= 0:
        return np.zeros(0, dtype=np.int64)
    levels = list(strata.columns)
    start = int(_hashes([f"{seed}{SEPARATOR}offset"])[0]) % strata.height  # the root's: _hashed with no columns
    parents = pl.DataFrame({"_k": [size], "_offset": [start]})
    for depth in range(len(levels)):
        path, here = levels[:depth], levels[:depth + 1]
        groups = strata.group_by(here).len("_n")
        groups = groups.join(parents, on=path) if path else groups.join(parents, how="cross")
        groups = groups.with_columns(_order=pl.Series(_hashed(groups, seed, "order", here)))
        # the order within each parent is the hashes' (a window keeps the frame's order); the values
        # break a tie between two hashes, never met so far, and it costs a sort on strings
        groups = groups.sort("_order", *here) if groups["_order"].is_duplicated().any() else groups.sort("_order")
        sizes = groups["_n"].to_numpy().astype(np.int64)
        cumulated = groups.select(_within(pl.col("_n").cum_sum(), path))["_n"].to_numpy().astype(np.int64)
        whole = groups.select(_within(pl.col("_n").sum(), path))["_n"].to_numpy().astype(np.int64)
        take = _rounded(sizes, cumulated, groups["_k"].to_numpy().astype(np.int64),
                        groups["_offset"].to_numpy().astype(np.int64), whole)
        groups = groups.with_columns(_k=pl.Series(take)).filter(pl.col("_k") > 0)
        offsets = _hashed(groups, seed, "offset", here) % groups["_n"].to_numpy().astype(np.uint64)
        parents = groups.select(*here, "_k", _offset=pl.Series(offsets.astype(np.int64)))
    rows = strata.with_columns(_i=pl.int_range(pl.len(), dtype=pl.Int64)).join(parents.select(*levels, "_k"), on=levels)
    index = rows["_i"].to_numpy()
    rows = rows[np.lexsort((index, ranks[index]))]  # by rank; identical items by place
    chosen = rows.filter(pl.int_range(pl.len()).over(levels) < pl.col("_k"))["_i"].to_numpy()
    return np.sort(chosen)


class SampledData(SuiteData):
    """``inner`` seen through a fixed set of its item indices (in the suite's order)."""

    def __init__(self, inner: SuiteData, indices: np.ndarray, seed: int, profile: dict | None = None):
        self.inner = inner
        self.profile = profile  # the sample beside its suite (``profile``), recorded in run.json
        self.indices = np.asarray(indices, dtype=np.int64)
        self.suite = inner.suite
        self.size = len(self.indices)
        self.commit = inner.commit
        self.full_size = inner.size
        digest = hashlib.sha256(self.indices.tobytes()).hexdigest()[:12]
        self.fingerprint = hashlib.sha256(f"{inner.fingerprint}|sample:{seed}:{digest}".encode()).hexdigest()[:24]

    def slice(self, start: int, stop: int) -> pl.DataFrame:
        wanted = self.indices[start:stop]
        if len(wanted) == 0:
            return self.inner.slice(0, 0)
        # runs of nearby items read as one span each: a sparse sample of a generated suite does not
        # generate the whole suite
        cuts = np.flatnonzero(np.diff(wanted) > GAP) + 1
        parts = []
        for run in np.split(wanted, cuts):
            first = int(run[0])
            parts.append(self.inner.slice(first, int(run[-1]) + 1)[(run - first).tolist()])
        return pl.concat(parts) if len(parts) > 1 else parts[0]

    def subset_sizes(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for batch in self.batches():
            for subset, n in batch.group_by("subset").len().iter_rows():
                counts[subset] = counts.get(subset, 0) + n
        return counts

    def target_ranges(self) -> dict[str, tuple[int, int]]:
        return {t: (int(np.searchsorted(self.indices, a)), int(np.searchsorted(self.indices, b)))
                for t, (a, b) in self.inner.target_ranges().items()}


def profile(items: pl.DataFrame, indices: np.ndarray, seed: int) -> dict:
    """The sample beside its suite (``items``: the suite's strata, female shares and stereotypes, in
    order): items per target and subset, and for each of the two the items, the occupations they
    cover, their occupations' mean female share (%) and the share of pro-stereotypical items among
    those marked pro or anti (None where the suite has no such values). JSON, for run.json."""
    sample = items[indices]

    def given(frame: pl.DataFrame, column: str) -> pl.Series:
        return frame[column].drop_nulls() if column in frame.columns else pl.Series(column, [], dtype=pl.String)

    def stats(frame: pl.DataFrame) -> dict:
        shares, marked, occupations = (given(frame, c) for c in ("female_share", "stereotype", "occupation"))
        return {"items": frame.height, "occupations": occupations.filter(occupations != "").n_unique(),
                "female_share": float(shares.mean()) if len(shares) else None,
                "pro": float((marked == "pro").mean()) if len(marked) else None}

    drawn = dict(((t, s), n) for t, s, n in sample.group_by("tgt_lang", "subset").len().iter_rows())
    strata = [{"tgt_lang": t, "subset": s, "items": drawn.get((t, s), 0), "population": n}
              for t, s, n in items.group_by("tgt_lang", "subset", maintain_order=True).len().iter_rows()]
    return {"seed": seed, "sample": stats(sample), "population": stats(items), "strata": strata}


def sample_suite(data: SuiteData, size: int, seed: int) -> SuiteData:
    """``data`` narrowed to a stratified sample of ``size`` items (``data`` itself when it has no more)."""
    if size >= data.size:
        return data
    parts, ranks = [], []
    for batch in data.batches():
        parts.append(batch.select(*STRATA, *(c for c in ("female_share", "stereotype") if c in batch.columns)))
        ranks.append(item_ranks(batch, seed))
    items = pl.concat(parts)
    indices = _draw(items.select(STRATA).with_columns(pl.all().fill_null("")), np.concatenate(ranks), size, seed)
    return SampledData(data, indices, seed, profile(items, indices, seed))
