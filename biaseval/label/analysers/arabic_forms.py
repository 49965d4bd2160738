"""Arabic conjugated verbs and bound pronouns: the person marks the Arabic analyser reads where a span
has no noun that can name a person (rules 11-12 of ``arabic.py``).

Arramooz lists each verb once, in the past tense's third person masculine singular (قال, أعطى,
استقال), with the vowel of its imperfect for a verb of three root letters. The forms a translation
writes are built from it here, unvocalized:

- the perfect's endings: ت she (قالت; also "I"/"you", which third-person prose rarely uses), تا the
  two of them (f), ن they (f) (قلن: a hollow verb loses its ا), وا they (m) (قالوا; و before an
  object pronoun: أخذوها); a verb in ى or ا drops it before them (أعطت, أمضوا, أمضين);
- the imperfect: ي he, ت she, each followed by the stem, ي...ن and ت...ن they (f), ...ون / ...وا
  they (m), ت...ين and ت...ي you (f), ي...ان / ت...ان the two of them (m / f); after the future's
  س (ستعترف) or the ل of purpose (لتتمكن). ت alone is also "you" (m): read as "she", as third-person
  prose has it. The stem (``imperfect_stems``): a sound verb keeps its letters (كتب: يكتب); a hollow
  verb's middle ا becomes و, ي or ا after the imperfect's vowel (قام: يقوم; باع: يبيع; نام: ينام)
  and drops in the jussive (لم يكن); a final ى/ا/ي becomes ي, و or ى (رمى: يرمي; دعا: يدعو; بقي:
  يبقى); a first و may drop (وصل: يصل); form IV loses its أ (أعلن: يعلن; أراد: يريد; أعطى: يعطي),
  forms VII, VIII and X their ا (انضم: ينضم; اشترى: يشتري; استقال: يستقيل); forms II, III, V and VI
  keep their letters (ساعد: يساعد; تزوج: يتزوج; نادى: ينادي);
- an object pronoun at the end (``PRONOUNS``): ه him, ها her, هم them (m), هن them (f), هما the two
  of them (no gender); ك, كم, ني, نا are not third persons (no gender either).

These forms over-generate a little (a few words are both a noun and such a verb form: the
analyser asks the lexicon's nouns first) and miss irregular verbs; ``ar.yaml`` lists verbs the
lexicon lacks (كان, مات, توفي) with their imperfect stems, an irregular stem (رأى: يرى), and forms the
endings do not make (كن, "they (f) were", which the lexicon has as كنّ "hid").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Mapping

# bound pronouns (longest first) and the gender they give; None: a pronoun without one
PRONOUNS = (("هما", None), ("هم", "m"), ("هن", "f"), ("ها", "f"), ("ه", "m"),
            ("كما", None), ("كم", None), ("ني", None), ("نا", None), ("ك", None))
_HOLLOW = {"ضمة": "و", "كسرة": "ي", "فتحة": "ا"}  # the imperfect's vowel -> a hollow verb's middle letter
_DEFECTIVE = {"ضمة": "و", "كسرة": "ي", "فتحة": "ى"}  # -> a defective verb's last letter
_WEAK_ENDS = "ىاي"
# perfect endings: (ending, gender of the subject)
_PERFECT = (("تا", "f"), ("ت", "f"), ("وا", "m"), ("ن", "f"))
# imperfect endings: (ending, gender after ي, gender after ت); "" marks a form that does not exist
_IMPERFECT = (("", "m", "f"), ("ون", "m", "m"), ("وا", "m", "m"), ("ان", "m", "f"), ("ين", "", "f"),
              ("ن", "f", "f"), ("ي", "", "f"))
_CONJUNCTIONS = ("و", "ف")


def imperfect_stems(past: str, vowel: str | None, triliteral: bool) -> set[str]:
    """What follows the person prefix (ي, ت) in the imperfect of the verb whose unvocalized past third
    person masculine singular is ``past``; ``vowel`` is Arramooz's ``future_type`` (ضمة, كسرة, فتحة),
    meaningful for a verb of three root letters (``triliteral``)."""
    stems = {past}
    if len(past) < 3:  # a doubled verb written with two letters: ظن, يظن
        return stems
    if triliteral or len(past) == 3:
        if len(past) == 3 and past[1] == "ا":  # hollow: قام يقوم, and the jussive يقم
            middles = [_HOLLOW[vowel]] if vowel in _HOLLOW else list(_HOLLOW.values())
            stems = {past[0] + m + past[2] for m in middles} | {past[0] + past[2]}
        elif len(past) == 3 and past[2] in _WEAK_ENDS:  # defective: رمى يرمي, دعا يدعو, بقي يبقى
            stems.add(past[:2] + _DEFECTIVE.get(vowel or "", "ي"))
        if past[0] == "و":  # assimilated: وصل يصل
            stems.add(past[1:])
        return stems
    first, rest = past[0], past[1:]
    if first in "أإ":  # form IV: أعلن يعلن, أراد يريد, أعطى يعطي
        stem = rest[0] + "ي" + rest[2] if len(rest) == 3 and rest[1] == "ا" else rest
        return {_weak_end(stem)}
    if first == "ا":  # forms VII, VIII, X: انضم ينضم, اشترى يشتري, استقال يستقيل, اختار يختار
        stems = {_weak_end(rest)}
        if rest.startswith("ست") and len(rest) == 5 and rest[3] == "ا":
            stems.add(rest[:3] + "ي" + rest[4])
        return stems
    if first == "ت":  # forms V, VI: تزوج يتزوج, تلقى يتلقى
        return stems
    return stems | {_weak_end(past)}  # forms II, III: ساعد يساعد, نادى ينادي


def _weak_end(stem: str) -> str:
    return stem[:-1] + "ي" if stem[-1:] in "ىا" else stem


@dataclass(frozen=True)
class VerbForm:
    """A word read as a conjugated verb: the gender its person ending gives its subject, the gender of
    its object pronoun (None: none given), and, for a word that is both a perfect and an imperfect
    with another subject (تقوم: "he straightened" or "she does"; تحدث: "he spoke" or "it (f)
    happens"), the imperfect's subject."""

    subject: str | None
    object: str | None
    imperfect: str | None = None


class Conjugations:
    """Recognizes conjugated verbs of a lexicon's verbs (``is_past``: whether a word is an unvocalized
    past third person masculine singular; ``imperfect``: their imperfect stems; ``listed``: forms the
    rules do not make, with their subject's gender)."""

    def __init__(self, is_past: Callable[[str], bool], imperfect: Collection[str], listed: Mapping[str, str]):
        self.is_past = is_past
        self.imperfect = imperfect
        self.listed = listed  # forms the rules do not make -> the subject's gender
        self._seen: dict[str, VerbForm | None] = {}

    def form(self, word: str) -> VerbForm | None:
        """``word`` (unvocalized) as a verb, or None; a conjunction و/ف before it is allowed."""
        found = self._seen.get(word, ())
        if found == ():
            found = self._seen[word] = self._form(word)
        return found

    def _form(self, word: str) -> VerbForm | None:
        for form in (word, word[1:]) if word[:1] in _CONJUNCTIONS and len(word) > 2 else (word,):
            if form in self.listed:
                return VerbForm(self.listed[form], None)
            if len(form) < 3 and form is not word:
                continue
            for base, pronoun in self._objects(form):
                perfect = self._perfect(base, pronoun is not None)
                imperfect = self._imperfect_subject(base, pronoun is not None)
                if perfect is not None or imperfect is not None:
                    other = imperfect if perfect is not None and imperfect not in (None, perfect) else None
                    return VerbForm(perfect or imperfect, pronoun[1] if pronoun else None, other)
        return None

    @staticmethod
    def _objects(form: str) -> list[tuple[str, tuple[str, str | None] | None]]:
        out: list[tuple[str, tuple[str, str | None] | None]] = [(form, None)]
        for suffix, gender in PRONOUNS:
            if form.endswith(suffix) and len(form) - len(suffix) >= 2:
                out.append((form[:-len(suffix)], (suffix, gender)))
        return out

    def _perfect(self, base: str, with_object: bool) -> str | None:
        """The subject's gender ("m", "f", or "" for none) if ``base`` is a perfect, else None."""
        if self.is_past(base):
            return "m"
        if with_object and base.endswith("ا") and self.is_past(base[:-1] + "ى"):  # أعطاها: أعطى
            return "m"
        if with_object and base.endswith("و") and self._past_or_weak(base[:-1]):  # أخذوها: أخذوا
            return "m"
        for ending, gender in _PERFECT:
            if base.endswith(ending) and len(base) - len(ending) >= 2:
                stem = base[:-len(ending)]
                if self._past_or_weak(stem):
                    return gender
                if ending == "ن" and len(stem) == 2 and self.is_past(stem[0] + "ا" + stem[1]):  # قلن: قال
                    return gender
                if ending == "ن" and stem.endswith("ي") and self.is_past(stem[:-1] + "ى"):  # أمضين
                    return gender
        return None

    def _past_or_weak(self, stem: str) -> bool:
        """``stem`` is a past verb, or one that lost its final ى/ا before an ending (أعطت, دعت, أمضوا)."""
        return self.is_past(stem) or self.is_past(stem + "ى") or self.is_past(stem + "ا")

    def _imperfect_subject(self, base: str, with_object: bool) -> str | None:
        for start in (base, base[1:] if base[:1] in "سل" and len(base) > 3 else None):
            if not start or start[0] not in "يت":
                continue
            person, rest = start[0], start[1:]
            for ending, after_y, after_t in _IMPERFECT + ((("و", "m", "m"),) if with_object else ()):
                gender = after_y if person == "ي" else after_t
                if not gender or not rest.endswith(ending) or len(rest) - len(ending) < 2:
                    continue
                stem = rest[:len(rest) - len(ending)]
                if stem in self.imperfect or (ending and any(stem + end in self.imperfect for end in "يوى")):
                    return gender
        return None


__all__ = ["Conjugations", "PRONOUNS", "VerbForm", "imperfect_stems"]
