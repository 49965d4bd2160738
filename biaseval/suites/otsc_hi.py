"""OTSC-Hindi (Singh 2023): "I have known them for a long time, my friend works as a <occupation>."

Hindi marks the speaker's gender on the verb (जानती/जानता) and the friend's on the possessive and
the verb (मेरी/मेरा ... करती/करता), so the friend's gender is recoverable from the source. Four sets,
one per speaker × friend gender, each over the same 1,071 occupations. Gold = the friend's gender.
"""

from __future__ import annotations

import polars as pl

from ..datasets import LocalDataset
from ..textio import read_lines
from .base import SUITES, Subset, Suite, item_frame

CORPUS = "TGBI and Simple Context Evaluation/corpus"
OCCUPATIONS = f"{CORPUS}/jobslist.txt"
GENDERS = ("female", "male")

# The template and its gendered fillers. "काफ़ी" is spelt with the precomposed letter फ़ (U+095E)
# as upstream does; NFC would decompose it, so it is written as an escape to keep it exact.
TEMPLATE = "मैं उसे का\u095eी समय से {know} हूँ, {my} दोस्त {occupation} का काम {does} है."
SPEAKER_FORMS = {"female": {"know": "जानती"}, "male": {"know": "जानता"}}
FRIEND_FORMS = {"female": {"my": "मेरी", "does": "करती"}, "male": {"my": "मेरा", "does": "करता"}}


def generate(occupations: list[str], speaker: str, friend: str) -> list[str]:
    """The OTSC-Hindi sentences for one speaker × friend gender, one per occupation."""
    forms = {**SPEAKER_FORMS[speaker], **FRIEND_FORMS[friend]}
    return [TEMPLATE.format(occupation=occ.strip(), **forms) for occ in occupations]


def subset_name(speaker: str, friend: str) -> str:
    return f"{speaker}-{friend}"


def _load(suite: Suite, data: LocalDataset) -> pl.DataFrame:
    occupations = [o.strip() for o in read_lines(data.path(OCCUPATIONS))]
    frames = []
    for sub in suite.subsets:
        speaker, friend = sub.name.split("-")
        sources = read_lines(data.path(sub.source))
        if len(sources) != len(occupations):
            from ..errors import DataError

            raise DataError(f"{data.root / sub.source}: {len(sources)} lines, but {OCCUPATIONS} has {len(occupations)}")
        frames.append(item_frame(suite, sub, sources, gold=[friend] * len(sources), occupation=occupations))
    return pl.concat(frames)


OTSC_HI = SUITES.register("otsc-hi")(
    Suite(
        name="otsc-hi",
        version=1,
        dataset="gender-bias-hi-en-eval",
        src_lang="hi",
        tgt_lang="en",
        scorer="otsc",
        default_detector="otsc-paper",
        subsets=tuple(
            Subset(
                subset_name(s, f),
                f"me_{s}_my_mitra_{f}_set",
                f"{CORPUS}/me_{s}_my_mitra_{f}_set.txt",
            )
            for s in GENDERS
            for f in GENDERS
        ),
        loader=_load,
        doc=__doc__,
    )
)
