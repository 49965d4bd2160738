"""German: the gender of an entity from its noun (german-nouns) and its determiner.

German marks gender on the noun ("die Ärztin" / "der Arzt", "die Entwicklerin") and on the
determiner (der/die/das, ein/eine, kein-, mein-/sein-/ihr-, dieser-, fused zum/zur/im/...). The
determiner alone is often ambiguous because it also marks case and number: "der" is masculine
nominative but also feminine dative and genitive and plural genitive; "die" is feminine or plural.
So the determiner and the noun are read together. Word data (determiner paradigms, prepositions,
lists) is in ``biaseval/data/entity_gender/de.yaml``.

The noun lexicon
----------------
german-nouns (a Wiktionary extract, read by ``german_words``) gives every inflected form of a
lemma with its gender(s), number and case, and the declension of nominalized adjectives.

The entity is a person, which settles homographs: when a form has a masculine reading whose lemma
has a feminine counterpart in -in (Koch/Köchin, Kunde/Kundin, Bauer/Bäuerin, Zeuge/Zeugin), its
readings of other genders belong to other words (das Koch, die Kunde, das Bauer, das Zeug for
"Zeugen") and are dropped; so are readings listed under ``not_persons`` (feminine "Leiter", a
ladder), when the form has others. A head noun missing from the lexicon is read through its final
compound part: the longest known ending of at least four letters, when the rest is a known word
(with or without a linking -s-, -es-, -n-, -en-, -e-, -er-) and the part names a person (a
masculine with an -in counterpart, a feminine in -in, a nominalized adjective, or a word listed
under ``person_nouns``/``generic``): "Umzugshelferin" -> Helferin, "Empfangsdame" -> Dame, but
not "Auditors" -> Audi + Tors. Failing that, a word (or a last compound part) that is -in or -innen
after a masculine noun the lexicon knows, its vowel umlauted or not, is that noun's feminine
("Admiralin", "Konteradmiralin", "Feldmarschällin": MT-GenEval's tagged references have such words
the lexicon lacks); then an ending listed under ``feminine_endings`` (-erin, -orin, -istin, ...)
makes it feminine ("Supervisorin").

Rules, in order
---------------
1. An empty span -> unknown ``no-alignment`` (spans are checked by ``base.GenderAnalyser.analyse``).
2. A span token listed under ``indefinite`` (jemand, jemanden, irgendwer, ...) -> ``neutral``
   (``indefinite``).
3. *Head*: the first span token that starts with a capital letter, is not a determiner or
   preposition, and has lexicon readings (directly, by compound part or by a feminine ending).
   Without one, the first capitalized span word that is not a determiner is an *unknown head*.
   Without any -> unknown ``not-in-lexicon``. Lower-case tokens are never the head (German nouns
   are capitalized; a lower-case word that is also a noun form, "essen", is usually not one).
4. *Generic nouns*: a head (or its lemma) ending in an entry of ``generic`` (Person, -kraft,
   -hilfe, Wache, Mitglied, Mensch) has a gender fixed by the word, not by whom it names ("die
   Reinigungskraft" may be a man) -> ``neutral`` (``noun``).
5. *Determiner*: the nearest determiner left of the head, directly or across up to three
   attributive adjectives (lower-case words ending in -e, -en, -er, -es, -em: "die neue
   Ärztin"), inside the span or just before it (aligners often drop the article). A preposition
   directly before it keeps only its readings in the cases the preposition governs
   (``prepositions``: "mit der" is dative, "für den" accusative). A determiner that opens the
   sentence is read as nominative *first* ("Der CEO sagte": WinoMT sentences open with their
   subject); when that leaves no match with the noun, all its readings are tried ("Der
   Putzfrau rief", a mistranslation, is still the feminine noun).
6. *Unification*: the determiner's readings (gender or plural, case) are matched with the noun's
   (gender, number, case, and for nominalized adjectives the declension the determiner calls
   for: weak after der/dieser, mixed after ein/kein/mein; german-nouns' mixed plural follows
   "ein", which has none, so the weak plural is used after kein/mein). "der Krankenschwester"
   matches as feminine dative; "der Angestellte" only as masculine nominative (the feminine
   dative would be "der Angestellten"); "die Angestellte" only as feminine. A nominalized
   adjective with the wrong ending ("Der Vorgesetzter") is matched ignoring the declension. The
   English entity is singular, so singular matches beat plural ones ("den Angestellten" is the
   masculine accusative, not the dative plural). No match ("den Ärztin") -> unknown ``conflict``.
7. *Decision*:

   - a noun whose readings all have one gender (Ärztin f, Arzt m, Entwickler m) is
     *gender-specific*: that gender decides (``noun``), whatever the case or number ("die
     Entwickler" is the masculine plural);
   - otherwise the noun is epicene: a nominalized adjective, or a lemma listed with several
     genders (CEO m/f, Azubi m/f). The genders left after unification decide if there is one
     (``article``: "die Angestellte", "mit der CEO", sentence-initial "Der CEO"; ``noun`` when
     there is no determiner and the form itself has one gender); with two or more -> unknown
     ``epicene-no-article`` ("bis der CEO kam": masculine nominative or feminine dative);
   - an unknown head takes the determiner's gender when its readings, singular ones preferred
     and neuter ones dropped (a person missing from the lexicon is not neuter), have one gender
     (``article``: "einen Mover", "dem Auditor", sentence-initial "Der Mover"), else unknown
     ``not-in-lexicon`` ("als der Mover kam": the feminine dative is possible);
   - neuter -> ``neutral`` (``noun``/``article``): a neuter noun for a person (das Kind) says
     nothing about sex.

Not handled: the case a noun phrase has from its place in the clause (beyond the opening one),
adjective endings without a determiner, pronouns referring back to the entity ("ihn", "sie"),
"euer", lower-case nouns, and whether the head names a person at all ("Die Umzugsfirma", a
moving company for "the mover", is read as feminine).
"""

from __future__ import annotations

from typing import ClassVar

from biaseval.label.analysers.base import GenderAnalyser, Reading
from biaseval.label.analysers.german_words import (
    Determiner,
    NounReading,
    noun_lexicon,
    word_data,
)

_LABEL = {"m": "male", "f": "female", "n": "neutral"}
_ADJECTIVE_ENDINGS = ("e", "en", "er", "es", "em")
_MAX_ADJECTIVES = 3
_MIN_COMPOUND_PART = 4
_MIN_COMPOUND_PREFIX = 3
_LINKS = ("", "s", "es", "n", "en", "e", "er", "ns")  # linking elements between compound parts


class German(GenderAnalyser):
    """German (german-nouns and the determiner paradigms of de.yaml)."""

    lang: ClassVar[str] = "de"
    version: ClassVar[int] = 2  # 2: unknown -in feminines of known masculine nouns (Admiralin)

    def __init__(self) -> None:
        self._lexicon = noun_lexicon()
        self._data = word_data()
        self._heads: dict[str, tuple[tuple[NounReading, ...], str]] = {}

    def read_aligned(self, sentences: list[list[str]], spans: list[list[int]]) -> list[Reading]:
        return [self._read(tokens, span) for tokens, span in zip(sentences, spans)]

    # -- the noun ---------------------------------------------------------------------------

    def _noun(self, word: str) -> tuple[tuple[NounReading, ...], str]:
        """The readings of a capitalized word and how they were found ("lexicon", "compound",
        "ending"); no readings: ((), "")."""
        found = self._heads.get(word)
        if found is None:
            found = self._heads[word] = self._find_noun(word)
        return found

    def _find_noun(self, word: str) -> tuple[tuple[NounReading, ...], str]:
        readings = self._persons(self._lexicon.readings(word))
        if readings:
            return readings, "lexicon"
        for k in range(_MIN_COMPOUND_PREFIX, len(word) - _MIN_COMPOUND_PART + 1):
            part = word[k:]
            if not self._is_compound_prefix(word[:k]):
                continue
            readings = self._persons(self._lexicon.readings(part[0].upper() + part[1:]))
            if readings and self._names_person(readings):
                return readings, "compound"
        for k in range(0, len(word) - _MIN_COMPOUND_PART + 1):
            if k and (k < _MIN_COMPOUND_PREFIX or not self._is_compound_prefix(word[:k])):
                continue
            number = self._feminine_of_masculine(word[k].upper() + word[k + 1:])
            if number:
                return tuple(NounReading(word, "f", number, case, None, False)
                             for case in ("nom", "acc", "dat", "gen")), "ending"
        lower = word.lower()
        if any(lower.endswith(e) and len(lower) > len(e) + 1 for e in self._data.feminine_endings):
            number = "pl" if lower.endswith("innen") else "sg"
            return tuple(NounReading(word, "f", number, case, None, False)
                         for case in ("nom", "acc", "dat", "gen")), "ending"
        return (), ""

    def _feminine_of_masculine(self, word: str) -> str | None:
        """``sg``/``pl`` where ``word`` is -in/-innen after a masculine noun the lexicon knows, its vowel
        umlauted or not (Admiral-in, Legat-in, Gräf-in from Graf); None otherwise."""
        for suffix, number in (("innen", "pl"), ("in", "sg")):
            stem = word[: -len(suffix)]
            if not word.endswith(suffix) or len(stem) < 3:
                continue
            for candidate in {stem, *_without_umlauts(stem)}:
                if any(r.gender == "m" and not r.adjectival for r in self._lexicon.readings(candidate)):
                    return number
        return None

    def _names_person(self, readings: tuple[NounReading, ...]) -> bool:
        """Whether the readings are of a person noun: a nominalized adjective, a masculine noun
        with a feminine in -in, a feminine in -in from a masculine, or a noun listed under
        ``person_nouns`` or ``generic`` (Frau, Mann, Dame, Kraft)."""
        for r in readings:
            lemma = r.lemma.lower()
            if r.adjectival or lemma in self._data.person_nouns or lemma.endswith(self._data.generic):
                return True
            if r.gender == "m" and self._has_feminine(r.lemma):
                return True
            if r.gender == "f" and r.lemma.endswith("in") and any(
                    q.gender == "m" for q in self._lexicon.readings(r.lemma[:-2])):
                return True
        return False

    def _is_compound_prefix(self, prefix: str) -> bool:
        """Whether ``prefix`` is a known word, possibly with a linking element (Empfang-s-dame,
        Kranken-schwester, Putz-frau)."""
        for link in _LINKS:
            if prefix.endswith(link) and len(prefix) - len(link) >= _MIN_COMPOUND_PREFIX:
                stem = prefix[: len(prefix) - len(link)]
                if self._lexicon.readings(stem[0].upper() + stem[1:]):
                    return True
        return False

    def _persons(self, readings: tuple[NounReading, ...]) -> tuple[NounReading, ...]:
        """Drop readings that belong to a homograph of a person noun: those listed under
        ``not_persons``, and, when a masculine reading's lemma has a feminine counterpart in -in
        (Koch/Köchin, Kunde/Kundin, Bauer/Bäuerin), the readings of the other genders (das Koch,
        die Kunde, das Bauer, das Zeug for "Zeugen")."""
        kept = tuple(r for r in readings if r.gender not in self._data.not_persons.get(r.lemma, ()))
        readings = kept or readings
        if len({r.gender for r in readings}) > 1:
            male = {r.lemma for r in readings if r.gender == "m" and self._has_feminine(r.lemma)}
            if male:
                readings = tuple(r for r in readings if r.gender == "m" and r.lemma in male)
        return readings

    def _has_feminine(self, lemma: str) -> bool:
        stems = {lemma, lemma[:-1] if lemma.endswith("e") else lemma}
        stems |= {variant for stem in stems for variant in _umlauts(stem)}
        return any(r.gender == "f" and r.lemma == stem + "in" and not r.adjectival
                   for stem in stems for r in self._lexicon.readings(stem + "in"))

    # -- the rules --------------------------------------------------------------------------

    def _read(self, tokens: list[str], span: list[int]) -> Reading:
        data = self._data
        for i in span:
            if tokens[i].lower() in data.indefinite:
                return Reading("neutral", "indefinite", tokens[i])
        head, readings = self._head(tokens, span)
        if head is None:
            return Reading("unknown", "not-in-lexicon", " ".join(tokens[i] for i in span))
        word = tokens[head]
        if word.lower().endswith(data.generic) or any(r.lemma.lower().endswith(data.generic) for r in readings):
            return Reading("neutral", "noun", word)
        det_index, det, opening = self._determiner(tokens, head)
        evidence = f"{tokens[det_index]} {word}" if det is not None else word
        if not readings:  # a head the lexicon does not know: the determiner alone
            options = _prefer((opening or det).readings if det is not None else frozenset())
            genders = {g for g, _ in options if g != "n"} or {g for g, _ in options}
            if len(genders) == 1 and "pl" not in genders:
                return Reading(_LABEL[genders.pop()], "article", evidence)
            return Reading("unknown", "not-in-lexicon", evidence)
        lexicon_genders = {r.gender for r in readings}
        if det is not None:
            matched = []
            # the subject reading first when the sentence opens here; a nominalized adjective with
            # the wrong ending for its determiner ("Der Vorgesetzter") is matched without it last
            for candidate, declension in ((opening, det.declension), (det, det.declension),
                                          (opening, None), (det, None)):
                if candidate is not None and not matched:
                    matched = [r for r in readings if any(_agrees(d, declension, r) for d in candidate.readings)]
            if not matched:
                return Reading("unknown", "conflict", evidence)
            # the English entity is singular: a singular reading beats a plural one ("den
            # Angestellten" is the masculine accusative, not the dative plural)
            matched = [r for r in matched if r.number == "sg"] or matched
        else:
            matched = list(readings)
        genders = {r.gender for r in matched}
        epicene = len(lexicon_genders) > 1 or any(r.adjectival for r in readings)
        if not epicene:
            return Reading(_LABEL[lexicon_genders.pop()], "noun", evidence)
        if len(genders) == 1:
            return Reading(_LABEL[genders.pop()], "article" if det is not None else "noun", evidence)
        return Reading("unknown", "epicene-no-article", evidence)

    def _head(self, tokens: list[str], span: list[int]) -> tuple[int | None, tuple[NounReading, ...]]:
        data = self._data
        unknown = None
        for i in span:
            word = tokens[i]
            lower = word.lower()
            if not word[:1].isupper() or lower in data.determiners or lower in data.prepositions:
                continue
            readings, _ = self._noun(word)
            if readings:
                return i, readings
            if unknown is None and word.isalpha():
                unknown = i
        return unknown, ()

    def _determiner(self, tokens: list[str], head: int) -> tuple[int, Determiner | None, Determiner | None]:
        """The determiner of the head's noun phrase: (index, its readings, its nominative readings
        when it opens the sentence), or (-1, None, None). A preposition directly before it keeps
        only the readings in the cases it governs."""
        data = self._data
        j = head - 1
        while j >= 0 and head - 1 - j < _MAX_ADJECTIVES and _is_adjective(tokens[j]) \
                and tokens[j].lower() not in data.determiners:
            j -= 1
        if j < 0 or tokens[j].lower() not in data.determiners:
            return -1, None, None
        det = data.determiners[tokens[j].lower()]
        if j > 0 and tokens[j - 1].lower() in data.prepositions:
            det = _restrict(det, data.prepositions[tokens[j - 1].lower()]) or det
        opening = None
        if not any(t[:1].isalnum() for t in tokens[:j]):
            opening = _restrict(det, frozenset({"nom"}))
        return j, det, opening


def _umlauts(stem: str) -> set[str]:
    """The stem with one of its a, o, u, au umlauted, each in turn: Arzt -> Ärzt, Bauer ->
    Bäuer, Koch -> Köch (which vowel takes it depends on the word; the lexicon says which exists)."""
    out = set()
    for i, ch in enumerate(stem):
        low = ch.lower()
        if low not in "aou" or (low == "u" and i > 0 and stem[i - 1].lower() == "a"):
            continue
        umlaut = "äöü"["aou".index(low)]
        out.add(stem[:i] + (umlaut.upper() if ch.isupper() else umlaut) + stem[i + 1:])
    return out


def _without_umlauts(stem: str) -> set[str]:
    """The stem with one of its ä, ö, ü made a, o, u, each in turn (Gräf -> Graf)."""
    return {stem[:i] + "aou"["äöü".index(ch)] + stem[i + 1:] for i, ch in enumerate(stem) if ch in "äöü"}


def _is_adjective(token: str) -> bool:
    return token.isalpha() and token.islower() and token.endswith(_ADJECTIVE_ENDINGS)


def _restrict(det: Determiner, cases: frozenset[str]) -> Determiner | None:
    kept = frozenset(r for r in det.readings if r[1] in cases)
    return Determiner(kept, det.declension) if kept else None


def _prefer(readings: frozenset[tuple[str, str]]) -> frozenset[tuple[str, str]]:
    """Singular determiner readings when there are any (the English entity is singular)."""
    return frozenset(r for r in readings if r[0] != "pl") or readings


def _agrees(det: tuple[str, str], declension: str | None, noun: NounReading) -> bool:
    """Whether a determiner reading fits a noun reading (``declension`` None: any declension)."""
    gender, case = det
    if case != noun.case:
        return False
    if gender == "pl":
        if noun.number != "pl":
            return False
        if declension == "gemischt":
            # german-nouns' mixed column follows "ein", which has no plural (so its plural is the
            # strong one); kein, mein, ... take weak endings in the plural: "keine Angestellten"
            declension = "schwach"
    elif noun.number != "sg" or noun.gender != gender:
        return False
    return declension is None or noun.declension is None or noun.declension == declension
