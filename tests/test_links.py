"""biaseval.label.links: the all-pairs-at-once symmetrization and projection give what the plain
one-pair functions of biaseval.label.align give, on link sets nobody designed for them."""

from __future__ import annotations

import random

import numpy as np
import pytest

from biaseval.label import links as links_module
from biaseval.label.align import SYMMETRIZATIONS, project, symmetrize_links
from biaseval.label.links import Links, symmetrize_all
from conftest import QUICK


def _random_corpus(rnd: random.Random, n_pairs: int, max_len: int, density: float):
    """Pairs of random lengths (some of one word, some long); forward links: each target word
    picks a source word or none; reverse: each source word picks a target word or none (as the
    decoders give them), with dense diagonals so that growing has work to do."""
    src_len, tgt_len, forward, reverse = [], [], [], []
    for _ in range(n_pairs):
        n, m = rnd.randint(1, max_len), rnd.randint(1, max_len)
        src_len.append(n)
        tgt_len.append(m)

        def pick(size, other):
            diagonal = rnd.random() < 0.5
            return {k: min(other - 1, max(0, round(k * other / size) + rnd.randint(-1, 1))) if diagonal
                    else rnd.randrange(other) for k in range(size) if rnd.random() < density}

        forward.append(sorted((i, j) for j, i in pick(m, n).items()))
        reverse.append(sorted(pick(n, m).items()))
    return src_len, tgt_len, forward, reverse


@pytest.mark.parametrize("how", SYMMETRIZATIONS)
@pytest.mark.parametrize("seed", range(4))
def test_symmetrize_all_equals_symmetrize_links_pair_by_pair(how, seed, monkeypatch):
    rnd = random.Random(seed)
    pairs = 200 if QUICK else 600  # the quick tier: a third of each corpus
    src_len, tgt_len, forward, reverse = _random_corpus(rnd, pairs, [3, 12, 40, 90][seed], [0.3, 0.7, 0.9, 1.0][seed])
    forward[5], reverse[5] = [], []  # a pair without links
    reverse[6] = []  # one direction empty
    monkeypatch.setattr(links_module, "_CELLS", 20_000)  # many chunks, and pairs bigger than one
    got = symmetrize_all(Links.from_lists(forward), Links.from_lists(reverse), src_len, tgt_len, how).lists()
    expected = [symmetrize_links(f, r, how) for f, r in zip(forward, reverse)]
    assert got == expected
    if how == "grow-diag-final-and":  # the corpus exercised growing and final-and
        assert sum(len(g) > len(set(f) & set(r)) for g, f, r in zip(got, forward, reverse)) > 100


def test_symmetrize_all_of_the_documented_example_and_of_nothing():
    forward, reverse = [(0, 0), (2, 1), (4, 4)], [(0, 0), (1, 1), (2, 0), (3, 3), (4, 2)]
    got = symmetrize_all(Links.from_lists([forward, []]), Links.from_lists([reverse, []]), [5, 2], [5, 3])
    assert got.lists() == [[(0, 0), (1, 1), (2, 0), (3, 3), (4, 4)], []]
    empty = Links.from_lists([])
    assert symmetrize_all(empty, empty, [], []).lists() == []
    with pytest.raises(ValueError, match="grow-diag-final-and"):
        symmetrize_all(empty, empty, [], [], "grow-diag")


def test_links_keep_sorted_unique_links():
    links = Links.from_lists([[(2, 1), (0, 3), (2, 1), (0, 0)], [], [(1, 1)]])
    assert links.lists() == [[(0, 0), (0, 3), (2, 1)], [], [(1, 1)]]
    assert links.pair.tolist() == [0, 0, 0, 2]


def test_project_equals_project_row_by_row():
    rnd = random.Random(3)
    _, _, forward, reverse = _random_corpus(rnd, 300, 30, 0.8)
    pair_links = [sorted(set(f) | set(r)) for f, r in zip(forward, reverse)]
    links = Links.from_lists(pair_links)
    pairs = [rnd.randrange(len(pair_links)) for _ in range(2000)]  # rows share pairs, any order
    spans = [[rnd.randrange(-2, 35) for _ in range(rnd.randint(0, 4))] for _ in pairs]  # repeats, outside
    spans[0], spans[1] = [], [-1]
    assert links.project(pairs, spans) == [project(pair_links[k], span) for k, span in zip(pairs, spans)]
    assert links.project([], []) == []
    assert Links.from_lists([[]]).project([0], [[0, 1]]) == [[]]
    assert Links.from_lists([[(0, 5)]]).project(np.array([0, 0]), [[0], [1]]) == [[5], []]
    with pytest.raises(ValueError, match="2 pairs but 1 spans"):
        links.project([0, 1], [[0]])
