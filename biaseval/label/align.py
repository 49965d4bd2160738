"""Word alignment between source sentences and their translations, for WinoMT-style scoring.

The aligner is trained, unsupervised, on exactly the sentence pairs being scored (all pairs of one
target language), then each pair gets a list of ``(source index, target index)`` links. ``project``
turns the links into the target tokens that translate a source entity ("the developer" ->
"la desarrolladora").

Both methods give a forward alignment (every target word picks at most one source word) and a
reverse one (every source word picks at most one target word); ``symmetrize_links`` combines them.

``fast_align`` (the ``systran-align`` wheel; the default)
    The wheel trains both directions (EM with fast_align's diagonal prior) into two probability
    files, but its own aligner only returns links it has already symmetrized with
    grow-diag-final-and. So this module reads the probability files itself (``_read_table``; the
    layout is undocumented, see there) and finds each direction's links with fast_align's decision
    rule (``_viterbi``). Its grow-diag-final-and agrees with the wheel's on >99% of pairs; the rest
    are exact ties that rounding breaks the other way.

    Training runs in a child process with ``OMP_NUM_THREADS=1`` (``FAST_ALIGN_THREADS``). With
    several threads the wheel adds up counts in whatever order the threads finish: on the
    3,888 x 4 WinoMT en-es pairs 2.5-3% of pairs got different links from one run to the next.
    Single-threaded, every run gives the same links (EM has no randomness, so ``seed`` has nothing
    to set), at a price: those 15,552 pairs took 3.3 s to train instead of 2.0 s on a quiet 2-core
    machine, about 5 s for the whole call. Being deterministic, the trained models are kept
    (``model_cache()``, under the hash of the corpus, the options and the wheel's version), so
    scoring the same pairs again reads them instead of training.

    Its prior is on absolute position (target word j of m near source word i of n). A phrase that
    moves far (an adverb or place phrase from the end of the sentence to the front) pulls
    ambiguous short words, determiners above all, to the wrong place; so do the contractions
    "al"/"del". On WinoMT en-es the entity's projection holds its noun in 99.7% of the cases
    checkable with the occupation lexicon, and is exactly determiner + noun in 86%
    (grow-diag-final-and), 85% (union), and only 43% with ``intersect``, which drops most
    determiners.

``eflomal`` (the ``eflomal`` package)
    A Gibbs sampler over IBM1, HMM (relative jumps, so moved phrases stay intact) and fertility
    models; on WinoMT en-es the projection holds the noun in 98.9% and is exactly determiner + noun
    in 93% (grow-diag-final-and), in ~3 s for the 15,552 pairs. The ``eflomal`` binary seeds its
    random generator from the clock and has no option to set it, so **eflomal links vary from run
    to run** (about 40% of WinoMT pairs differ somewhere between two runs; the share of entities
    placed right moved by 0.2 points) and ``seed`` cannot make them repeatable.

Tokens are lowercased and then replaced by numbers before they reach either library, so a token
holding whitespace or ``|||`` cannot break their file formats. Pairs with an empty side are left
out of training and get no links.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
from itertools import chain
from pathlib import Path
from typing import Sequence

import numpy as np

from biaseval.errors import ConfigError
from biaseval.label.links import NEIGHBOURS, SYMMETRIZATIONS, Link, Links, symmetrize_all
from biaseval.label.tokens import tokenize

__all__ = ["METHODS", "SYMMETRIZATIONS", "Link", "Links", "align", "align_links", "project", "symmetrize_links",
           "tokenize"]

METHODS = ("fast_align", "eflomal")

_PACKAGES = {  # method: (module to import, package to pip install)
    "fast_align": ("systran_align", "systran-align"), "eflomal": ("eflomal", "eflomal")}

# fast_align's model: the null word takes P_NULL of the alignment mass, the rest favours the
# diagonal with strength TENSION (both fast_align's defaults; the tension is kept fixed in training
# because the probability files do not record it). A word pair missing from the table gets
# fast_align's floor probability.
P_NULL = 0.08
TENSION = 4.0
FLOOR = 1e-9
_FAST_ALIGN_OPTIONS = dict(favor_diagonal=True, diagonal_tension=TENSION, optimize_tension=False,
                           prob_align_null=P_NULL, iterations=5)
# Training threads. 1 makes runs repeatable; more train faster when the cores are free (2.0 s
# instead of 3.3 s for 15,552 pairs on 2 cores), but then ~2.5% of WinoMT pairs (~0.1% of entity
# projections) change from run to run.
FAST_ALIGN_THREADS = 1

# eflomal: several samplers run in parallel and their link marginals are averaged.
# With eflomal's default effort (3 samplers, rel_iterations=1) 15,552 WinoMT en-es pairs took 14 s
# on 2 cores; these settings take ~3 s and placed the entity noun no worse (98.7% vs 96.6%).
_EFLOMAL_OPTIONS = dict(model=3, n_samplers=2, rel_iterations=0.25)

_CHUNK = 4000  # pairs decoded at once (bounds the memory of the vectorised decoder)


def align(src: Sequence[Sequence[str]], tgt: Sequence[Sequence[str]], *, method: str = "fast_align",
          symmetrize: str = "grow-diag-final-and", seed: int = 0) -> list[list[Link]]:
    """Links ``(source index, target index)`` for every pair ``(src[k], tgt[k])``, sorted.

    The aligner is trained on exactly these pairs (case-insensitive). ``method`` is one of
    ``METHODS``, ``symmetrize`` one of ``SYMMETRIZATIONS``. ``seed`` is accepted so callers can
    record one, but neither library lets it matter: fast_align is deterministic anyway, eflomal
    never is (see the module docstring).
    """
    return align_links(src, tgt, method=method, symmetrize=symmetrize, seed=seed).lists()


def align_links(src: Sequence[Sequence[str]], tgt: Sequence[Sequence[str]], *, method: str = "fast_align",
                symmetrize: str = "grow-diag-final-and", seed: int = 0) -> Links:
    """``align``'s links as flat arrays (``Links``: no Python tuple per link, ``Links.project`` for
    many rows at once), for a corpus of thousands of pairs."""
    if method not in METHODS:
        raise ValueError(f"unknown alignment method {method!r}; known: {', '.join(METHODS)}")
    if symmetrize not in SYMMETRIZATIONS:
        raise ValueError(f"unknown symmetrization {symmetrize!r}; known: {', '.join(SYMMETRIZATIONS)}")
    if len(src) != len(tgt):
        raise ValueError(f"{len(src)} source sentences but {len(tgt)} target sentences")
    del seed  # see the docstring
    library = _require(method)  # fail early, before any work, when it is not installed

    src_ids, tgt_ids = _encode(src), _encode(tgt)
    kept = np.array([k for k in range(len(src_ids)) if src_ids[k] and tgt_ids[k]], dtype=np.int64)
    if not len(kept):
        return Links(len(src_ids), *(np.zeros(0, np.int64) for _ in range(3)))
    s = [src_ids[k] for k in kept.tolist()]
    t = [tgt_ids[k] for k in kept.tolist()]
    if method == "fast_align":
        forward, reverse = _fast_align(s, t)
    else:
        forward, reverse = _eflomal(library, s, t)
    lengths = [np.fromiter(map(len, side), np.int64, count=len(side)) for side in (s, t)]
    links = symmetrize_all(forward, reverse, *lengths, how=symmetrize)
    return Links(len(src_ids), kept[links.pair], links.src, links.tgt)


def project(links: Sequence[Link], src_span: Sequence[int]) -> list[int]:
    """Sorted target indices linked to any source index in ``src_span`` (e.g. an entity's
    determiner and noun); empty when none is linked. (``Links.project`` does it for many rows.)"""
    span = set(src_span)
    return sorted({j for i, j in links if i in span})


# --- symmetrization (the plain reference: align_links runs links.symmetrize_all) ---------------


def symmetrize_links(forward: Sequence[Link], reverse: Sequence[Link],
                     how: str = "grow-diag-final-and") -> list[Link]:
    """One alignment from the two directional ones (all links as ``(source, target)``), sorted.

    ``intersect``: links both directions found (precise, sparse). ``union``: links either found
    (dense, noisy). ``grow-diag-final-and`` (Koehn et al. 2003): start from the intersection;
    *grow*: over and over until nothing changes, go through the union's other links in (source,
    target) order and add one when it touches an added link (8-neighbour, diagonals included) and
    its source or its target word has no link yet; *final-and*: go through the forward, then the
    reverse links in order and add those whose source and target words both have no link yet.
    Koehn's description leaves the order of growing open; this one (candidates in order, rather
    than neighbours of each added link) is the one that reproduces the systran-align wheel's own
    grow-diag-final-and. ``align`` runs the same steps on all pairs at once
    (``biaseval.label.links.symmetrize_all``); this is the plain version, one pair at a time.
    """
    fwd, rev = set(forward), set(reverse)
    if how == "intersect":
        return sorted(fwd & rev)
    if how == "union":
        return sorted(fwd | rev)
    if how != "grow-diag-final-and":
        raise ValueError(f"unknown symmetrization {how!r}; known: {', '.join(SYMMETRIZATIONS)}")

    links = fwd & rev
    linked_src = {i for i, _ in links}
    linked_tgt = {j for _, j in links}

    def add(i: int, j: int) -> None:
        links.add((i, j))
        linked_src.add(i)
        linked_tgt.add(j)

    candidates = sorted((fwd | rev) - links)
    if not candidates:  # the directions agree: nothing to grow, and final-and finds every link taken
        return sorted(links)
    grown = True
    while grown:
        grown = False
        for i, j in candidates:
            if (i, j) in links or (i in linked_src and j in linked_tgt):
                continue
            for di, dj in NEIGHBOURS:
                if (i + di, j + dj) in links:
                    add(i, j)
                    grown = True
                    break
    for direction in (fwd, rev):
        for i, j in sorted(direction):
            if i not in linked_src and j not in linked_tgt:
                add(i, j)
    return sorted(links)


# --- shared helpers ---------------------------------------------------------------------------

def _require(method: str):
    """The library behind ``method``, or a ConfigError saying what to install."""
    module, package = _PACKAGES[method]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"word alignment with method {method!r} needs the {package!r} package: "
                          f"pip install {package}") from exc


def _encode(sentences: Sequence[Sequence[str]]) -> list[list[int]]:
    """Sentences as word numbers (0, 1, ... in order of first appearance), case-insensitively."""
    vocab: dict[str, int] = {}  # lowercased word -> number
    seen: dict[str, int] = {}  # word as written -> number (lowercasing each distinct spelling once)

    def number(token: str) -> int:
        found = seen[token] = vocab.setdefault(token.lower(), len(vocab))
        return found

    done: dict[int, list[int]] = {}  # id of a sentence object -> its numbers (a source repeats per system)

    def encoded(sentence: Sequence[str]) -> list[int]:
        try:  # most sentences hold only words seen before: looked up in one C loop
            found = list(map(seen.__getitem__, sentence))
        except KeyError:
            found = [seen[token] if token in seen else number(token) for token in sentence]
        done[id(sentence)] = found
        return found

    return [done[id(s)] if id(s) in done else encoded(s) for s in sentences]


def _lines(sentences: Sequence[Sequence[int]]) -> list[str]:
    done: dict[int, str] = {}  # id of a sentence object -> its line (shared lists are joined once)
    return [done[id(s)] if id(s) in done else done.setdefault(id(s), " ".join(map(str, s))) for s in sentences]


# --- fast_align (systran-align) ---------------------------------------------------------------

_TRAIN = ("import sys, systran_align; from ast import literal_eval; "
          "systran_align.generate_alignment_probabilities(*sys.argv[1:4], **literal_eval(sys.argv[4]))")


def _fast_align(src: list[list[int]], tgt: list[list[int]]) -> tuple[Links, Links]:
    """Forward and reverse links of every (non-empty) pair, from models trained on them (or the
    models trained before on the very same corpus: ``_trained``)."""
    corpus = "".join(f"{s} ||| {t}\n" for s, t in zip(_lines(src), _lines(tgt)))
    (forward_name, forward_data), (reverse_name, reverse_data) = _trained(corpus)
    n_src = 1 + max(max(s) for s in src)
    n_tgt = 1 + max(max(t) for t in tgt)
    forward_table = _parse_table(forward_data, forward_name, n_tgt)  # t(target word | source word)
    reverse_table = _parse_table(reverse_data, reverse_name, n_src)  # t(source word | target word)
    forward = Links.of(len(src), *_viterbi(forward_table, src, tgt, n_tgt))
    pair, j, i = _viterbi(reverse_table, tgt, src, n_src)  # conditioned on the target: (pair, target, source)
    return forward, Links.of(len(src), pair, i, j)


def model_cache() -> Path:
    """Where trained fast_align models are kept: ``$BIASEVAL_CACHE_DIR/alignments`` (default
    ``~/.cache/biaseval/alignments``)."""
    from biaseval.data.datasets import cache_root

    return cache_root() / "alignments"


def _trained(corpus: str) -> tuple[tuple[str, bytes], tuple[str, bytes]]:
    """The forward and reverse probability files (name, content) of models trained on ``corpus``
    (numbered words, "src ||| tgt" lines). Training is deterministic (one thread), so the files are kept under the
    hash of everything that decides them — the corpus, the options, the threads and the wheel's
    version — and scoring the same pairs again (a rescore, the same outputs in another run) reads
    them instead of training. Training runs in a child process of this same interpreter,
    single-threaded (see the module docstring); a cache that cannot be written is skipped."""
    from importlib.metadata import version

    key = hashlib.sha256(repr((corpus, _FAST_ALIGN_OPTIONS, FAST_ALIGN_THREADS,
                               version("systran-align"))).encode("utf-8")).hexdigest()[:32]
    folder = model_cache()
    forward, reverse = folder / f"{key}.fwd", folder / f"{key}.rev"
    try:
        return (str(forward), forward.read_bytes()), (str(reverse), reverse.read_bytes())
    except OSError:
        pass  # not trained yet
    with tempfile.TemporaryDirectory(prefix="biaseval-align-") as tmp:
        corpus_path, forward_tmp, reverse_tmp = (str(Path(tmp, name)) for name in ("corpus", "fwd", "rev"))
        Path(corpus_path).write_text(corpus, encoding="utf-8")
        env = {**os.environ, "OMP_NUM_THREADS": str(FAST_ALIGN_THREADS)}
        done = subprocess.run([sys.executable, "-c", _TRAIN, corpus_path, forward_tmp, reverse_tmp,
                               repr(_FAST_ALIGN_OPTIONS)], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"systran-align training failed (exit {done.returncode}): "
                               f"{done.stderr.strip()[-2000:]}")
        trained = (forward_tmp, Path(forward_tmp).read_bytes()), (reverse_tmp, Path(reverse_tmp).read_bytes())
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for made, kept in ((forward_tmp, forward), (reverse_tmp, reverse)):  # each renamed in whole
                staged = kept.with_name(f".{kept.name}.{os.getpid()}.tmp")
                shutil.copyfile(made, staged)
                os.replace(staged, kept)
        except OSError:
            pass  # a read-only or full cache: this training is used once, and not kept
    return trained


def _read_table(path: str, n_generated: int) -> tuple[np.ndarray, np.ndarray]:
    """A systran-align probability file as ``(keys, probabilities)``, keys sorted (``_parse_table``)."""
    return _parse_table(Path(path).read_bytes(), str(path), n_generated)


def _parse_table(data: bytes, path: str, n_generated: int) -> tuple[np.ndarray, np.ndarray]:
    """The content of a systran-align probability file (``path`` names it in errors) as ``(keys,
    probabilities)``, keys sorted.

    ``key = (conditioning word + 1) * n_generated + generated word``, so the null word (conditioning
    word -1) has keys below ``n_generated``. Words are this module's word numbers (``_encode``),
    which is what the training corpus held.

    The wheel documents no reader; this layout was read off systran-align 3.5.0's files (all
    little-endian): int32 format version (2); int32 word count; the words, each NUL-terminated,
    numbered from 1 in that order (word 1 is ``<eps>``, the null word; word 2 is ``|||``); an int32
    this reader does not need; then to the end of the file, one row per conditioning word: int32
    word number, int32 entry count, and that many (int32 generated word number, float32
    probability). Entries under the training beam threshold are not stored.
    """
    version, n_words = np.frombuffer(data, "<i4", count=2)
    if version != 2:
        raise RuntimeError(f"{path}: systran-align probability file version {version}; "
                           "this reader knows version 2 (systran-align 3.5)")
    words = data[8:].split(b"\0", n_words)
    # Our own word numbers by file word number (index 0 unused): <eps> -> -1, ||| -> -2.
    ours = np.array([0] + [-1 if w == b"<eps>" else -2 if w == b"|||" else int(w) for w in words[:n_words]],
                    dtype=np.int64)
    table = np.frombuffer(words[n_words], "<i4")
    values = np.frombuffer(words[n_words], "<f4")
    keys, probs = [], []
    at = 1  # skip the int32 this reader does not need
    while at < len(table):
        row, count = table[at], table[at + 1]
        entries = slice(at + 2, at + 2 + 2 * count, 2)
        keys.append((ours[row] + 1) * n_generated + ours[table[entries]])
        probs.append(values[at + 3: at + 3 + 2 * count: 2])
        at += 2 + 2 * count
    keys_all = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    probs_all = np.concatenate(probs).astype(np.float64) if probs else np.zeros(0)
    order = np.argsort(keys_all)
    return keys_all[order], probs_all[order]


def _lookup(table: tuple[np.ndarray, np.ndarray], keys: np.ndarray) -> np.ndarray:
    """Probabilities of ``keys`` in ``table``; FLOOR for keys it lacks."""
    known, probs = table
    if len(known) == 0:
        return np.full(len(keys), FLOOR)
    at = np.minimum(np.searchsorted(known, keys), len(known) - 1)
    return np.where(known[at] == keys, probs[at], FLOOR)


# Up to this many cells (about 64 MB), a probability table is laid out densely for the decoder, one
# float32 cell per possible key: one read per lookup instead of a binary search's twenty.
_DENSE_CELLS = 1 << 24


class _Table:
    """``lookup(keys)``: what ``_lookup(table, keys)`` gives, from a dense copy of the table when
    its keys fit (all of them in ``[0, size)``, no repeats, no NaN probability), else by ``_lookup``."""

    def __init__(self, table: tuple[np.ndarray, np.ndarray], size: int):
        keys, probs = table
        self.table, self.dense = table, None
        fits = size <= _DENSE_CELLS and (len(keys) == 0 or (keys[0] >= 0 and keys[-1] < size))
        if fits and not (np.diff(keys) <= 0).any() and not np.isnan(probs).any():
            self.dense = np.full(size, np.nan, np.float32)
            self.dense[keys] = probs.astype(np.float32)  # read from float32: converting back is exact

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        if self.dense is None or len(keys) == 0 or keys.min() < 0 or keys.max() >= len(self.dense):
            return _lookup(self.table, keys)
        found = self.dense[keys].astype(np.float64)
        found[np.isnan(found)] = FLOOR
        return found


def _viterbi(table: tuple[np.ndarray, np.ndarray], cond: list[list[int]], gen: list[list[int]],
             n_generated: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """fast_align's links for each pair: every generated word ``g_j`` (of ``m``) is linked to the
    conditioning word ``c_i`` (of ``n``) that maximises ``t(g_j | c_i) * (1 - P_NULL) * h(i, j)``,
    with ``h(i, j) = exp(-TENSION * |(i+1)/n - (j+1)/m|)`` normalised over ``i`` (the first ``i``
    on a tie), and left unlinked when ``t(g_j | null) * P_NULL`` is larger. The links as arrays
    (pair, i, j), in the order of the pairs and, within one, of j. Vectorised over all word pairs
    of a chunk of sentence pairs."""
    out = []
    lookup = _Table(table, (2 + max(max(s) for s in cond)) * n_generated if cond else 0).lookup
    for start in range(0, len(cond), _CHUNK):
        c_sents, g_sents = cond[start:start + _CHUNK], gen[start:start + _CHUNK]
        n = np.array([len(s) for s in c_sents])
        m = np.array([len(s) for s in g_sents])
        c_flat = np.fromiter(chain.from_iterable(c_sents), np.int64, count=n.sum())
        g_flat = np.fromiter(chain.from_iterable(g_sents), np.int64, count=m.sum())
        c_start = np.cumsum(n) - n
        g_start = np.cumsum(m) - m
        # One cell per (pair, generated word j, conditioning word i), ordered so that the cells of
        # one generated word are contiguous: a "group" per generated word, of n cells.
        cells = n * m
        pair = np.repeat(np.arange(len(n)), cells)
        offset = np.arange(cells.sum()) - np.repeat(np.cumsum(cells) - cells, cells)
        n_cell, m_cell = n[pair], m[pair]
        i, j = offset % n_cell, offset // n_cell
        word = g_start[pair] + j  # the generated word's index in g_flat = its group number
        c, g = c_flat[c_start[pair] + i], g_flat[word]

        h = np.exp(-TENSION * np.abs((i + 1) / n_cell - (j + 1) / m_cell))
        group_start = np.flatnonzero(i == 0)
        score = lookup((c + 1) * n_generated + g) * (1 - P_NULL) * h
        score /= np.add.reduceat(h, group_start)[word]
        best = np.maximum.reduceat(score, group_start)
        first_best = np.where(score == best[word], i, np.iinfo(np.int64).max)
        best_i = np.minimum.reduceat(first_best, group_start)
        linked = best > lookup(g_flat) * P_NULL  # null-word keys are the bare word numbers

        word_pair = np.repeat(np.arange(len(m)), m)
        word_j = np.arange(len(g_flat)) - g_start[word_pair]
        out.append((word_pair[linked] + start, best_i[linked], word_j[linked]))
    return tuple(np.concatenate([part[k] for part in out]) if out else np.zeros(0, np.int64) for k in range(3))


# --- eflomal ----------------------------------------------------------------------------------

def _eflomal(eflomal, src: list[list[int]], tgt: list[list[int]]) -> tuple[Links, Links]:
    """Forward and reverse links of every (non-empty) pair from eflomal (both as (source, target))."""
    with tempfile.TemporaryDirectory(prefix="biaseval-align-") as tmp:
        forward_path, reverse_path = str(Path(tmp, "fwd")), str(Path(tmp, "rev"))
        eflomal.Aligner(**_EFLOMAL_OPTIONS).align(_lines(src), _lines(tgt), links_filename_fwd=forward_path,
                                                 links_filename_rev=reverse_path, quiet=True)
        return (Links.from_lists(_read_links(forward_path, len(src))),
                Links.from_lists(_read_links(reverse_path, len(src))))


def _read_links(path: str, n_pairs: int) -> list[list[Link]]:
    """Pharaoh-format links ("0-0 1-2 ...", one line per pair)."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")[:n_pairs]
    if len(lines) < n_pairs:
        raise RuntimeError(f"eflomal wrote links for {len(lines)} of {n_pairs} sentence pairs")
    return [[(int(i), int(j)) for i, j in (link.split("-") for link in line.split())] for line in lines]
