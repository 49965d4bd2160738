"""What a word says about a first-person speaker (``speaker_gender.Form``), from maintained morphology:

- **ru, uk**: pymorphy3 with its dictionaries. Parses scoring under a fifth of the word's best are
  dropped (Ukrainian scores every parse alike, so none is). A cue when every remaining parse is one kind
  of gendered singular form of one gender: a past-tense verb (``past``), a short adjective or participle
  (``short``), a full adjective or participle in the nominative (``adj``); a past-tense reading wins
  over the others (Ukrainian's dictionary also reads "хотів" as a noun and "була" as an adjective), and
  abbreviations are dropped ("міг"). A full adjective, participle or ordinal in the instrumental singular
  (not a pronoun: своей, этим) with no other reading of a kind above is ``instr``, of the gender of that
  reading (masculine and neuter are spelt alike: a speaker is not neuter), where every reading is
  instrumental or it is an ordinal (первым); ``instr-link`` where it may also be a plural dative
  ("счастливым": сочувствую близким) or the feminine's genitive, dative or locative ("красивой"): a
  predicate only after a link (``speaker_gender``). Links: the forms of the data file's lemmas (быть,
  стать, себя, ...); adverbs and particles (every reading: not это) may stand between a link and its
  predicate. First person: я, or a verb in the first person singular. Third person: он, она, оно
  (nominative).
- **pl**: Morfeusz 2 (SGJP). A word is split into segments: an l-participle with the first-person
  agglutinate (zrobił+em, była+m, mógł+by+m) is a cue and a first-person marker at once; an
  l-participle alone (zrobiła, after "bym") a cue; jestem, czuję (``fin`` in the first person
  singular) and ja markers; adjectives and passive participles in the nominative singular ``adj``.
  Masculine is any of m1, m2, m3.
- **hr, sr, sl, be**: Apertium's analysers through ``lt-proc`` (Debian's apertium-hbs-eng for
  Serbo-Croatian, Latin script: Cyrillic is transliterated first; apertium-hbs-slv for Slovenian;
  apertium-bel-rus for Belarusian). An l-participle (``<lp>``, ``<past>``) whose singular readings
  have one gender is ``past``: in a first-person clause the plural, dual and neuter readings of "mogla"
  or Belarusian "адкрыла" (feminine and neuter are spelt alike) cannot be meant; adjectives and passive
  participles in the nominative singular are ``adj`` (Serbo-Croatian ma/mi are masculine).
  First person: a verb or pronoun tagged p1 sg (sam, bih, sem, ja, jaz, я), not a possessive (moj).
  Third person: a third-person pronoun in the nominative. A word that can be an infinitive is no
  adjective (izraziti). A word that can be a noun is never a cue ("dan": a day, or
  "given"; Belarusian differs: ``Belarusian``). A word the dictionary lacks is read by the l-participle's
  ending alone (hbs -ao/-io/-eo/-uo and -la, sl -l and -la, be -ў, -ла, and -ёс, -ёз, -ёк: ``Belarusian``):
  the dictionaries miss many verbs (sl "poskrbel", be "зрабіла").
"""

from __future__ import annotations

import re
import shutil
from functools import cached_property
from typing import Sequence

from biaseval.label.analysers.base import MissingAnalyser
from biaseval.label.analysers.lt_proc import find_automorf, run_analyser
from biaseval.label.analysers.slavic import _morph_analyser
from biaseval.label.speaker_gender import NOTHING, Form, SpeakerReader

_M = {"masc": "m", "femn": "f"}
PRONOUNS = {"Apro"}  # ru: the pronominal adjectives (своей, моим; uk tags them NPRO): never a predicate


class _Pymorphy(SpeakerReader):
    @cached_property
    def morph(self):
        return _morph_analyser(self.lang)

    def __init__(self) -> None:
        super().__init__()
        self.morph  # noqa: B018 - fail now (MissingAnalyser) if the dictionary is not installed

    def form(self, word: str) -> Form:
        parses = self.morph.parse(word.replace("ё", "е") if self.lang == "ru" else word.replace("’", "'"))
        if not parses:
            return NOTHING
        best = max(p.score for p in parses)
        parses = [p for p in parses if p.score >= best / 5]
        tag = parses[0].tag
        first = any((p.tag.POS == "NPRO" and "1per" in p.tag and "sing" in p.tag and p.tag.case == "nomn")
                    or (p.tag.POS == "VERB" and "1per" in p.tag and "sing" in p.tag) for p in parses)
        third = all(p.tag.POS == "NPRO" and "3per" in p.tag and p.tag.case == "nomn" for p in parses)
        noun = tag.POS == "NOUN"
        link = any(p.normal_form in self.data.links for p in parses)
        adverb = all(p.tag.POS in ("ADVB", "PRCL", "COMP") for p in parses)  # not это: also a pronoun
        parses = [p for p in parses if not {"Abbr", "Fixd"} & set(p.tag.grammemes)] or parses
        past = [p for p in parses if self._kind(p.tag) == "past"]
        if past:  # a past-tense reading wins over the noun or adjective the form may also be (uk хотів, була)
            parses = past
        kinds = {self._kind(p.tag) for p in parses}
        genders = {_M.get(p.tag.gender) for p in parses}
        if len(kinds) == 1 and None not in kinds and len(genders) == 1 and None not in genders:
            return Form(genders.pop(), kinds.pop(), first, third, noun=noun, link=link, adverb=adverb)
        readings = [p for p in parses if self._instrumental(p.tag)]
        instrumental = {"f" if p.tag.gender == "femn" else "m" for p in readings}
        if len(instrumental) == 1 and kinds == {None}:
            sure = all(p.tag.case == "ablt" for p in parses) or any("Anum" in p.tag.grammemes for p in readings)
            return Form(instrumental.pop(), "instr" if sure else "instr-link", first, third, noun=noun, link=link,
                        adverb=adverb)
        return Form(None, None, first, third, noun=noun, link=link, adverb=adverb)

    @staticmethod
    def _instrumental(tag) -> bool:
        # a gender is singular (Ukrainian's tags say "sing" only sometimes)
        return (tag.POS in ("ADJF", "PRTF") and tag.case == "ablt" and not PRONOUNS & tag.grammemes
                and tag.gender in ("masc", "neut", "femn"))

    @staticmethod
    def _kind(tag) -> str | None:
        if "plur" in tag or ("sing" not in tag and tag.gender not in ("masc", "femn")):
            return None  # Ukrainian tags a gendered past tense without "sing"
        if tag.POS == "VERB" and "past" in tag:
            return "past"
        if tag.POS in ("ADJS", "PRTS"):
            return "short"
        if tag.POS in ("ADJF", "PRTF") and tag.case == "nomn":
            return "adj"
        return None


class Russian(_Pymorphy):
    lang = "ru"


class Ukrainian(_Pymorphy):
    lang = "uk"


class Polish(SpeakerReader):
    lang = "pl"

    def __init__(self) -> None:
        super().__init__()
        try:
            import morfeusz2
        except ImportError:
            raise MissingAnalyser("the pl speaker reader needs Morfeusz 2: pip install morfeusz2") from None
        self.morfeusz = morfeusz2.Morfeusz(expand_tags=False)

    def form(self, word: str) -> Form:
        segments = [(start, tag.split(":")) for start, _, (_, _, tag, *_rest) in self.morfeusz.analyse(word)]
        first = any(t[0] == "aglt" and t[1] == "sg" and t[2] == "pri" for _, t in segments) or any(
            t[0] in ("fin", "bedzie") and t[1] == "sg" and t[2] == "pri" for s, t in segments if s == 0) or any(
            t[0] == "ppron12" and t[1] == "sg" and "nom" in t[2].split(".") and t[4] == "pri" for _, t in segments)
        noun = all(t[0] in ("subst", "depr") for s, t in segments if s == 0)
        first_segment = [t for s, t in segments if s == 0]
        past = {self._gender(t[2]) for t in first_segment if t[0] == "praet" and t[1] == "sg"}
        if past:  # an l-participle reading wins over the noun or adjective it may also be (była)
            gender = past.pop() if len(past) == 1 else None
            return Form(gender, "past" if gender else None, first)
        adjectives = {self._gender(t[3]) for t in first_segment
                      if t[0] in ("adj", "ppas") and t[1] == "sg" and "nom" in t[2].split(".")}
        if len(adjectives) == 1 and None not in adjectives and all(t[0] in ("adj", "ppas") for t in first_segment):
            return Form(adjectives.pop(), "adj", first)
        return Form(None, None, first, noun=noun and bool(segments))

    @staticmethod
    def _gender(field: str) -> str | None:
        parts = set(field.split("."))
        return "f" if parts == {"f"} else "m" if parts and parts <= {"m1", "m2", "m3"} else None


_CYRILLIC = dict(zip("абвгдђежзијклљмнњопрстћуфхцчџш",
                     ["a", "b", "v", "g", "d", "đ", "e", "ž", "z", "i", "j", "k", "l", "lj", "m", "n", "nj", "o",
                      "p", "r", "s", "t", "ć", "u", "f", "h", "c", "č", "dž", "š"]))


class _Apertium(SpeakerReader):
    package: str
    automorf: str
    past_tag: str
    unknown_past: tuple[tuple[str, str], ...] = ()  # (gender, ending) of an l-participle the dictionary lacks
    # be, sl: a form the dictionary reads as a noun and also as a past (sl moral: "had to", or "of morals")
    # is ``past-or-noun``: a cue where it stands beside a first-person marker, right before it ("Moral sem")
    # or after it with only adverbs and unstressed pronouns between ("sem jim moral", "Я ніколі не
    # сказаў"), in a clause with no other cue ("Oblačila sem si dal": dal, not "oblačila", clothes)
    past_homographs: bool = False
    nouns_by_ending: bool = False  # be, sl: also a form read only as a noun but ending like a past (сказаў)

    def __init__(self) -> None:
        super().__init__()
        self.lt_proc = shutil.which("lt-proc")
        path, places = find_automorf(self.package, self.automorf, self.lt_proc)
        if self.lt_proc is None or path is None:
            raise MissingAnalyser(f"the {self.lang} speaker reader needs Apertium's analyser {self.automorf} "
                                  f"(Debian: apt-get install lttoolbox {self.package}); looked in "
                                  f"{', '.join(str(p) for p in places)}")
        self.path = path

    def spelling(self, word: str) -> str:
        return word

    def forms(self, words: Sequence[str]) -> dict[str, Form]:
        spelled = {w: self.spelling(w) for w in words}
        found = run_analyser(self.lt_proc, self.path, list(dict.fromkeys(spelled.values())))
        return {w: self._form(found.get(s, ()), s) for w, s in spelled.items()}

    def _form(self, analyses, word: str) -> Form:
        if not analyses:  # a word the dictionary lacks: the l-participle's ending (class docstring)
            gender = self._by_ending(word)
            return Form(gender, "past") if gender else NOTHING
        tags = [set(a.tags) for a in analyses]
        # a possessive (hbs moj: "p1 sg nom") is no subject
        first = any("p1" in t and "sg" in t and "pos" not in t and ("nom" in t or t & {"pres", "cnd", "fti", "clt"})
                    for t in tags)
        third = all("prn" in t and "p3" in t and "nom" in t for t in tags)
        noun = any(t & {"n", "np"} for t in tags)
        # adverbs, particles (be "не" is read as an interjection) and pronouns (sl se, ti, ga; a third-person
        # subject makes the clause no first person's anyway): what may stand between the auxiliary or "я" and
        # the past form
        adverb = all(t & {"adv", "part", "ij", "cmp", "prn"} for t in tags)
        # the speaker is not neuter: Belarusian writes the feminine and neuter past alike (адкрыла)
        past = {self._gender(t) for t in tags if self.past_tag in t and "sg" in t and "nt" not in t}
        if noun and self.past_homographs:  # a past beside the marker (``past_homographs``)
            gender = (past.pop() if len(past) == 1 and None not in past
                      else self._by_ending(word) if self.nouns_by_ending and not past else None)
            return Form(gender, "past-or-noun" if gender else None, first, third, noun=True, adverb=adverb)
        if noun:  # a word that can be a noun is no cue ("dan": a day, or "given"), but says what follows it
            return Form(None, None, first, third, noun=True, adverb=adverb)
        if len(past) == 1 and None not in past:
            return Form(past.pop(), "past", first, third)
        adjectives = {self._gender(t) for t in tags
                      if t & {"adj", "pp"} and "sg" in t and "nom" in t and "nt" not in t}  # pp: passive participle
        infinitive = any("inf" in t for t in tags)  # hbs izraziti: "to express", or "expressive"
        if adjectives and None not in adjectives and len(adjectives) == 1 and not infinitive:
            return Form(adjectives.pop(), "adj", first, third)
        return Form(None, None, first, third, adverb=adverb)

    def _by_ending(self, word: str) -> str | None:
        """The gender of a past form told by its ending (``unknown_past``), or None."""
        return next((gender for gender, ending in self.unknown_past if re.search(ending, word)), None)

    @staticmethod
    def _gender(tags: set[str]) -> str | None:
        if tags & {"m", "ma", "mi", "mn"} and "f" not in tags:
            return "m"
        if "f" in tags and not tags & {"m", "ma", "mi", "mn", "mf"}:
            return "f"
        return None


class _SerboCroatian(_Apertium):
    version = 2
    package, automorf, past_tag = "apertium-hbs-eng", "hbs-eng.automorf.bin", "lp"
    unknown_past = (("m", r"...[aeiu]o$"), ("f", r"..[aeiu]la$"))

    def spelling(self, word: str) -> str:
        return "".join(_CYRILLIC.get(c, c) for c in word)


class Croatian(_SerboCroatian):
    lang = "hr"


class Serbian(_SerboCroatian):
    lang = "sr"


class Slovenian(_Apertium):
    lang = "sl"
    package, automorf, past_tag = "apertium-hbs-slv", "slv-hbs.automorf.bin", "past"
    version, past_homographs, nouns_by_ending = 2, True, True
    unknown_past = (("m", r"..[aeiou]l$"), ("f", r"..[aeiou]la$"))


class Belarusian(_Apertium):
    """Belarusian: the dictionary lacks many past forms and has nouns spelt like them (стаў: "became" or a
    "pond"; стала: "became" or "of the table"; сказаў only as "of tales"; мыла only as "soap"): they are
    read beside the marker (``past_homographs``, ``nouns_by_ending``: "Я сказаў", "я ніколі не мыла").
    Endings of a past the dictionary lacks: -ў after a vowel and -ла after any letter, with -ся
    (знайшла, спякла), and the masculine of the consonant stems (нёс, вёз, пёк: прынёс, вынес)."""

    lang, version = "be", 2
    package, automorf, past_tag = "apertium-bel-rus", "bel-rus.automorf.bin", "past"
    unknown_past = (("m", r"..[аеіоуыэюя]ў(?:ся)?$"), ("m", r"(?:[ёе][сзк]|ёг)(?:ся)?$"),
                    ("f", r"..ла(?:ся)?$"))
    past_homographs, nouns_by_ending = True, True
