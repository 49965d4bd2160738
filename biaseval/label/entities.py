"""WinoMT labelling: find the translated entity by word alignment, then read its grammatical gender.

For one target language at a time:
1. every distinct (source, translation) pair of the run in that language — all systems together,
   so the aligner sees more data — is tokenized (``biaseval.tokenize``) and aligned
   (``biaseval.align``, fast_align-style models trained on exactly these pairs);
2. the source entity is its words at the item's ``entity_index`` plus a directly preceding article
   ("the", "a", "an"), so that the target article is aligned too (an article before an adjective of
   the adjective experiment, "the pretty developer", is taken, the adjective is not);
3. the target tokens linked to those words go to the language's gender analyser
   (``biaseval.label.analysers``), which returns male / female / neutral / unknown with a reason.

This is the detector ``entity-alignment`` (``entity-alignment-eflomal`` uses eflomal;
``entity-alignment-pronoun`` lets a gendered pronoun after the entity decide:
``biaseval.label.pronouns``). Unlike the rule-set detectors it needs the whole corpus of a language,
so scoring hands it all rows of the suite at once (a WinoMT run is thousands of rows per system and
language, not millions).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import polars as pl

from biaseval.label.tokens import token_spans, tokenize

ARTICLES = {"the", "a", "an"}
# WinoMT's adjective experiment (suite winomt-en-adj) puts one of these between the article and the
# entity ("the pretty developer"): the article is still taken, the adjective is not read. WinoMT's own
# sentences never contain them.
INSERTED_ADJECTIVES = {"pretty", "handsome"}
OUTPUT = {"label": pl.String, "reason": pl.String, "evidence": pl.String}
NEEDS = ("tgt_lang", "source", "translation", "entity_index", "occupation")


@lru_cache(maxsize=65536)
def entity_tokens(source: str, entity_index: int, entity: str) -> tuple[int, ...]:
    """Indices of ``tokenize(source, "en")`` tokens covering the entity (its ``len(entity.split())``
    whitespace words from word ``entity_index``) and an article right before it (or right before an
    inserted adjective, which is left out). Cached: a run asks for each source's entity once per
    system and target language."""
    words = _word_spans(source)

    def word(k: int) -> str:
        return source[words[k][0]:words[k][1]].lower()

    last = min(entity_index + max(len(entity.split()), 1), len(words)) - 1
    ranges = [(words[entity_index][0], words[last][1])]
    before = entity_index - 1
    if before > 0 and word(before) in INSERTED_ADJECTIVES:
        before -= 1
    if before >= 0 and word(before) in ARTICLES:
        ranges.append(words[before])
    return tuple(k for k, (a, b) in enumerate(token_spans(source, "en")) if any(a >= s and b <= e for s, e in ranges))


def _word_spans(text: str) -> list[tuple[int, int]]:
    spans, pos = [], 0
    for word in text.split():
        start = text.index(word, pos)
        spans.append((start, start + len(word)))
        pos = start + len(word)
    return spans


@dataclass(frozen=True)
class EntityAlignment:
    """Detector: align, project the entity, read its gender (see the module docstring)."""

    name: str
    version: int
    method: str  # the aligner: fast_align or eflomal
    language: str = "*"
    doc: str = ""
    labels: tuple[str, ...] = ("male", "female", "neutral", "unknown")
    follow_pronoun: bool = False  # a gendered pronoun after the entity decides (biaseval.label.pronouns)

    @property
    def signature(self) -> str:
        return f"{self.name}@{self.version}"

    def signature_for(self, lang: str) -> str:
        from biaseval.label.analysers import analyser_for

        return f"{self.signature}+{analyser_for(lang).signature}"

    def expr(self, column: str = "translation"):
        raise TypeError(f"detector {self.name!r} labels a whole corpus (label_frame), not one text at a time")

    def check(self, lang: str) -> None:
        """Raise MissingAnalyser (naming what to install) if ``lang`` cannot be analysed here."""
        from biaseval.label.analysers import analyser_for

        analyser_for(lang)

    def label_frame(self, frame: pl.DataFrame) -> pl.DataFrame:
        """``frame`` (one target language; columns NEEDS) with ``label``, ``reason`` and ``evidence``
        added; null for rows without a translation."""
        from biaseval.label.align import align_links
        from biaseval.label.analysers import SpanError, analyser_for

        missing = [c for c in NEEDS if c not in frame.columns]
        if missing:
            raise ValueError(f"{self.name}: rows lack {', '.join(missing)}")
        langs = frame["tgt_lang"].unique().to_list()
        if len(langs) > 1:
            raise ValueError(f"{self.name}: label one target language at a time, not {langs}")
        if frame.height == 0:
            return frame.with_columns([pl.lit(None, dtype=t).alias(c) for c, t in OUTPUT.items()])
        lang = langs[0]
        analyser = analyser_for(lang)
        keys = ["source", "translation", "entity_index", "occupation"]
        rows = frame.filter(pl.col("translation").is_not_null()).select(keys).unique(maintain_order=True)
        pairs = rows.select("source", "translation").unique(maintain_order=True).with_row_index("pair")
        english = {s: tokenize(s, "en") for s in pairs["source"].unique().to_list()}  # a source per system
        src_tokens = [english[s] for s in pairs["source"].to_list()]
        tgt_tokens = [tokenize(t, lang) for t in pairs["translation"].to_list()]
        links = align_links(src_tokens, tgt_tokens, method=self.method)
        pair_of_row = (rows.join(pairs, on=["source", "translation"], how="left", nulls_equal=True,
                                 maintain_order="left")["pair"].to_list())
        sentences = [tgt_tokens[k] for k in pair_of_row]
        entity_spans = [entity_tokens(source, index, entity or "") for source, index, entity
                        in rows.select("source", "entity_index", "occupation").iter_rows()]
        spans = links.project(pair_of_row, entity_spans)
        try:
            readings = analyser.analyse(sentences, spans)
        except SpanError as exc:  # the same error, saying which item the first bad row is
            source, translation, index, _ = rows.row(exc.rows[0])
            raise SpanError(f"{self.name} ({lang}): {exc}. Row {exc.rows[0]}: source {source!r}, entity_index "
                            f"{index}, translation {translation!r}", exc.rows) from None
        if self.follow_pronoun:
            from biaseval.label.pronouns import follow_pronoun

            readings = [follow_pronoun(r, t, s, lang) for r, t, s in zip(readings, sentences, spans)]
        labelled = rows.with_columns(
            pl.Series("label", [r.label for r in readings], dtype=pl.String),
            pl.Series("reason", [r.reason for r in readings], dtype=pl.String),
            pl.Series("evidence", [r.evidence or None for r in readings], dtype=pl.String),
        )
        return frame.join(labelled, on=keys, how="left", nulls_equal=True, maintain_order="left")


# A corpus of at least this many rows is labelled in worker processes (biaseval.label.workers): the
# analysers' rules are Python, so threads would read one language at a time whatever the cores. A
# smaller corpus stays in threads (a worker takes about a second to start and import).
PROCESS_ROWS = 20_000


def label_languages(jobs: Sequence[tuple[EntityAlignment, pl.DataFrame]],
                    processes: bool | None = None) -> list[pl.DataFrame]:
    """``detector.label_frame(frame)`` of every (detector, frame of one language) job, in the jobs'
    order, as many at once as there are cores, biggest first (the aligner's training is most of a
    cold run: the last to start should be short), size being the characters of the translations.
    ``processes``: in worker processes (None: when the jobs hold at least PROCESS_ROWS rows)."""
    from biaseval.label.workers import label_in_workers

    workers = max(1, min(len(jobs), os.cpu_count() or 1))
    if processes is None:
        processes = workers > 1 and sum(frame.height for _, frame in jobs) >= PROCESS_ROWS
    # A language's work grows with its translations' length (the aligner's cells, the words read),
    # not only with its rows: French takes about twice Russian's time for as many rows.
    sizes = [int(frame["translation"].str.len_chars().sum() or 0) if "translation" in frame.columns else frame.height
             for _, frame in jobs]
    if processes:  # a worker gets only the distinct rows of what labelling reads, and they are joined back here
        read = [[c for c in NEEDS if c in frame.columns] for _, frame in jobs]  # a lack is label_frame's to name
        slim = [frame.select(columns).unique(maintain_order=True) for (_, frame), columns in zip(jobs, read)]
        labelled = label_in_workers([(detector.label_frame, part) for (detector, _), part in zip(jobs, slim)],
                                    workers, sizes)
        return [frame.join(part, on=columns, how="left", nulls_equal=True, maintain_order="left")
                for (_, frame), part, columns in zip(jobs, labelled, read)]
    order = sorted(range(len(jobs)), key=lambda k: -sizes[k])
    with ThreadPoolExecutor(workers) as pool:
        done = dict(zip(order, pool.map(lambda k: jobs[k][0].label_frame(jobs[k][1]), order)))
    return [done[k] for k in range(len(jobs))]


DETECTORS = (
    EntityAlignment("entity-alignment", 1, "fast_align",
                    doc="WinoMT: the entity aligned to the translation (fast_align-style models from "
                        "systran-align, trained on the run's sentence pairs), its gender read by the target "
                        "language's analyser (biaseval/label/analysers)."),
    EntityAlignment("entity-alignment-eflomal", 1, "eflomal",
                    doc="As entity-alignment, with the eflomal aligner."),
    EntityAlignment("entity-alignment-pronoun", 1, "fast_align", follow_pronoun=True,
                    doc="As entity-alignment, except that a gendered pronoun after the entity, where there is "
                        "one, decides (how mt_gender's annotators read self-contradictory translations)."),
)
