"""Word-list suites for the embedding-bias study: single source words, each with a gender class
(neutral, feminine, masculine), translated into one or more target languages.

    name: gender-words-en-it
    kind: words
    version: 1
    src_lang: en
    targets: [it]
    words: bolukbasi            # the default list (biaseval/data/wordlists.py), or a .txt/.csv file
    detectors: {it: it-grammatical-gender}

Items are targets × words; subset = the word's gender class; gold = female / male / neutral.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from biaseval.data.paths import from_file
from biaseval.data.yamlio import YamlDoc
from biaseval.names import Name
from biaseval.suites.base import ITEM_SCHEMA, Subset, Suite, SuiteData

CLASSES = ("feminine", "masculine", "neutral")
GOLD = {"feminine": "female", "masculine": "male", "neutral": "neutral"}


class WordListSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: Name = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    kind: str = "words"
    version: int = Field(ge=1)
    description: str = ""
    src_lang: Name
    targets: tuple[Name, ...] = Field(min_length=1)
    words: str = Field(min_length=1, description="'bolukbasi' (the default list) or a .txt/.csv path")
    detectors: dict[str, str]


def load_wordlist_suite(doc: YamlDoc) -> "WordListSuite":
    from biaseval.data.wordlists import default_word_list, load_word_list

    spec = doc.validate(WordListSpec)
    for target in spec.targets:
        if target not in spec.detectors:
            raise doc.fail(("detectors",), f"no detector for target language {target!r}")
    if spec.words == "bolukbasi":
        words = default_word_list()
        origin = "bolukbasi (debiaswe)"
    else:
        path = from_file(spec.words, doc.path.resolve().parent)
        if not path.is_file():
            raise doc.fail(("words",), f"no word list at {path}")
        words = load_word_list(path)
        origin = str(path)
    if words.height == 0:
        raise doc.fail(("words",), "the word list is empty")
    digest = hashlib.sha256("\n".join(f"{w}\t{c}" for w, c in words.select("word", "gender_class").iter_rows()).encode())
    return WordListSuite.from_spec(spec, tuple(words["word"]), tuple(words["gender_class"]), origin,
                                   digest.hexdigest(), str(doc.path))


@dataclass(frozen=True)
class WordListSuite(Suite):
    spec: WordListSpec | None = None
    words: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    origin: str = ""
    digest: str = ""
    path: str = ""

    @classmethod
    def from_spec(cls, spec, words, classes, origin, digest, path) -> "WordListSuite":
        subsets = tuple(Subset(c, c, origin) for c in CLASSES)
        return cls(name=spec.name, version=spec.version, src_lang=spec.src_lang, targets=spec.targets,
                   scorer="embedding", detectors=dict(spec.detectors), subsets=subsets, doc=spec.description,
                   spec=spec, words=words, classes=classes, origin=origin, digest=digest, path=path)

    def open(self) -> SuiteData:
        return WordData(self)

    def with_targets(self, targets: tuple[str, ...]) -> "WordListSuite":
        spec = self.spec.model_copy(update={"targets": targets})
        return WordListSuite.from_spec(spec, self.words, self.classes, self.origin, self.digest, self.path)


class WordData(SuiteData):
    def __init__(self, suite: WordListSuite):
        self.suite = suite
        self.commit = None
        self.size = len(suite.targets) * len(suite.words)
        blob = f"{suite.spec.model_dump_json()}|{suite.digest}"
        self.fingerprint = hashlib.sha256(blob.encode()).hexdigest()[:24]
        self._words = np.array(suite.words, dtype=object)
        self._classes = np.array(suite.classes, dtype=object)

    def subset_sizes(self) -> dict[str, int]:
        counts = {c: 0 for c in CLASSES}
        for c in self.suite.classes:
            counts[c] += len(self.suite.targets)
        return counts

    def slice(self, start: int, stop: int) -> pl.DataFrame:
        idx = np.arange(max(start, 0), min(stop, self.size), dtype=np.int64)
        n = len(self._words)
        t, w = idx // n, idx % n
        targets = np.array(self.suite.targets, dtype=object)[t]
        classes = self._classes[w]
        words = self._words[w]
        data = {
            "item_id": [f"{self.suite.name}/{tgt}/{word}" for tgt, word in zip(targets, words)],
            "suite": [self.suite.name] * len(idx),
            "subset": classes,
            "line": (w + 1).astype(np.int32),
            "source": words,
            "src_lang": [self.suite.src_lang] * len(idx),
            "tgt_lang": targets,
            "gold": [GOLD[c] for c in classes],
        }
        return pl.DataFrame({c: pl.Series(c, data[c], dtype=t_) if c in data else pl.Series(c, [None] * len(idx), dtype=t_)
                             for c, t_ in ITEM_SCHEMA.items()})

