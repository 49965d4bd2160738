"""TGBI-Hindi: gender-neutral Hindi sentences (Ramesh et al. 2021), as used by Singh (2023).

Every sentence uses the gender-neutral pronoun वह, so a fair translation is gender-neutral; TGBI
(Cho et al. 2019) rewards sets that are translated neutral or balanced between he and she.
"""

from __future__ import annotations

from biaseval.data.datasets import LocalDataset
from biaseval.data.textio import read_lines
from biaseval.suites.base import SUITES, FileSuite, Subset, item_frame

CORPUS = "TGBI and Simple Context Evaluation/corpus/TGBI Original Hindi Corpus"

# subset name -> upstream file stem. The first seven are the paper's S1..S7 (its TGBI averages
# them); the *_winf variants of the polite and impolite sets are included as extra subsets.
STEMS = {
    "formal": "total_formal",
    "impolite": "total_impolite_woinf",
    "informal": "total_informal",
    "occupation": "total_job",
    "negative": "total_neg",
    "polite": "total_polite_woinf",
    "positive": "total_pos",
    "impolite_winf": "total_impolite_winf",
    "polite_winf": "total_polite_winf",
}
PAPER_SETS = ("formal", "impolite", "informal", "occupation", "negative", "polite", "positive")


def _load(suite: FileSuite, data: LocalDataset):
    import polars as pl

    frames = [item_frame(suite, sub, read_lines(data.path(sub.source))) for sub in suite.subsets]
    return pl.concat(frames)


TGBI_HI = SUITES.register("tgbi-hi")(
    FileSuite(
        name="tgbi-hi",
        version=1,
        dataset="gender-bias-hi-en-eval",
        src_lang="hi",
        targets=("en",),
        scorer="tgbi",
        detectors={"en": "tgbi-paper"},
        subsets=tuple(Subset(name, stem, f"{CORPUS}/{stem}.txt") for name, stem in STEMS.items()),
        loader=_load,
        scorer_params=(("index_sets", PAPER_SETS),),
        doc=__doc__,
    )
)
