"""The gender a Spanish, French, Italian or Portuguese translation gives a WinoMT entity (``Spanish``,
``French``, ``Italian``, ``Portuguese``).

Nouns are analysed by Apertium's morphological analysers, run with ``lt-proc`` once per corpus (all
the distinct words near the aligned spans go through one process; ``lt_proc``):
``spa-eng.automorf.bin`` (Debian package apertium-eng-spa), ``fra-cat.automorf.bin``
(apertium-fra-cat), ``ita-spa.automorf.bin`` (apertium-spa-ita) and ``por-cat.automorf.bin``
(apertium-por-cat), found where ``lt_proc`` says. A
missing ``lt-proc`` or analyser raises ``MissingAnalyserPackages`` naming the package to install; there is
no fallback.

Closed-class words (articles, contracted and elided forms, demonstratives, possessives, quantifiers,
indefinite pronouns, gender-neutral nouns) come from ``biaseval/data/entity_gender/<lang>.yaml``
(read by ``romance_words``), where each choice is documented. Words are compared in lower case with
typographic apostrophes read as ``'``.

The rules, for one row (target tokens, indices of the tokens aligned to the entity)
------------------------------------------------------------------------------------

0. *No alignment.* An empty span -> unknown ``no-alignment`` (spans are checked by
   ``base.GenderAnalyser.analyse``, the same for every language).
1. *Indefinite.* If a span token belongs to an indefinite pronoun of the data file (alguien,
   quelqu'un -- two tokens, "quelqu'" + "un" --, qualcuno) -> neutral ``indefinite``.
2. *The head noun.* The window is the span; if the span has no noun and ends with a determiner or an
   adjective (the aligner often gets the article but misses the noun), it grows by up to two tokens
   to the right while they are determiners or adjectives, and takes the first token after them if it
   is a noun or a word the analyser does not know. Head candidates are the window's tokens after its
   first determiner (all of them when there is none), determiners excluded. The head is the *first*
   candidate with a noun analysis (``<n>``); failing that, the first adjective (a nominalised one:
   Apertium's Italian analyser knows "medico" only as an adjective) or unknown word ("il
   progettista": the article will decide). First, not last: a Romance head noun comes before its
   complements and postnominal modifiers ("ama de llaves", "rédacteur en chef", "medico legale",
   "enfermera jefa"), and the "after the first determiner" step drops a stray word aligned before the
   entity ("regalo al empleado"). A head that is a gender-neutral noun of the data file
   (persona, personne, individuo) -> neutral ``indefinite``.
3. *Determiners.* Walking left from the head over at most four tokens: determiners of the data file
   and adjectives (at most two; "la nueva desarrolladora") are passed, and a "/" between two
   determiners too ("el/la periodista"); anything else stops the walk. The walk may leave the span:
   an aligner that misses the article still gets the noun. Without a head, the determiners inside
   the span are used. A determiner gives its gender (m or f) unless it is unmarked (l', les, su,
   dell'), or it is a Spanish masculine-looking article before a feminine noun with stressed a-
   listed in the data (el ama de llaves, el agua), or French mon/ton/son before a vowel or h
   (son infirmière): then it gives none. Contracted forms (del, al, du, au, della, nello) and the
   Italian feminine "un'" are ordinary entries.
4. *The noun's gender*, from the analyser: the head's noun analyses (adjective analyses for a
   nominalised adjective), the singular ones if any (entities are singular; Italian "parrucchiere"
   is a masculine singular and a feminine plural); ``<m>`` or ``<f>`` alone gives that gender;
   ``<mf>``, or both ``<m>`` and ``<f>`` (giornalista, policía), is *epicene*; an unknown word or one
   without a gender tag gives none.
5. *Decision.*

   - Determiners that disagree with each other ("el/la") -> unknown ``conflict``.
   - A gendered determiner and an epicene or unknown noun, or a noun of the same gender -> the
     determiner's gender, ``article`` (la periodista, il progettista, la desarrolladora).
   - A feminine determiner before a masculine noun -> female, ``article``: this is how a woman is
     named by a masculine-form profession noun (la médico, la juez, la sindaco, la chef).
   - A masculine determiner before a feminine noun: male, ``article``, when the analyser's lemma is
     the word itself (a noun in its own right that Apertium lists as feminine but that names men
     with a masculine article: el guardia, el policía, el recluta); unknown ``conflict`` when the
     word is the feminine inflection of a masculine lemma (el enfermera, un infermiera, le
     développeuse): a masculine article cannot go with a form made to name a woman.
   - No gendered determiner, a masculine or feminine noun -> that gender, ``noun`` (l'infirmière,
     l'avvocato, enfermera).
   - No gendered determiner, an epicene or unknown noun: a word right before the head (passed by
     the walk) or right after it whose every analysis is an adjective or past participle of one
     gender decides, ``agreement`` ("periodista famosa"; words that may also be nouns are not
     used); two such words that disagree -> ``conflict``. Failing those, a predicate right after
     the head: HEAD [clitics] COPULA [adverbs] WORD, the clitics and copulas from the data file (only
     être/essere/ser/estar, whose adjective or participle agrees with the subject; never avoir/avere/
     haber, whose participle does not), WORD an adjective or participle of one gender (its other
     readings ignored) -> ``agreement`` ("l'analista era arrabbiata", "l'élève est parti").
   - Otherwise an epicene noun -> unknown ``epicene-no-article`` (l'insegnante, periodista), and no
     noun at all, or a noun the analyser does not know -> unknown ``not-in-lexicon``. No head but a
     gendered determiner in the span -> the determiner's gender, ``article``.

``evidence`` holds the tokens that decided (for an unknown, the head if there is one).

Not handled: personal pronouns aligned to the entity (él, elle, lei) are not read; gender marked
further away than the predicate right after the head (a later pronoun, "perché era stanca", or
coreference) is not used; a word the analyser does not know gets no gender from its ending
(French "l'évaluatrice" is unknown ``not-in-lexicon``, not a guess); compounds with a hyphen are
read by their last part.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import ClassVar, Mapping, Sequence

from biaseval.label.analysers.base import GenderAnalyser, MissingAnalyserPackages, Reading
from biaseval.label.analysers.lt_proc import (
    APERTIUM_DIR_ENV,
    Analysis,
    find_automorf,
    run_analyser,
)
from biaseval.label.analysers.romance_words import WordData, normalise, word_data

_VOWEL_OR_H = set("aeiouyhàâäáéèêëíìîïóòôöúùûüœæ")
_LABEL = {"m": "male", "f": "female"}
# Tokens analysed around a span: the walk left from the head (4) and, to the right, the lookahead
# (2), the word after the head, and a predicate (2 clitics, a 3-token copula, 2 adverbs, 1 word).
_LEFT, _RIGHT = 5, 13


class RomanceAnalyser(GenderAnalyser):
    """Reads the entity's gender from its determiners and the Apertium analysis of its head noun
    (the rules are in the module docstring)."""

    package: ClassVar[str]  # Debian package holding the analyser
    automorf_name: ClassVar[str]
    language: ClassVar[str]

    def __init__(self) -> None:
        self.lt_proc = shutil.which("lt-proc")
        automorf, places = find_automorf(self.package, self.automorf_name, self.lt_proc)
        problems = []
        if self.lt_proc is None:
            problems.append("lt-proc is not on PATH (Debian package lttoolbox)")
        if automorf is None:
            where = ", ".join(str(p) for p in places)
            problems.append(f"the {self.language} analyser {self.automorf_name} is in none of {where}")
        if problems:
            packages = (["lttoolbox"] if self.lt_proc is None else []) + [self.package]
            hint = "" if automorf else f"; or set {APERTIUM_DIR_ENV} to a directory holding {self.automorf_name}"
            raise MissingAnalyserPackages(packages, f"{self.lang} gender analyser ({'; '.join(problems)}{hint})")
        self.automorf = automorf
        self.data = word_data(self.lang)

    @property
    def signature(self) -> str:
        return f"entity-gender-{self.lang}@{self.version}.{self.data.version}"

    # -- corpus level ---------------------------------------------------------------------------

    def read_aligned(self, sentences: list[list[str]], spans: list[list[int]]) -> list[Reading]:
        rows = []
        normalised: dict[str, str] = {}  # each distinct token normalised once
        lettered: dict[str, bool] = {}
        needed: dict[str, None] = {}
        for tokens, span in zip(sentences, spans):
            words = [normalised[t] if t in normalised else normalised.setdefault(t, normalise(t)) for t in tokens]
            rows.append((tokens, words, span))
            for w in words[max(span[0] - _LEFT, 0): span[-1] + _RIGHT]:
                if w not in lettered:
                    lettered[w] = any(c.isalpha() for c in w)
                if lettered[w]:
                    needed[w] = None
        morph = self.morphology(list(needed))
        return [self.read(tokens, words, span, morph) for tokens, words, span in rows]

    def morphology(self, words: Sequence[str]) -> dict[str, tuple[Analysis, ...]]:
        """Apertium's analyses of (normalised) ``words``, one lt-proc process for all of them."""
        assert self.lt_proc is not None
        return run_analyser(self.lt_proc, self.automorf, words)

    # -- one row --------------------------------------------------------------------------------

    def read(self, tokens: Sequence[str], words: Sequence[str], span: Sequence[int],
             morph: Mapping[str, tuple[Analysis, ...]]) -> Reading:
        """One row's reading; ``span`` non-empty, sorted and inside ``tokens`` (rules 1-5)."""
        row = _Row(self.data, list(tokens), list(words), morph)
        members = set(span)

        for seq in self.data.indefinite:  # 1 (only a sequence that overlaps the span can count)
            for start in range(max(span[0] - len(seq) + 1, 0), min(span[-1], len(words) - len(seq)) + 1):
                if tuple(words[start:start + len(seq)]) == seq and members & set(range(start, start + len(seq))):
                    return Reading("neutral", "indefinite", row.text(range(start, start + len(seq))))

        head = row.head(span)  # 2
        if head is not None and words[head] in self.data.neutral_nouns:
            return Reading("neutral", "indefinite", row.text([head]))

        if head is not None:  # 3
            dets, adjectives = row.before(head)
        else:
            dets, adjectives = [i for i in span if row.is_det(i)], []
        marked = [(i, g) for i in dets if (g := row.det_gender(i))]
        genders = {g for _, g in marked}
        evidence_dets = [i for i, _ in marked]
        with_head = evidence_dets + ([head] if head is not None else [])
        if len(genders) > 1:
            return Reading("unknown", "conflict", row.text(with_head))
        det = genders.pop() if genders else None

        if head is None:
            if det:
                return Reading(_LABEL[det], "article", row.text(evidence_dets))
            return Reading("unknown", "not-in-lexicon")

        noun, derived = row.noun_gender(head)  # 4

        if det:  # 5
            if det == "m" and noun == "f" and derived:  # el enfermera, un infermiera
                return Reading("unknown", "conflict", row.text(with_head))
            return Reading(_LABEL[det], "article", row.text(with_head))
        if noun in ("m", "f"):
            return Reading(_LABEL[noun], "noun", row.text([head]))
        agreeing = [(i, g) for i in adjectives + [head + 1] if i < len(words) and (g := row.agreement(i))]
        if not agreeing and (found := row.predicate(head)):
            agreeing = [found]
        if agreeing:
            if len({g for _, g in agreeing}) > 1:
                return Reading("unknown", "conflict", row.text(sorted([head] + [i for i, _ in agreeing])))
            return Reading(_LABEL[agreeing[0][1]], "agreement", row.text(sorted([head] + [i for i, _ in agreeing])))
        if noun == "epicene":
            return Reading("unknown", "epicene-no-article", row.text([head]))
        return Reading("unknown", "not-in-lexicon", row.text([head]))


@dataclass
class _Row:
    data: WordData
    tokens: list[str]
    words: list[str]
    morph: Mapping[str, tuple[Analysis, ...]]

    def text(self, indices) -> str:
        return " ".join(self.tokens[i] for i in sorted(set(indices)))

    def analyses(self, i: int) -> tuple[Analysis, ...] | None:
        """None: not a word (punctuation, number); (): a word the analyser does not know."""
        return self.morph.get(self.words[i])

    def is_det(self, i: int) -> bool:
        return self.words[i] in self.data.determiners

    def is_noun(self, i: int) -> bool:
        return not self.is_det(i) and any(a.pos == "n" for a in self.analyses(i) or ())

    def is_adj(self, i: int) -> bool:
        return not self.is_det(i) and any(a.pos == "adj" for a in self.analyses(i) or ())

    def is_unknown(self, i: int) -> bool:
        return not self.is_det(i) and self.analyses(i) == ()

    def head(self, span: Sequence[int]) -> int | None:
        window = list(span)
        if not any(self.is_noun(i) for i in span) and (self.is_det(span[-1]) or self.is_adj(span[-1])):
            for j in range(span[-1] + 1, min(span[-1] + 3, len(self.words))):
                if self.is_det(j) or (self.is_adj(j) and not self.is_noun(j)):
                    window.append(j)
                    continue
                if self.is_noun(j) or self.is_unknown(j):
                    window.append(j)
                break
        first_det = next((k for k, i in enumerate(window) if self.is_det(i)), None)
        candidates = window[first_det + 1:] if first_det is not None else window
        candidates = [i for i in candidates or window if not self.is_det(i) and self.analyses(i) is not None]
        for i in candidates:
            if self.is_noun(i):
                return i
        for i in candidates:
            if self.is_adj(i) or self.is_unknown(i):
                return i
        return None

    def before(self, head: int) -> tuple[list[int], list[int]]:
        """The determiners and adjectives right before the head (walking left, see rule 3)."""
        dets: list[int] = []
        adjectives: list[int] = []
        j = head - 1
        while j >= 0 and head - j <= 4:
            if self.is_det(j):
                dets.append(j)
            elif self.words[j] == "/" and dets and j > 0 and self.is_det(j - 1):
                pass
            elif self.is_adj(j) and len(adjectives) < 2:
                adjectives.append(j)
            else:
                break
            j -= 1
        return dets, adjectives

    def det_gender(self, i: int) -> str | None:
        word = self.words[i]
        gender = self.data.determiners.get(word)
        following = self.words[i + 1] if i + 1 < len(self.words) else ""
        if gender == "m" and word in self.data.stressed_a_articles and following in self.data.stressed_a_nouns:
            return None
        if gender == "m" and word in self.data.before_vowel_unmarked and following[:1] in _VOWEL_OR_H:
            return None
        return gender

    def noun_gender(self, i: int) -> tuple[str | None, bool]:
        """("m" | "f" | "epicene" | None, whether a feminine reading is inflected from another lemma)."""
        analyses = self.analyses(i) or ()
        chosen = [a for a in analyses if a.pos == "n"] or [a for a in analyses if a.pos == "adj"]
        chosen = [a for a in chosen if a.singular] or chosen
        genders = set().union(*(a.genders for a in chosen)) if chosen else set()
        if "mf" in genders or {"m", "f"} <= genders:
            return "epicene", False
        if genders == {"m"}:
            return "m", False
        if genders == {"f"}:
            return "f", all(normalise(a.lemma) != self.words[i] for a in chosen if "f" in a.genders)
        return None, False

    def agreement(self, i: int, strict: bool = True) -> str | None:
        """The gender of an adjective or past participle, if it has one. ``strict``: the word can be
        nothing else (right after a noun, a word that may be a noun could start a compound); else
        its other readings (a finite verb, a noun) are ignored, as in predicate position."""
        analyses = self.analyses(i)
        if not analyses or self.is_det(i):
            return None
        agreeing = [a for a in analyses if a.pos == "adj" or (a.pos.startswith("vb") and "pp" in a.tags)]
        if not agreeing or (strict and len(agreeing) < len(analyses)):
            return None
        genders = set().union(*(a.genders for a in agreeing))
        return genders.pop() if len(genders) == 1 and genders <= {"m", "f"} else None

    def predicate(self, head: int) -> tuple[int, str] | None:
        """(index, gender) of an agreeing predicate: HEAD [clitics] COPULA [adverbs] WORD."""
        j = head + 1
        for _ in range(2):
            if j < len(self.words) and self.words[j] in self.data.predicate_before:
                j += 1
        copula = next((c for c in self.data.copulas if tuple(self.words[j:j + len(c)]) == c), None)
        if copula is None:
            return None
        j += len(copula)
        for _ in range(2):
            if j < len(self.words) and self.agreement(j) is None and any(
                    a.pos in ("adv", "preadv") for a in self.analyses(j) or ()):
                j += 1
        if j < len(self.words) and (gender := self.agreement(j, strict=False)):
            return j, gender
        return None


class Spanish(RomanceAnalyser):
    lang = "es"
    language = "Spanish"
    package = "apertium-eng-spa"
    automorf_name = "spa-eng.automorf.bin"


class French(RomanceAnalyser):
    lang = "fr"
    language = "French"
    package = "apertium-fra-cat"
    automorf_name = "fra-cat.automorf.bin"


class Italian(RomanceAnalyser):
    lang = "it"
    language = "Italian"
    package = "apertium-spa-ita"
    automorf_name = "ita-spa.automorf.bin"


class Portuguese(RomanceAnalyser):
    lang = "pt"
    language = "Portuguese"
    package = "apertium-por-cat"
    automorf_name = "por-cat.automorf.bin"


__all__ = ["Spanish", "French", "Italian", "Portuguese", "RomanceAnalyser"]
