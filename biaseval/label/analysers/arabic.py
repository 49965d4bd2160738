"""Arabic: the gender of an entity from the morphology of its head noun, with the Arramooz lexicon;
without a noun, from a verb's person ending or a bound pronoun.

Arabic person nouns mark the feminine with tāʾ marbūṭa (ة): مدير / مديرة, ممرض / ممرضة, كاتب /
كاتبة (the feminine of an agent noun), ميكانيكي / ميكانيكية. The ending alone is not enough: some
nouns in ة are masculine (علامة, خليفة) and many broken plurals of masculine nouns end in ة
(أساتذة, صيادلة, كتبة, قضاة), while a few feminine nouns have no ة (أم, بنت). So the ending is
read against a lexicon. Arabic also marks a person's gender on the verb (قالت "she said", تقول "she
says", قلن "they (f) said") and on bound pronouns (لها "to her", كونها "her being"): where the span
has no noun, those decide (rules 11-12; MT-GenEval tags them, a WinoMT entity is a noun phrase).

The lexicon
-----------
Arramooz, read by ``arabic_lexicon.py``: per unvocalized noun its gender, number, broken plurals and
word type (verbal noun, agent noun, adjective); its verbs in the past tense's third person masculine
singular (قال, أراد), from which ``arabic_forms.py`` recognizes the conjugated forms (perfect and
imperfect, with an object pronoun). ``biaseval/data/entity_gender/ar.yaml`` lists what the lexicon
gets wrong or lacks, with reasons.

Clitics
-------
A token may carry the conjunctions و/ف, a preposition ب/ل/ك, the article ال (ل + ال is written
لل), and at the end a pronoun (ه, ها, هم, ...; before it ة is written ت: مديرته). The *stem* of a
token is the first of its readings with those stripped, in that order, that the lexicon knows (a
sound plural of an agent noun counts: كاتبات is not ك + اتبات); failing any, a word ending in a
pronoun no Arabic word ends in (ها, هم, هن, هما) without it (ألبومها), else the token with its
prefixes stripped (for the ending rules). A final tanwīn alif (شخصا) is dropped too. A listed
particle with a pronoun (``pronoun_hosts``: لها, عليه, لكنها, لنفسها) is a pronoun, never a noun.

Rules, for one row (span non-empty, checked by ``base.GenderAnalyser.analyse``)
--------------------------------------------------------------------------------

1. Indefinite: a span token whose stem is listed under ``indefinite`` (أحدهم, أحد, إحدى), or شخص
   followed by ما (either word aligned) -> ``neutral`` (``indefinite``).
2. Head: among the span tokens not listed under ``not_heads`` (prepositions, pronouns, ...) with
   Arabic letters, the first of the highest rank: a word that can name a person (a listed word, a
   lexicon noun that is not only a verbal noun, a broken plural, the feminine in ة of a masculine
   noun the lexicon lacks: مديرة); then a verbal noun in ة that is also the feminine of an agent
   noun (مصاحبة "accompanying" or "attendant (f)"); then a word the lexicon does not know; then a
   bare word (no article, preposition or suffix) that is both such a noun and a conjugated verb
   (جادل "argued", to Arramooz also a noun; ساعد "helped" or "forearm"; عامل "treated" or
   "worker") where a clause starts (the sentence's first word, after punctuation, or with the
   conjunction و/ف), the place of the verb in Arabic's verb-subject order; then a noun that names
   no person carrying a pronoun (أسلوبها "her style"; a noun names a person when it is listed, an
   agent noun of the lexicon or listed under ``persons``: مديرته "his manager (f)", لرئيسها "to her
   chief" keep their noun); then the rest (verbs in any person: قالت, تقول, يعيشن; verbal nouns; a
   particle with a pronoun). Aligners often link the verb before the subject too ("قام النجار":
   قام is passed over; "جادل المطور": the noun is read, not جادل; "قام عامل البناء": عامل, not at a
   clause's start, is the noun "worker"). Arabic noun phrases start with their head: "موظفة
   الاستقبال" (receptionist), "مدبرة المنزل" (housekeeper), "الطبيب النفسي" (psychologist); when the
   chosen token cannot name a person itself and is a definite noun, and the word right before it,
   outside the span, is an indefinite noun that can (a construct head), that word is the head
   ("لموظفة الاستقبال" aligned to الاستقبال alone).
3. No head that is a noun (none at all, or one ranked below the verbs-or-nouns, or a verb-or-noun
   that is not the bare past: منحت is read as منح + ت) -> the person marks of rules 11-12; none ->
   unknown ``not-in-lexicon``. A verbal noun in the entity's place (الطبخ "cooking" for "the cook",
   النظافة "cleanliness" for "the cleaner") names no person, and a verb aligned with it agrees
   with it: then no verb is read.
4. The head's stem listed under ``generic`` (شخص, إنسان) -> ``neutral`` (``noun``); under
   ``female`` / ``male`` (the lexicon's gaps and errors, and the feminine elatives الكبرى, الأولى)
   -> that gender (``noun``).
5. *Agreement*, for a stem listed under ``epicene`` (one form for both sexes: شيف, عمدة) or a word
   without ة the lexicon does not know (a loanword): the first of these that exists decides
   (``agreement``): the past-tense verb right before the head when the head is its subject (no
   preposition on it and no ``not_heads`` word before it: "قالت الشيف"), a feminine adjective right
   after the head with the same definiteness (ة on an adjective the lexicon knows: "الشيف الجديدة";
   a masculine adjective has no mark that tells it from a following noun, so it is not read), or a
   past-tense verb right after it ("الشيف قالت"). A verb is feminine when it is a past-tense verb
   (of the lexicon or ``verbs``) plus ت (قالت), masculine as is. No agreement for a listed epicene
   noun -> unknown ``epicene-no-article``.
6. ات after a masculine agent noun (الأميرات, السجينات) -> ``female`` (``noun``), even where the
   lexicon also lists the word as a broken plural. A broken plural (the stem is a listed broken
   plural of a masculine noun, or a lexicon entry marked as one) -> ``male`` (``noun``): a masculine
   plural, read as male as in the other languages.
7. A stem ending in ة: ``male`` when every lexicon entry of it is a masculine singular (علامة);
   ``female`` otherwise (``noun``): the feminine of a known masculine noun or adjective (مديرة,
   ممرضة, ميكانيكية), a feminine noun of the lexicon, or a word the lexicon does not know (a
   feminine loan form: سكرتيرة).
8. Sound plurals and duals: ات after a known masculine singular (الممرضات) -> ``female``; ون/ين
   after one (المحاسبون) -> ``male``; تان/تين after one (ابنتان, المولودتين: two women) ->
   ``female`` (``noun``).
9. A word without ة the lexicon does not know, made of three or more Arabic letters -> ``male``
   (``noun``): Arabic's unmarked, masculine form (السباك: the lexicon lacks سباك); with other
   characters (a Latin word left untranslated) -> unknown ``not-in-lexicon``.
10. Any other stem the lexicon knows as masculine (مدير, طبيب, مزارع) -> ``male`` (``noun``): the
    masculine form is what names a man when a feminine form exists.

Without a noun (rule 3), the first span token, in order, that marks a gender decides:

11. *A bound pronoun* (``pronoun-suffix``): ها, هن her, them (f) -> ``female``; ه, هم him, them (m)
    -> ``male``; on a listed particle (لها, لكنها), on a noun that names no person (كونها "her
    being", أسلوبها, وفاته "his death": the ة of وفاة is not his), or as the object of a verb
    (أعطاها "he gave her", يتابعونها "they follow her", منحته "she granted him"): the object, not
    the subject, as a tagged verb with an object is mostly tagged for it. هما (the two of them) and
    the first and second persons say no gender.
12. *A verb's person ending* (``verb-agreement``), on a word ``arabic_forms`` recognizes as a
    conjugated verb (no ``not_heads`` word): perfect قال he, قالت she, قلن they (f), قالوا they
    (m); imperfect يقول he, تقول she (also "you (m)": read as she, as third-person prose has it),
    يقلن they (f), يقولون they (m); after the future's س or the ل of purpose too. A word that is both
    a perfect and an imperfect of another person (تقوم: تقوّم "he straightened" or "she does"; تحدث
    "he spoke" or "it (f) happens") is the imperfect after a word listed under ``before_imperfect``
    (لم, أن, كانت: "لم تكن"), and says nothing elsewhere. The verb agrees with its subject: in
    MT-GenEval's biographies the person; in a WinoMT span that holds only a verb, the entity when
    the aligner linked the verb of the entity's clause in the noun's place ("وفحص الفاحص", the
    examiner examined), the other entity when it linked the other's verb (docs/winomt-en.md says
    how often).

Not handled: pronouns referring back from outside the span (لأنها), free pronouns (هي, هو: listed
under ``not_heads``), relative pronouns (التي, الذي), feminine numerals, and a span that covers two
noun phrases ("فحصت الممرضة النجار", both aligned to "carpenter"): the first is read. A noun that
names no person but has an agent reading too (منصب "post", also the participle "erecting"; مكتب
"office") keeps its noun reading with a pronoun. Irregular verbs the forms do not make (رأى: يرى is
listed; others are not read).
"""

from __future__ import annotations

from typing import ClassVar

from biaseval.label.analysers.arabic_forms import PRONOUNS, Conjugations
from biaseval.label.analysers.arabic_lexicon import (
    ARABIC,
    HAMZA_ALIF,
    Lexicon,
    arramooz_path,
    lexicon,
    normalize,
    word_data,
)
from biaseval.label.analysers.base import GenderAnalyser, Reading

_CONJUNCTIONS = ("و", "ف")
_PREPOSITIONS = ("ب", "ل", "ك")
_SUFFIXES = ("هما", "هم", "هن", "ها", "كم", "ه", "ك", "ي")
_LABEL = {"m": "male", "f": "female"}
_PRONOUN_GENDER = dict(PRONOUNS)  # a bound pronoun -> "m", "f" or None
_PLAIN_SUFFIXES = ("هما", "هم", "هن", "ها")  # pronouns that end almost no Arabic word
_THIRD_PERSON = (*_PLAIN_SUFFIXES, "ه")
# how likely a token is to be the entity's head noun (rule 2); from _UNKNOWN up, a noun
_PERSON, _DERIVED, _UNKNOWN, _VERB_OR_NOUN, _POSSESSED, _OTHER = 5, 4, 3, 2, 1, 0


def _without_prefixes(word: str) -> list[tuple[str, bool]]:
    """(form, whether a preposition was stripped) for ``word`` with its proclitics stripped step by
    step: the word itself first."""
    forms = [(word, False)]
    rest = word
    if rest[:1] in _CONJUNCTIONS and len(rest) > 3:
        rest = rest[1:]
        forms.append((rest, False))
    preposition = False
    if rest.startswith("لل") and len(rest) > 3:  # ل + ال
        return forms + [(rest[2:], True)]
    if rest[:1] in _PREPOSITIONS and len(rest) > 3:
        rest, preposition = rest[1:], True
        forms.append((rest, True))
    if rest.startswith("ال") and len(rest) > 3:
        forms.append((rest[2:], preposition))
    return forms


class Arabic(GenderAnalyser):
    """Arabic (Arramooz lexicon and rules in the module docstring)."""

    lang: ClassVar[str] = "ar"
    # 2: plurals of women listed as female (ar.yaml); 3: a past-tense verb starting a clause is not the head
    # noun; 4: without a noun, a verb's person ending or a bound pronoun decides (rules 11-12)
    version: ClassVar[int] = 4

    def __init__(self) -> None:
        self.lexicon = lex = lexicon(arramooz_path())
        self.data = data = word_data()
        self._listed = data.indefinite | data.generic | data.female | data.male | data.epicene | data.persons
        listed_stems = {s for stems in data.verbs.values() for s in stems}
        self.verbs = Conjugations(self._is_past, lex.imperfect | listed_stems, data.verb_forms)
        self._stems: dict[str, tuple[str, bool, str]] = {}  # word -> stem, preposition, suffix (once per word)
        self._ranks: dict[str, int] = {}
        self._hosts: dict[str, str | None] = {}

    def read_aligned(self, sentences: list[list[str]], spans: list[list[int]]) -> list[Reading]:
        normalized: dict[str, str] = {}
        return [self._read([normalized[t] if t in normalized else normalized.setdefault(t, normalize(t))
                            for t in tokens], tokens, span) for tokens, span in zip(sentences, spans)]

    def stem(self, word: str) -> tuple[str, bool]:
        """(stem, whether it carried a preposition): see "Clitics" in the module docstring."""
        return self._stem(word)[:2]

    def _stem(self, word: str) -> tuple[str, bool, str]:
        found = self._stems.get(word)
        if found is None:
            found = self._stems[word] = self._find_stem(word)
        return found

    def _is_past(self, word: str) -> bool:
        return self.lexicon.verb(word) or word in self.data.verbs or word.translate(HAMZA_ALIF) in self.data.verbs

    def _find_stem(self, word: str) -> tuple[str, bool, str]:
        forms = _without_prefixes(word)
        lex, listed = self.lexicon, self._listed

        def known(candidate: str | None) -> bool:
            return bool(candidate) and (candidate in listed or lex.knows(candidate) or (
                candidate.endswith("ة") and lex.masculine_singular(candidate[:-1])))

        for form, prep in forms:
            for candidate in (form, form[:-1] if form.endswith("ا") and len(form) > 3 else None):
                if known(candidate):
                    return candidate, prep, ""
        for form, prep in forms:  # a sound plural of a masculine agent (كاتبات: not ك + اتبات)
            if len(form) > 4 and form.endswith(("ات", "ون", "ين")) and lex.masculine_agent(form[:-2]):
                return form, prep, ""
        for form, prep in forms:
            for suffix in _SUFFIXES:
                if form.endswith(suffix) and len(form) - len(suffix) >= 3:
                    base = form[:-len(suffix)]
                    for candidate in (base[:-1] + "ة" if base.endswith("ت") else None, base):
                        if known(candidate):
                            return candidate, prep, suffix
        for form, prep in forms:  # a pronoun no word ends in, after a word the lexicon lacks: ألبومها
            for suffix in _PLAIN_SUFFIXES:
                if form.endswith(suffix) and len(form) - len(suffix) >= 3 and not self.verbs.form(form):
                    return form[:-len(suffix)], prep, suffix
        return *forms[-1], ""

    def _read(self, words: list[str], tokens: list[str], span: list[int]) -> Reading:
        data, lex = self.data, self.lexicon
        for i in span:
            stem = self.stem(words[i])[0]
            if stem in data.indefinite or (stem == "شخص" and i + 1 < len(words) and words[i + 1] == "ما"):
                return Reading("neutral", "indefinite", tokens[i])
            if words[i] == "ما" and i > 0 and self.stem(words[i - 1])[0] == "شخص":  # only ما aligned
                return Reading("neutral", "indefinite", f"{tokens[i - 1]} {tokens[i]}")
        head, score = self._head(words, span)
        if head is None or score < _VERB_OR_NOUN or score == _VERB_OR_NOUN and not self._bare_past(words[head]):
            # no noun (a noun that is also a verb: only the bare past, as in v3): a verb or a pronoun may say
            return self._marked(words, tokens, span) or Reading(
                "unknown", "not-in-lexicon", tokens[head] if head is not None else " ".join(tokens[i] for i in span))
        stem, preposition = self.stem(words[head])
        word = tokens[head]
        if stem in data.generic:
            return Reading("neutral", "noun", word)
        for gender, listed in (("f", data.female), ("m", data.male)):
            if stem in listed:
                return Reading(_LABEL[gender], "noun", word)
        if stem in data.epicene or not lex.knows(stem) and not stem.endswith("ة"):
            agreeing = self._agreement(words, head, preposition)
            if agreeing is not None:
                gender, k = agreeing
                return Reading(_LABEL[gender], "agreement", " ".join(tokens[j] for j in sorted((head, k))))
            if stem in data.epicene:
                return Reading("unknown", "epicene-no-article", word)
        entries = lex.noun(stem)
        if len(stem) > 4 and stem.endswith("ات") and lex.masculine_agent(stem[:-2]):
            return Reading("female", "noun", word)  # women: أميرات, not a broken plural of the lexicon
        if lex.is_broken_plural(stem) or (entries and all(e.broken_plural for e in entries)):
            return Reading("male", "noun", word)
        if stem.endswith("ة"):
            masculine = entries and all(e.gender == "m" and not e.broken_plural for e in entries)
            return Reading("male" if masculine else "female", "noun", word)
        if len(stem) > 4 and stem.endswith("ات") and lex.masculine_singular(stem[:-2]):
            return Reading("female", "noun", word)
        if len(stem) > 5 and stem.endswith(("تان", "تين")) and (
                stem[:-3] in data.male or lex.masculine_singular(stem[:-3])):
            return Reading("female", "noun", word)  # two women: ابنتان, المولودتين
        if len(stem) > 4 and stem.endswith(("ون", "ين")) and lex.masculine_singular(stem[:-2]):
            return Reading("male", "noun", word)
        if not lex.knows(stem):
            if len(stem) >= 3 and ARABIC.fullmatch(stem):
                return Reading("male", "noun", word)  # no ة: Arabic's unmarked, masculine form
            return Reading("unknown", "not-in-lexicon", word)
        if any(e.gender == "m" for e in entries):
            return Reading("male", "noun", word)
        return Reading("unknown", "not-in-lexicon", word)

    def _rank(self, word: str) -> int:
        found = self._ranks.get(word)
        if found is None:
            found = self._ranks[word] = self._find_rank(word)
        return found

    def _find_rank(self, word: str) -> int:
        """How likely the token is to name a person (rule 2): _PERSON (a listed word, a noun that is
        not only a verbal noun, a broken plural, the feminine in ة of a masculine noun the lexicon
        lacks: مديرة), _DERIVED (a verbal noun in ة that is also the feminine of an agent noun:
        مصاحبة "accompanying" / "attendant (f)"), _UNKNOWN (the lexicon does not know it),
        _VERB_OR_NOUN (a bare token that is such a noun and also a conjugated verb: جادل),
        _POSSESSED (a noun that names no person, with a bound pronoun: أسلوبها), _OTHER (a verb, a
        verbal noun, a particle with a bound pronoun: لكنها)."""
        stem, _, suffix = self._stem(word)
        lex = self.lexicon
        if stem in self._listed:
            return _PERSON
        if self._host(word) is not None:
            return _OTHER
        if suffix and not self._names_person(stem):
            return _POSSESSED
        entries = lex.noun(stem)
        # the token itself (a conjunction aside) is a conjugated verb: "جادل", "وحذر", "ساعدت", "تقول"
        verb = self._verb_gender(word) is not None and (stem in (word, word[1:]) or not lex.knows(stem))
        if any(not e.masdar for e in entries) or lex.is_broken_plural(stem):
            return _VERB_OR_NOUN if verb else _PERSON
        if stem.endswith("ة") and lex.masculine_singular(stem[:-1]):
            if not entries:
                return _PERSON
            if lex.masculine_agent(stem[:-1]):
                return _DERIVED
        return _OTHER if lex.knows(stem) or verb else _UNKNOWN

    def _names_person(self, stem: str) -> bool:
        """A listed word, a noun the lexicon classes as an agent (مدير, كاتبة, قراء) or one listed
        under ``persons`` (رئيس, عمة: also in ة or a sound plural): with a bound pronoun, still the
        person named ("مديرته", his manager (f))."""
        if stem in self._listed or self.lexicon.agent(stem):
            return True
        persons = self.data.persons
        return any(base in persons or base.translate(HAMZA_ALIF) in persons
                   for base in (stem, stem[:-1] if stem.endswith("ة") else "",
                                stem[:-2] if len(stem) > 4 and stem.endswith(("ات", "ون", "ين")) else ""))

    def _host(self, word: str) -> str | None:
        """The third-person pronoun on a listed particle (لها, لكنها, عليه, لنفسها), or None; not in a
        noun of the lexicon (بني "brown" is not ب + ني, البنه is not ال + ب + ه)."""
        found = self._hosts.get(word, "")
        if found == "":
            found = self._hosts[word] = next(
                (suffix for form, _ in _without_prefixes(word) for suffix in _THIRD_PERSON
                 if form.endswith(suffix) and form[:-len(suffix)] in self.data.pronoun_hosts
                 and not self.lexicon.noun(form)), None)
        return found

    def _head(self, words: list[str], span: list[int]) -> tuple[int | None, int]:
        """Rule 2: the span's first person-like token (else its first unknown word, else its first
        word) and its rank; a definite noun whose construct head stands right before it, outside the
        span, gives way to that head ("لموظفة الاستقبال" aligned to الاستقبال only)."""
        candidates = [i for i in span if words[i] not in self.data.not_heads and ARABIC.search(words[i])]
        if not candidates:
            return None, _OTHER
        scores = {i: self._rank(words[i]) for i in candidates}
        for i in candidates:  # a noun that is also a verb is taken for the verb only where a clause starts
            if scores[i] == _VERB_OR_NOUN and not (i == 0 or self.stem(words[i])[0] != words[i]
                                                   or not ARABIC.search(words[i - 1])):
                scores[i] = _PERSON
        head = max(candidates, key=lambda i: (scores[i], -i))
        before = head - 1
        if (scores[head] < _DERIVED and before >= 0 and before not in span and self.stem(words[head])[0] != words[head]
                and "ال" in words[head][:4] and words[before] not in self.data.not_heads
                and "ال" not in words[before][:4] and self._past_gender(words[before]) is None
                and self._rank(words[before]) == _PERSON):
            return before, _PERSON
        return head, scores[head]

    def _verb_gender(self, word: str) -> str | None:
        """The gender a conjugated verb gives its subject (arabic_forms), or None."""
        form = self.verbs.form(word)
        return form.subject if form else None

    def _bare_past(self, word: str) -> bool:
        """The past's third person masculine singular as is, a conjunction allowed (جادل, وحذر)."""
        return self._is_past(word) or word[:1] in _CONJUNCTIONS and self._is_past(word[1:])

    def _past_gender(self, word: str) -> str | None:
        """A past-tense verb as is (m) or with the feminine ت (f), a conjunction allowed (rule 5)."""
        form = word[1:] if word[:1] in _CONJUNCTIONS and len(word) > 3 else word
        for candidate in (form, word):
            if self._is_past(candidate):
                return "m"
            if candidate.endswith("ت") and self._is_past(candidate[:-1]):
                return "f"
        return None

    def _marked(self, words: list[str], tokens: list[str], span: list[int]) -> Reading | None:
        """Rules 11-12: the first span token whose bound pronoun or, failing one, verb ending has a gender;
        no verb is read when the span holds a verbal noun (its subject, which names no person)."""
        verbs = not any(self._names_nothing(words[i]) for i in span)
        for i in span:
            word = words[i]
            suffix = self._host(word)
            if suffix is None and self._rank(word) == _POSSESSED:
                suffix = self._stem(word)[2]
            form = self.verbs.form(word) if suffix is None and word not in self.data.not_heads else None
            if form is not None and form.object is not None:
                return Reading(_LABEL[form.object], "pronoun-suffix", tokens[i])
            if suffix is not None:
                if gender := _PRONOUN_GENDER.get(suffix):
                    return Reading(_LABEL[gender], "pronoun-suffix", tokens[i])
            elif form is not None and verbs:
                subject = form.subject
                if form.imperfect is not None:  # "he did" or "she does": the word before tells
                    subject = form.imperfect if i > 0 and words[i - 1] in self.data.before_imperfect else None
                if subject is not None:
                    return Reading(_LABEL[subject], "verb-agreement", tokens[i])
        return None

    def _names_nothing(self, word: str) -> bool:
        """A noun of the lexicon that is no verb and names no person: a verbal noun (الطبخ, النظافة)."""
        return (word not in self.data.not_heads and self._rank(word) == _OTHER and self._host(word) is None
                and self.verbs.form(word) is None and bool(self.lexicon.noun(self.stem(word)[0])))

    def _agreement(self, words: list[str], head: int, preposition: bool) -> tuple[str, int] | None:
        """(gender, index) of the word that agrees with the head (rule 5)."""
        before = head - 1
        if not preposition and before >= 0 and words[before] not in self.data.not_heads:
            if gender := self._past_gender(words[before]):
                return gender, before
        after = head + 1
        if after < len(words):
            definite = "ال" in words[head][:4]
            if ("ال" in words[after][:4]) == definite and words[after].endswith("ة"):
                base = self.stem(words[after])[0]
                if base.endswith("ة") and self.lexicon.masculine_singular(base[:-1]):
                    return "f", after
            if gender := self._past_gender(words[after]):
                return gender, after
        return None


__all__ = ["Arabic", "Lexicon", "lexicon", "normalize"]
