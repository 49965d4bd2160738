"""biaseval's gender analysers measured against MT-GenEval's human tags.

MT-GenEval's annotated references (``data/sentences/<split>/annotated/``) mark every word that carries
the gender of a person: ``<F>primera presidenta</F>``, ``<M>der</M>``. Each tagged stretch is a span
an analyser can be asked about, exactly as it is asked about an aligned WinoMT entity
(``GenderAnalyser.analyse``: the sentence's tokens, the span's token indices), with a gold gender;
every other word of the sentence is asked about alone. Per language:

- ``tagged``: tagged spans; ``right``: read with their gender; ``wrong``: read with the other gender;
  ``coverage`` = (right + wrong) / tagged; ``accuracy`` = right / (right + wrong), the share right of
  those it reads; ``recall`` = right / tagged;
- ``pronouns``: the tagged spans made only of third-person pronouns (the lists of
  ``data/entity_gender/pronouns.yaml``: er, sie, ihre, elle, его...), which the analysers do not read
  (they read the noun phrase of an entity; the pronoun-following detector reads pronouns);
  ``coverage_nouns``: the coverage of the other spans, what the analysers are built for;
- ``untagged``: words outside the tags (letters only); ``gendered``: those read as male or female.
  Most are not about a person (a feminine noun for a thing is read as feminine, rightly so for its
  grammar), so this is how often the analyser would give a gender to a word that is not the person's
  if an alignment handed it one, not an error rate.

Hindi has no analyser in biaseval (``biaseval/label/analysers``); its row says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from biaseval.data.datasets import LocalDataset
from biaseval.data.textio import read_lines
from biaseval.label.analysers import ANALYSERS, analyser_for
from biaseval.label.pronouns import pronoun_gender
from biaseval.label.tokens import token_spans
from biaseval.suites.mt_geneval import GENDERS, TARGETS, sentences_file

_TAG = re.compile(r"<([FM])>(.*?)</\1>", re.DOTALL)
_STRAY = re.compile(r"</?[FM]>")
_LETTERS = re.compile(r"^[^\W\d_]+$")
GOLD = {"F": "female", "M": "male"}


@dataclass(frozen=True)
class Tagged:
    """One annotated sentence: its tokens, each tagged span (token indices, gold), the untagged words."""

    tokens: list[str]
    spans: list[tuple[list[int], str]]
    untagged: list[int]


def parse(line: str, lang: str) -> Tagged:
    """The sentence without its tags, tokenized as the analysers expect (``biaseval.label.tokens``); a
    tag that does not close is dropped (its words count as untagged)."""
    text, marks, at = [], [], 0
    for found in _TAG.finditer(line):
        text.append(_STRAY.sub("", line[at:found.start()]))
        start = sum(len(t) for t in text)
        text.append(_STRAY.sub("", found.group(2)))
        marks.append((start, start + len(text[-1]), GOLD[found.group(1)]))
        at = found.end()
    text.append(_STRAY.sub("", line[at:]))
    plain = "".join(text)
    positions = token_spans(plain, lang)
    tokens = [plain[a:b] for a, b in positions]
    spans, inside = [], set()
    for start, end, gold in marks:
        span = [k for k, (a, b) in enumerate(positions) if a >= start and b <= end]
        if span:
            spans.append((span, gold))
            inside.update(span)
    untagged = [k for k, t in enumerate(tokens) if k not in inside and _LETTERS.match(t)]
    return Tagged(tokens, spans, untagged)


def sentences(data: LocalDataset, lang: str, split: str = "test") -> list[Tagged]:
    """Both genders' annotated references of a language."""
    return [parse(line, lang) for gender in GENDERS
            for line in read_lines(data.path(sentences_file(split, gender, lang, lang, annotated=True)))]


def measure(data: LocalDataset, lang: str, split: str = "test") -> dict:
    """One row of the table (module docstring) for ``lang``."""
    row = {"language": lang, "analyser": None, "tagged": 0, "right": 0, "wrong": 0, "pronouns": 0, "read_nouns": 0,
           "untagged": 0, "gendered": 0}
    tagged = sentences(data, lang, split)
    row["tagged"] = sum(len(t.spans) for t in tagged)
    pronoun = [all(pronoun_gender(t.tokens[k], lang) for k in span) for t in tagged for span, _ in t.spans]
    row["pronouns"] = sum(pronoun)
    row["untagged"] = sum(len(t.untagged) for t in tagged)
    if lang not in ANALYSERS:
        return row
    analyser = analyser_for(lang)
    row["analyser"] = analyser.signature
    asked = [(t.tokens, span, gold) for t in tagged for span, gold in t.spans]
    readings = analyser.analyse([a[0] for a in asked], [a[1] for a in asked])
    row["right"] = sum(r.label == gold for r, (_, _, gold) in zip(readings, asked))
    row["wrong"] = sum(r.label in ("male", "female") and r.label != gold for r, (_, _, gold) in zip(readings, asked))
    row["read_nouns"] = sum(r.label in ("male", "female") for r, p in zip(readings, pronoun) if not p)
    alone = [(t.tokens, [k]) for t in tagged for k in t.untagged]
    others = analyser.analyse([a[0] for a in alone], [a[1] for a in alone])
    row["gendered"] = sum(r.label in ("male", "female") for r in others)
    return row


def rates(row: dict) -> dict:
    """coverage, accuracy, recall and the untagged words' gendered share of a row (None where undefined)."""
    read = row["right"] + row["wrong"]
    has = row["analyser"] is not None
    return {
        "coverage": read / row["tagged"] if has and row["tagged"] else None,
        "accuracy": row["right"] / read if has and read else None,
        "recall": row["right"] / row["tagged"] if has and row["tagged"] else None,
        "coverage_nouns": (row["read_nouns"] / (row["tagged"] - row["pronouns"])
                           if has and row["tagged"] > row["pronouns"] else None),
        "gendered_share": row["gendered"] / row["untagged"] if has and row["untagged"] else None,
    }


def table(data: LocalDataset, split: str = "test", languages: tuple[str, ...] = TARGETS) -> list[dict]:
    """Every language's row, with its rates."""
    return [{**row, **rates(row)} for row in (measure(data, lang, split) for lang in languages)]
