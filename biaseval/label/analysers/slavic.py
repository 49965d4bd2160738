"""Russian and Ukrainian: the gender of an entity from pymorphy3's morphological analysis.

Stanovsky et al. (2019) read the grammatical gender of the aligned noun with a morphological
analyser (pymorphy2 for Russian and Ukrainian). This module does the same with pymorphy3, and adds
one conservative improvement: agreement, which matters because many occupation nouns are
masculine in form but used for women ("врач пришла", "лікар сказала"). Word lists are in
``biaseval/data/entity_gender/{ru,uk}.yaml``.

Parses
------
Each token is parsed by ``MorphAnalyzer(lang="ru"|"uk")`` (lower-cased; in Ukrainian the
typographic apostrophes ’ and ʼ read as '). Words pymorphy3 does not know get its suffix-based
guesses, which are used like dictionary parses (a transliterated loan such as "мувер" is guessed
to be a masculine noun, as it is); guesses whose lemma the dictionary knows are preferred
(Ukrainian "пекару" is the dative of пекар, not the accusative of an unknown "пекара"). Parses
scoring under 5% of the word's best parse are dropped (Russian scores come from a corpus: this
removes readings such as "с" as an abbreviation noun; pymorphy3's Ukrainian dictionary scores
every parse 1.0, so there nothing is dropped and the "share" of a reading below is a share of the
parses).

Rules, in order
---------------
1. *No alignment*: an empty span -> unknown ``no-alignment`` (spans are checked by
   ``base.GenderAnalyser.analyse``).
2. *Indefinite pronoun*: a span token with a parse whose lemma is listed under ``indefinite``
   (кто-то, кто-нибудь, некто; хтось, хто-небудь, ...; so also кого-то, когось) ->
   ``neutral`` (``indefinite``).
3. *Head*: the span token that is the entity's noun. Tokens with a preposition, conjunction,
   particle or pronoun parse (до, его, эта, який) are never the head. A token is a noun candidate
   when its common-noun parses hold at least 20% of its parse score, or its best parse is a noun
   (adjective parses of the noun's own lemma do not count against it: "рабочего" is mostly the
   adjective, but it is the same word used as a noun). Candidates whose parses are all nouns come
   first ("головний лікар": лікар, not головний, which Ukrainian's dictionary also lists as a
   noun), then the other
   noun candidates, then adjectives and participles used as nouns ("заведующая", "дежурный";
   the last of them, with a masculine or feminine reading); within a group an animate noun wins,
   then the leftmost (noun phrases put genitive complements after the head: "помощник юриста").
   Of a noun candidate only its animate noun parses are used when it has any (the entity is a
   person: "техник", not the genitive plural of "техника"). Proper-name parses (Name, Surn, ...)
   are used only when a word has nothing else: Ukrainian's dictionary knows some occupation
   nouns only as surnames (кухар, пекар, двірник, and "Карпентер"), and then the declinable
   masculine surname is the noun's paradigm (the indeclinable feminine surname reading exists
   only because women's surnames do not decline). No head -> unknown ``not-in-lexicon``.
4. *Generic nouns*: a head whose lemma is listed under ``generic`` (человек, личность; людина,
   особа) names a person without saying anything about sex -> ``neutral`` (``noun``).
5. *The head's gender*: the gender of its parses (a plural parse without a gender takes the
   gender of its lemma; a plural-only noun without any -> unknown ``epicene-no-article``). If the
   parses disagree: the same lemma read both masculine and feminine (Ukrainian "колега",
   "суддя") is common gender, like Russian's Ms-f ("коллега", "судья", "сирота"); otherwise the
   gender whose parses hold at least ``clear_share`` of the parse score wins (Russian "ставку":
   ставка f 0.93, ставок m 0.07), and without one the reading is unknown (``conflict`` for a word
   in the dictionary, ``not-in-lexicon`` for one pymorphy3 only guesses). Equal scores (always so
   in Ukrainian) decide nothing: "коробку" (коробка f 0.75, коробок m 0.25) and Ukrainian "зону"
   (зона f, зон m) are ``conflict``. An adjective used as a noun takes the gender of its adjective parses
   (a neuter reading beside a masculine one, as in "управляющего", is ignored: a person is not
   neuter). A neuter noun -> ``neutral`` (``noun``).
6. *Agreement* (only the clear cases, collected as evidence), when the head can be a nominative
   singular (or its case is not given, as for some Ukrainian nominatives):

   - *attribute*: adjectives, participles and determiners directly before the head (up to three,
     in the span or just before it: "новая врач", "эта врач", "ця лікар") whose nominative
     singular readings all have one gender (masculine or feminine). Personal pronouns do not
     count ("она врач" is a sentence, not a noun phrase). Oblique cases are not read: feminine
     adjective endings are shared by four cases, so "предложенной дизайнером" (proposed by the
     designer) would look like agreement.
   - *predicate*: the first word after the head that is not one of the entity's own span tokens
     (a genitive complement: "офицер полиции пришла") or a particle or adverb listed under
     ``skip`` ("не", "уже"); no punctuation may stand between. It counts when it has a past-tense
     verb or short adjective/participle reading with a gender (пришла, сказав, довольна, занята)
     and every gendered reading of the word, of any part of speech, has that same gender
     (Ukrainian "була" is also an adjective form, feminine too; Russian "рада" is also a noun,
     feminine too). A span token after the head that is such a word counts too (aligners
     sometimes link the verb to the entity). Words before the head are not read as predicates:
     the noun before a verb can be its object when nominative and accusative coincide
     ("Повар сообщила портье": портье is indeclinable, "Медсестра починила двигатель").
     Full adjectives after the noun are not read (they may be attributes of something else, or
     predicates: "лікар задоволена" stays with the noun).

7. *Decision*:

   ===============  =========================  ==========================================
   head gender      agreement evidence         reading
   ===============  =========================  ==========================================
   masculine        none, or masculine         male (``noun``)
   masculine        feminine only              female (``agreement``): "врач пришла"
   feminine         none, or feminine          female (``noun``)
   feminine         any masculine              unknown (``conflict``)
   common gender    one gender                 that gender (``agreement``)
   common gender    none                       unknown (``epicene-no-article``)
   any              both genders               unknown (``conflict``)
   ===============  =========================  ==========================================

A masculine noun without agreeing words is read as male: the masculine is also used generically
for women, but the grammar of the translation says masculine, which is what WinoMT scores (and
what Stanovsky et al.'s pymorphy-based reading of the noun alone reported in every case).

Not handled: agreement across a comma or clause boundary, a verb in another tense ("врач будет"),
full predicate adjectives, pronouns elsewhere in the sentence ("..., потому что она"), feminine
nouns used for men, hyphenated apposition ("женщина-врач" is one token that pymorphy3 may not
know), and whether the head names a person at all ("Двигатель", an engine, for "the mover" is
read as masculine).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from typing import ClassVar

from biaseval.data.yamlio import package_yaml
from biaseval.errors import ConfigError
from biaseval.label.analysers.base import (
    GenderAnalyser,
    MissingAnalyser,
    Reading,
)

_LABEL = {"masc": "male", "femn": "female", "neut": "neutral"}
_PROPER = frozenset({"Name", "Surn", "Patr", "Geox", "Orgn", "Trad", "Abbr", "Init"})
_ADJECTIVAL = frozenset({"ADJF", "PRTF"})
_FUNCTION = frozenset({"PREP", "CONJ", "PRCL", "NPRO", "INTJ"})
_PREDICATIVE = frozenset({"ADJS", "PRTS"})
_MIN_RELATIVE_SCORE = 0.05
_MAX_ATTRIBUTES = 3
_MIN_NOUN_SHARE = 0.2  # of a token's parse score (Ukrainian: of its parses) for it to be a noun
# Personal pronouns are not attributes ("она врач" is a clause); Ukrainian tags its demonstratives
# and possessives (ця, наша) as pronouns, so pronouns other than these may be attributes.
_PERSONAL = frozenset("я ты он она оно мы вы они ти він вона воно ви вони".split())
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'"})


@dataclass(frozen=True, slots=True)
class _Parse:
    pos: str | None
    gender: str | None  # masc, femn, neut, ms-f; None when the form has no gender (plural)
    case: str | None  # None: the dictionary gives no case (some Ukrainian nominatives)
    plural: bool
    past: bool
    anim: bool
    proper: bool
    fixed: bool  # Fixd: indeclinable
    pronominal: bool  # Apro: determiners and possessives inflected like adjectives (эта, его)
    lemma: str
    score: float


@dataclass(frozen=True)
class _Data:
    indefinite: frozenset[str]
    generic: frozenset[str]
    skip: frozenset[str]
    clear_share: float


@cache
def _data(lang: str) -> _Data:
    name = f"data/entity_gender/{lang}.yaml"
    raw = package_yaml(name)

    def words(key: str) -> frozenset[str]:
        value = raw.get(key) if isinstance(raw, dict) else None
        if not isinstance(value, list) or not all(isinstance(w, str) and w == w.lower() for w in value):
            raise ConfigError(f"biaseval/{name}: {key}: expected a list of lower-case words")
        return frozenset(value)

    share = raw.get("clear_share")
    if not isinstance(share, (int, float)) or not 0.5 < share <= 1:
        raise ConfigError(f"biaseval/{name}: clear_share: expected a number in (0.5, 1]")
    return _Data(words("indefinite"), words("generic"), words("skip"), float(share))


def _morph_analyser(lang: str):
    """pymorphy3's analyser for ``lang``, or MissingAnalyser naming what to install."""
    hint = f"pip install pymorphy3 pymorphy3-dicts-{lang}"
    try:
        import pymorphy3
    except ImportError:
        raise MissingAnalyser(f"the {lang} gender analyser needs pymorphy3: {hint}") from None
    try:
        return pymorphy3.MorphAnalyzer(lang=lang)
    except (ValueError, OSError, ImportError):  # no dictionary package for the language
        raise MissingAnalyser(
            f"the {lang} gender analyser needs pymorphy3's {lang} dictionary: {hint}") from None


class _Slavic(GenderAnalyser):
    lang: ClassVar[str]
    version: ClassVar[int] = 1

    def __init__(self) -> None:
        self._morph = _morph_analyser(self.lang)
        self._data = _data(self.lang)
        self._cache: dict[str, tuple[_Parse, ...]] = {}
        self._lemma_gender: dict[str, str | None] = {}

    # -- parsing ----------------------------------------------------------------------------

    def _parses(self, token: str) -> tuple[_Parse, ...]:
        word = token.lower().translate(_APOSTROPHES)
        found = self._cache.get(word)
        if found is None:
            raw = self._morph.parse(word)
            if not self._morph.word_is_known(word):
                # guesses for an unknown form: those whose lemma the dictionary knows come first
                # (Ukrainian "пекару": the dative of пекар, not the accusative of a "пекара")
                raw = [p for p in raw if self._morph.word_is_known(p.normal_form)] or raw
            top = max((p.score for p in raw), default=0.0)
            found = tuple(_convert(p) for p in raw if p.score >= _MIN_RELATIVE_SCORE * top)
            self._cache[word] = found
        return found

    def _gender_of_lemma(self, lemma: str) -> str | None:
        if lemma not in self._lemma_gender:
            genders = {p.gender for p in self._parses(lemma)
                       if p.pos == "NOUN" and p.lemma == lemma and p.gender and not p.plural}
            self._lemma_gender[lemma] = genders.pop() if len(genders) == 1 else None
        return self._lemma_gender[lemma]

    # -- the rules --------------------------------------------------------------------------

    def read_aligned(self, sentences: list[list[str]], spans: list[list[int]]) -> list[Reading]:
        return [self._read(tokens, span) for tokens, span in zip(sentences, spans)]

    def _read(self, tokens: list[str], span: list[int]) -> Reading:
        for i in span:
            if any(p.lemma in self._data.indefinite for p in self._parses(tokens[i])):
                return Reading("neutral", "indefinite", tokens[i])
        head = self._head(tokens, span)
        if head is None:
            return Reading("unknown", "not-in-lexicon", " ".join(tokens[i] for i in span))
        index, parses = head
        word = tokens[index]
        if any(p.lemma in self._data.generic for p in parses):
            return Reading("neutral", "noun", word)
        gender = self._head_gender(parses)
        if gender == "":  # no gender at all: a plural-only noun (двері, кукарі)
            return Reading("unknown", "epicene-no-article", word)
        if gender is None:  # guesses for an unknown word that disagree say only that it is unknown
            known = self._morph.word_is_known(word.lower().translate(_APOSTROPHES))
            return Reading("unknown", "conflict" if known else "not-in-lexicon", word)
        if gender == "neut":
            return Reading("neutral", "noun", word)
        # agreement needs a singular head (a plural verb or adjective shows no gender)
        cases = {p.case for p in parses if not p.plural and (p.gender == gender or gender == "ms-f")}
        agreement = self._agreement(tokens, span, index, cases)
        agreeing = {g for g, _, _ in agreement}
        evidence = " ".join(tokens[i] for i in sorted({index} | {i for _, i, _ in agreement}))
        if len(agreeing) > 1 or (gender == "femn" and "masc" in agreeing):
            return Reading("unknown", "conflict", evidence)
        if gender == "ms-f":
            if agreeing:
                return Reading(_LABEL[agreeing.pop()], "agreement", evidence)
            return Reading("unknown", "epicene-no-article", word)
        if gender == "masc" and agreeing == {"femn"}:
            return Reading("female", "agreement", evidence)
        return Reading(_LABEL[gender], "noun", evidence)

    def _head(self, tokens: list[str], span: list[int]) -> tuple[int, list[_Parse]] | None:
        """The entity's noun: (token index, its noun parses), or None."""
        candidates: list[tuple[int, bool, int, list[_Parse]]] = []  # (tier, not animate, index, parses)
        for i in span:
            parses = self._parses(tokens[i])
            if any(p.pos in _FUNCTION or p.pronominal for p in parses):
                continue  # prepositions, conjunctions, pronouns, determiners (до, его, эта, який)
            nouns = [p for p in parses if p.pos == "NOUN" and not p.proper]
            rivals = [p for p in parses if not p.proper]  # names do not compete with common words
            if not nouns and parses and all(p.proper for p in parses):
                # Ukrainian's dictionary knows some occupation nouns only as surnames (кухар, пекар,
                # двірник, Карпентер): the declinable masculine reading is the noun's paradigm; the
                # indeclinable feminine one exists only because women's surnames do not decline.
                nouns = [p for p in parses if p.pos == "NOUN" and not p.fixed] or list(parses)
                rivals = nouns
            if nouns:
                # adjective readings of the noun's own lemma do not compete: рабочего is mostly the
                # adjective "рабочий", but the adjective used as a noun is the same word
                pure = all(p.pos == "NOUN" for p in rivals)
                lemmas = {p.lemma for p in nouns}
                rivals = [p for p in rivals if not (p.pos in _ADJECTIVAL and p.lemma in lemmas)]
                share = sum(p.score for p in nouns) / (sum(p.score for p in rivals) or 1.0)
                best = max(rivals or parses, key=lambda p: p.score)
                if share < _MIN_NOUN_SHARE and best.pos != "NOUN":
                    continue  # "уже" is also a form of "уж" (a snake)
                nouns = [p for p in nouns if p.anim] or nouns  # the entity is a person (техник, not техника)
                candidates.append((0 if pure else 1, not nouns[0].anim, i, nouns))
            else:
                # an adjective or participle used as a noun (заведующая, дежурный); a person is
                # not neuter, so neuter-only readings (чистіше: a comparative) do not count
                adjectives = [p for p in parses if p.pos in _ADJECTIVAL and not p.plural
                              and p.gender in ("masc", "femn", "ms-f")]
                if adjectives and sum(p.score for p in adjectives) >= _MIN_NOUN_SHARE * sum(p.score for p in parses):
                    candidates.append((2, False, -i, adjectives))  # the last adjective of a run
        if not candidates:
            return None
        _, _, index, parses = min(candidates, key=lambda c: c[:3])
        return abs(index), parses

    def _head_gender(self, parses: list[_Parse]) -> str | None:
        """masc, femn, neut or ms-f (common gender); "" when no parse has a gender; None when the
        parses disagree and none is clearly more likely."""
        weight: dict[str, float] = defaultdict(float)
        lemmas: dict[str, set[str]] = defaultdict(set)
        for p in parses:
            gender = p.gender
            if gender is None and p.plural and p.pos == "NOUN":
                gender = self._gender_of_lemma(p.lemma)
            if gender:
                weight[gender] += p.score
                lemmas[gender].add(p.lemma)
        if parses and parses[0].pos in _ADJECTIVAL and len(weight) > 1:
            weight.pop("neut", None)  # "управляющего": masculine or neuter; a person is not neuter
        if len(weight) <= 1:
            return next(iter(weight), "")
        if (parses[0].pos == "NOUN" and set(weight) <= {"masc", "femn", "ms-f"}
                and lemmas["masc"] and lemmas["masc"] == lemmas["femn"]):
            return "ms-f"  # one lemma read both ways: Ukrainian common-gender nouns (колега)
        if len({p.score for p in parses}) == 1:
            return None  # equal scores (always so in Ukrainian) say nothing: counting parses would
            # only count case forms ("зону": зон m or зона f)
        total = sum(weight.values())
        best = max(weight, key=weight.__getitem__)
        return best if weight[best] >= self._data.clear_share * total else None

    def _agreement(self, tokens: list[str], span: list[int], head: int,
                   cases: set[str | None]) -> list[tuple[str, int, str]]:
        """(gender, index, word) for each agreeing word found by the attribute and predicate rules."""
        found: list[tuple[str, int, str]] = []
        if None not in cases and "nomn" not in cases:
            # only a nominative subject agrees with a past-tense verb, and in the oblique cases
            # adjective endings are shared too widely ("предложенной дизайнером": by the designer)
            return found
        for j in range(head - 1, max(head - 1 - _MAX_ATTRIBUTES, -1), -1):
            gender = self._attribute(tokens[j])
            if gender is False:
                break
            if gender:
                found.append((gender, j, tokens[j]))
        members = set(span)
        k = head + 1
        while k < len(tokens):
            gender = self._predicate(tokens[k])
            if gender:
                found.append((gender, k, tokens[k]))
                break
            if k not in members and tokens[k].lower() not in self._data.skip:
                break
            k += 1  # the entity's own words ("офицер полиции") and particles ("не") are passed over
        return found

    def _attribute(self, token: str) -> str | None | bool:
        """False: not an adjective-like word (stop looking left); None: adjective-like but no
        single gender in the nominative singular; else the gender it shows."""
        parses = [p for p in self._parses(token)
                  if p.pos in _ADJECTIVAL or (p.pos == "NPRO" and p.gender and p.lemma not in _PERSONAL)]
        if not parses:
            return False
        genders = {p.gender for p in parses
                   if not p.plural and p.gender in ("masc", "femn") and p.case in ("nomn", None)}
        return genders.pop() if len(genders) == 1 else None

    def _predicate(self, token: str) -> str | None:
        """The gender of a past-tense verb or short adjective/participle, when all of the word's
        gendered readings agree; else None."""
        parses = self._parses(token)
        if not any(p.gender in ("masc", "femn") and (p.past and p.pos == "VERB" or p.pos in _PREDICATIVE)
                   for p in parses):
            return None
        genders = {p.gender for p in parses if p.gender}
        return genders.pop() if len(genders) == 1 else None


def _convert(parse) -> _Parse:
    tag = parse.tag
    grammemes = tag.grammemes  # plain strings (tag.gender etc. are grammeme objects that refuse
    # comparison with values outside their category, such as "ms-f")
    gender = next((g for g in ("masc", "femn", "neut", "ms-f") if g in grammemes), None)
    return _Parse(
        pos=str(tag.POS) if tag.POS else None,
        gender=gender,
        case=str(tag.case) if tag.case else None,
        plural="plur" in grammemes,
        past="past" in grammemes,
        anim="anim" in grammemes,
        proper=bool(grammemes & _PROPER),
        fixed="Fixd" in grammemes,
        pronominal="Apro" in grammemes,
        lemma=parse.normal_form,
        score=float(parse.score),
    )


class Russian(_Slavic):
    """Russian (pymorphy3 with pymorphy3-dicts-ru)."""

    lang = "ru"


class Ukrainian(_Slavic):
    """Ukrainian (pymorphy3 with pymorphy3-dicts-uk)."""

    lang = "uk"
