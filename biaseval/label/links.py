"""The word links of many sentence pairs at once, as flat arrays: symmetrization and projection.

``biaseval.label.align`` decodes each direction of a whole corpus into arrays; turning them into one
Python list of ``(source, target)`` tuples per pair and symmetrizing pair by pair took more time
than the decoding. Here the same grow-diag-final-and runs over all pairs of a chunk together: each
pair's links are a boolean matrix, and the candidates are visited in the same order as
``align.symmetrize_links`` visits them (the k-th candidate of every pair in one numpy step, then
the (k+1)-th, ...), so every pair gets exactly the links ``symmetrize_links`` gives it. That
function stays the plain reference, and the tests compare the two on random link sets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

Link = tuple[int, int]  # (source token index, target token index)

SYMMETRIZATIONS = ("intersect", "union", "grow-diag-final-and")

_CELLS = 1 << 24  # booleans of one chunk's link matrices (pairs x source x target, padded)
NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


@dataclass(frozen=True)
class Links:
    """Links of ``n_pairs`` sentence pairs: pair ``pair[r]`` links source token ``src[r]`` to target
    token ``tgt[r]``; rows sorted by (pair, src, tgt), no repeats."""

    n_pairs: int
    pair: np.ndarray
    src: np.ndarray
    tgt: np.ndarray

    @classmethod
    def of(cls, n_pairs: int, pair, src, tgt) -> Links:
        """From links in any order, repeats allowed."""
        pair, src, tgt = (np.asarray(a, dtype=np.int64).reshape(-1) for a in (pair, src, tgt))
        order = np.lexsort((tgt, src, pair))
        pair, src, tgt = pair[order], src[order], tgt[order]
        keep = np.ones(len(pair), bool)
        keep[1:] = (np.diff(pair) != 0) | (np.diff(src) != 0) | (np.diff(tgt) != 0)
        return cls(n_pairs, pair[keep], src[keep], tgt[keep])

    @classmethod
    def from_lists(cls, links: Sequence[Sequence[Link]]) -> Links:
        """From one list of ``(source, target)`` links per pair (any order, repeats allowed)."""
        counts = [len(pair_links) for pair_links in links]
        flat = np.array([link for pair_links in links for link in pair_links], dtype=np.int64).reshape(-1, 2)
        return cls.of(len(links), np.repeat(np.arange(len(links)), counts), flat[:, 0], flat[:, 1])

    def lists(self) -> list[list[Link]]:
        """One sorted list of ``(source, target)`` tuples per pair."""
        out: list[list[Link]] = [[] for _ in range(self.n_pairs)]
        for k, i, j in zip(self.pair.tolist(), self.src.tolist(), self.tgt.tolist()):
            out[k].append((i, j))
        return out

    def project(self, pairs: Sequence[int], spans: Sequence[Sequence[int]]) -> list[list[int]]:
        """For each row, the sorted target indices that pair ``pairs[r]`` links to any source index
        in ``spans[r]`` (``align.project`` row by row)."""
        if len(pairs) != len(spans):
            raise ValueError(f"{len(pairs)} pairs but {len(spans)} spans")
        sizes = np.fromiter(map(len, spans), np.int64, count=len(spans))
        row = np.repeat(np.arange(len(spans)), sizes)
        wanted = np.fromiter((i for span in spans for i in span), np.int64, count=int(sizes.sum()))
        row, wanted = row[wanted >= 0], wanted[wanted >= 0]  # a negative index is no token: no link
        width = 1 + max(int(self.src.max(initial=0)), int(wanted.max(initial=0)))
        keys = self.pair * width + self.src  # sorted, as the rows are
        asked = np.asarray(pairs, dtype=np.int64).reshape(-1)[row] * width + wanted
        lo, hi = np.searchsorted(keys, asked, "left"), np.searchsorted(keys, asked, "right")
        hits = hi - lo
        at = np.arange(int(hits.sum())) - np.repeat(np.cumsum(hits) - hits, hits) + np.repeat(lo, hits)
        tgt_width = 1 + int(self.tgt.max(initial=0))
        found_row, found_tgt = np.divmod(_distinct(np.repeat(row, hits) * tgt_width + self.tgt[at]), tgt_width)
        bounds = np.searchsorted(found_row, np.arange(len(spans) + 1))
        flat = found_tgt.tolist()
        return [flat[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())]


def _distinct(keys: np.ndarray) -> np.ndarray:
    """``np.unique(keys)`` by sorting (numpy 2.4's ``np.unique`` took ten times a sort)."""
    keys = np.sort(keys)
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if len(keys) else keys


def _isin(keys: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    at = np.minimum(np.searchsorted(sorted_set, keys), max(len(sorted_set) - 1, 0))
    return (sorted_set[at] == keys) if len(sorted_set) else np.zeros(len(keys), bool)


def symmetrize_all(forward: Links, reverse: Links, src_len: np.ndarray, tgt_len: np.ndarray,
                   how: str = "grow-diag-final-and") -> Links:
    """``align.symmetrize_links(forward's links of pair k, reverse's links of pair k, how)`` for
    every pair k at once; ``src_len``/``tgt_len`` are the pairs' token counts (every link inside)."""
    if how not in SYMMETRIZATIONS:
        raise ValueError(f"unknown symmetrization {how!r}; known: {', '.join(SYMMETRIZATIONS)}")
    n_pairs = forward.n_pairs
    src_len, tgt_len = np.asarray(src_len, np.int64), np.asarray(tgt_len, np.int64)
    parts = []
    for start, stop in _chunks(src_len, tgt_len):
        fwd, rev = _rows(forward, start, stop), _rows(reverse, start, stop)
        parts.append(_symmetrize_chunk(fwd, rev, stop - start, int(src_len[start:stop].max(initial=0)),
                                       int(tgt_len[start:stop].max(initial=0)), how, start))
    if not parts:
        return Links(n_pairs, *(np.zeros(0, np.int64) for _ in range(3)))
    return Links(n_pairs, *(np.concatenate([p[k] for p in parts]) for k in range(3)))


def _chunks(src_len: np.ndarray, tgt_len: np.ndarray):
    """(start, stop) of consecutive pairs whose padded matrices hold at most _CELLS booleans (at
    least one pair each)."""
    start, n = 0, len(src_len)
    while start < n:
        size = ((np.arange(1, n - start + 1)) * (np.maximum.accumulate(src_len[start:]) + 2)
                * (np.maximum.accumulate(tgt_len[start:]) + 2))
        stop = start + max(1, int(np.searchsorted(size, _CELLS, "right")))
        yield start, stop
        start = stop


def _rows(links: Links, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lo, hi = np.searchsorted(links.pair, [start, stop])
    return links.pair[lo:hi] - start, links.src[lo:hi], links.tgt[lo:hi]


def _symmetrize_chunk(fwd, rev, n_pairs: int, n_src: int, n_tgt: int, how: str, offset: int):
    """One chunk. Links are kept as sorted keys ``(pair * rows + source) * cols + target``, and
    grow-diag-final-and reads neighbours from boolean matrices padded by one cell on every side
    (neighbours of the border read False; indices inside them are shifted by one)."""
    rows, cols = n_src + 2, n_tgt + 2

    def keys(links):
        return _distinct((links[0] * rows + links[1] + 1) * cols + links[2] + 1)

    forward, reverse = keys(fwd), keys(rev)
    if how == "intersect":
        chosen = forward[_isin(forward, reverse)]
    elif how == "union":
        chosen = _distinct(np.concatenate([forward, reverse]))
    else:
        chosen = _grow_diag_final_and(forward, reverse, (n_pairs, rows, cols))
    k, i, j = np.unravel_index(chosen, (n_pairs, rows, cols))
    return k + offset, i - 1, j - 1


def _by_rank(keys: np.ndarray, shape: tuple[int, int, int]):
    """Sorted link keys as per-pair lists in (source, target) order: (count per pair, source
    matrix, target matrix), row k of the matrices holding pair k's links left-aligned."""
    k, i, j = np.unravel_index(keys, shape)
    counts = np.bincount(k, minlength=shape[0])
    width = int(counts.max(initial=0))
    rank = np.arange(len(k)) - np.repeat(np.cumsum(counts) - counts, counts)
    src, tgt = np.zeros((shape[0], width), np.int64), np.zeros((shape[0], width), np.int64)
    src[k, rank], tgt[k, rank] = i, j
    return counts, src, tgt


def _grow_diag_final_and(forward: np.ndarray, reverse: np.ndarray, shape: tuple[int, int, int]) -> np.ndarray:
    """``align.symmetrize_links(..., "grow-diag-final-and")`` on every pair (links as sorted keys)."""
    both = forward[_isin(forward, reverse)]
    links = np.zeros(shape, bool)
    linked_src, linked_tgt = np.zeros(shape[:2], bool), np.zeros((shape[0], shape[2]), bool)
    added: list[np.ndarray] = []

    def add(k, i, j):
        links[k, i, j] = True
        linked_src[k, i] = True
        linked_tgt[k, j] = True
        added.append((k * shape[1] + i) * shape[2] + j)

    add(*np.unravel_index(both, shape))
    either = _distinct(np.concatenate([forward, reverse]))
    counts, cand_src, cand_tgt = _by_rank(either[~_isin(either, both)], shape)
    active = np.flatnonzero(counts)
    while active.size:  # a pass over every active pair's candidates; a pair that grew goes again
        grew = np.zeros(len(counts), bool)
        for rank in range(int(counts[active].max())):
            k = active[counts[active] > rank]
            i, j = cand_src[k, rank], cand_tgt[k, rank]
            touches = np.zeros(len(k), bool)
            for di, dj in NEIGHBOURS:
                touches |= links[k, i + di, j + dj]
            ok = touches & ~links[k, i, j] & ~(linked_src[k, i] & linked_tgt[k, j])
            add(k[ok], i[ok], j[ok])
            grew[k[ok]] = True
        active = np.flatnonzero(grew)
    for direction in (forward, reverse):  # final-and, forward links first, each in order
        counts, src, tgt = _by_rank(direction, shape)
        for rank in range(int(counts.max(initial=0))):
            k = np.flatnonzero(counts > rank)
            i, j = src[k, rank], tgt[k, rank]
            ok = ~linked_src[k, i] & ~linked_tgt[k, j]
            add(k[ok], i[ok], j[ok])
    return _distinct(np.concatenate(added))
