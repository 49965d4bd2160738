"""The Arabic entity-gender analyser (biaseval/label/analysers/arabic.py, Arramooz lexicon): each rule
on hand-written sentences (tāʾ marbūṭa and its exceptions, broken and sound plurals, clitics,
agreement for an epicene or unknown noun, the head among the aligned words, a verb's person ending
and a bound pronoun where the span has no noun), the span contract, and, on the lexicon's own verbs
and nouns, that every perfect ending is read and that a verb never outranks a noun."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from biaseval.label.analysers import MissingAnalyser, analyser_for
from biaseval.label.analysers.arabic import Arabic
from biaseval.label.analysers.arabic_forms import imperfect_stems
from biaseval.label.analysers.base import MARK_REASONS
from biaseval.label.tokens import tokenize

from gender_cases import F, M, N, U, check_span_contract, ids, label_reason, read


@pytest.fixture(scope="module")
def ar() -> Arabic:
    return Arabic()


CASES = [
    # the noun's form decides
    ("قال المدير", [1], M, "noun"),
    ("قالت المديرة", [1], F, "noun"),                      # ة on a masculine noun of the lexicon
    ("ساعد المأمور موظفة الاستقبال", [2, 3], F, "noun"),   # the construct head comes first
    ("الميكانيكية", [0], F, "noun"),                        # the feminine of a nisba adjective
    ("السكرتيرة", [0], F, "noun"),                          # unknown to the lexicon: the ending decides
    ("كاتبة", [0], F, "noun"),                              # the feminine of an agent noun
    ("للمزارع", [0], M, "noun"),                            # ل + ال stripped
    ("وأخبر مديرته", [1], F, "noun"),                       # a pronoun suffix; ة written ت before it
    ("شكر المحامي", [1], M, "noun"),
    ("الأم", [0], F, "noun"),                               # feminine without ة (ar.yaml)
    # plurals of women (MT-GenEval's tagged references): the lexicon reads them as masculine or not at all
    ("الفتيات", [0], F, "noun"),
    ("للبنات", [0], F, "noun"),
    ("السيدات", [0], F, "noun"),
    ("الأمهات", [0], F, "noun"),
    ("النساء", [0], F, "noun"),
    # exceptions to the ending
    ("العلامة", [0], M, "noun"),                            # a masculine noun in ة
    ("الخليفة", [0], M, "noun"),                            # listed in ar.yaml (the lexicon says feminine)
    ("الأساتذة", [0], M, "noun"),                           # a broken plural in ة of a masculine noun
    ("الصيادلة", [0], M, "noun"),
    ("الأطباء", [0], M, "noun"),                            # a broken plural without ة
    ("الممرضات", [0], F, "noun"),                           # a sound feminine plural
    ("كاتبات", [0], F, "noun"),                             # not ك + اتبات
    ("الأميرات", [0], F, "noun"),                           # also a broken plural to the lexicon
    ("ابنتان", [0], F, "noun"),                             # a feminine dual
    ("المولودتين", [0], F, "noun"),
    ("الإناث", [0], F, "noun"),                             # the lexicon's feminine broken plural (ar.yaml)
    ("الصغرى", [0], F, "noun"),                             # a feminine elative (ar.yaml)
    ("المحاسبون", [0], M, "noun"),                          # a sound masculine plural
    # the head among the aligned words: a verb or a verbal noun aligned too is passed over
    ("قام النجار بعمل مكتب", [0, 1], M, "noun"),
    ("قام المعلم بزيارة المأمور", [2, 3], M, "noun"),       # زيارة "visit" is a verbal noun
    ("قال المدير لموظفة الاستقبال", [3], F, "noun"),         # only the complement aligned: its construct head
    # a bare word that is also a past-tense verb (جادل "argued", also a noun to Arramooz) gives way to
    # a noun: the aligner links the verb before its subject (VSO) with the subject
    ("جادل المطورة مع المصمم", [0, 1], F, "noun"),
    ("طلب المدققة من الحارس", [0, 1], F, "noun"),
    ("وحذر الطبيبة الكهربائي", [0, 1], F, "noun"),
    ("ساعدت المستشارة", [0, 1], F, "noun"),
    ("قام عامل البناء", [1, 2], M, "noun"),                 # alone among nouns it is still read: عامل "worker"
    ("ساعد السباك", [0, 1], M, "agreement"),               # the verb agrees with an unknown noun
    ("ساعدت السباك", [0, 1], F, "agreement"),
    # a verb or a verbal noun in the entity's place names no person
    ("تحدث الطبخ إلى الخياط", [1], U, "not-in-lexicon"),    # "the cook" rendered as "the cooking"
    ("فتح الباب للنظافة", [2], U, "not-in-lexicon"),        # "the cleaner" as "cleanliness"
    ("ساعد المصاحبة", [1], F, "noun"),                      # a verbal noun, also the feminine of مصاحب
    ("أخبر الفني", [1], M, "noun"),                         # the lexicon knows فني only as a verb (ar.yaml)
    ("الnutritionist", [0], U, "not-in-lexicon"),            # a Latin word is not read
    # epicene and unknown nouns: agreement
    ("أخبرت العمدة", [1], F, "agreement"),                  # عمدة: masculine in ة, used for women too
    ("العمدة", [0], U, "epicene-no-article"),
    ("قالت الشيف", [1], F, "agreement"),                    # the verb before its subject
    ("قال الشيف", [1], M, "agreement"),
    ("الشيف قالت", [0], F, "agreement"),                    # the verb after the subject
    ("الشيف الجديدة", [0], F, "agreement"),                 # an attributive adjective
    ("الشيف الجديد", [0], U, "epicene-no-article"),         # unmarked: could be a following noun
    ("الشيف", [0], U, "epicene-no-article"),
    ("مع الشيف", [1], U, "epicene-no-article"),
    ("السباك", [0], M, "noun"),                             # unknown, no ة: the unmarked masculine
    # indefinites and generic nouns
    ("أخبر الفني أحدهم", [2], N, "indefinite"),
    ("إحدى اللاعبات", [0], N, "indefinite"),                 # the feminine أحد
    ("قال لشخص ما", [1], N, "indefinite"),
    ("التقى شخصا ما", [1, 2], N, "indefinite"),             # the tanwīn alif
    ("قال لشخص ما", [2], N, "indefinite"),                  # only ما aligned
    ("الشخص", [0], N, "noun"),
    # nothing to read
    ("قال مع", [1], U, "not-in-lexicon"),                   # a preposition is never the head
    ("the nurse", [0, 1], U, "not-in-lexicon"),
    ("قال المدير", [], U, "no-alignment"),
]


@pytest.mark.parametrize("text, span, label, reason", CASES, ids=ids(CASES))
def test_rules(ar, text, span, label, reason):
    assert label_reason(read(ar, text, span)) == (label, reason)


# A span without a noun that can name a person (MT-GenEval tags the words that carry a person's gender:
# verbs, and words with a bound pronoun): the verb's person ending or the pronoun decides, each with its
# own reason.
MARKS = [
    # the perfect: ت 3fs, ن 3fp, وا 3mp; the bare form 3ms
    ("استقالت من منصبها", [0], F, "verb-agreement"),
    ("استقال من منصبه", [0], M, "verb-agreement"),
    ("وعيَّنت", [0], F, "verb-agreement"),                  # diacritics and the conjunction
    ("قدمن", [0], F, "verb-agreement"),
    ("أمضوا", [0], M, "verb-agreement"),                    # a verb in ى: أمضى
    ("تلقت", [0], F, "verb-agreement"),                     # تلقى
    ("كانت", [0], F, "verb-agreement"),                     # كان: a verb the lexicon lacks (ar.yaml)
    ("وتوفيت", [0], F, "verb-agreement"),
    # the imperfect: ت 3fs, ي 3ms, ي...ن 3fp, ...ون 3mp
    ("كانت تقوم", [1], F, "verb-agreement"),                # قام, imperfect يقوم
    ("تقوم", [0], U, "not-in-lexicon"),                     # also تقوّم, "he straightened": no context, no gender
    ("يأسن", [0], U, "not-in-lexicon"),                     # they (f) despaired, or he stagnates (أسن)
    ("لم تقم", [1], F, "verb-agreement"),                   # the jussive
    ("يقوم", [0], M, "verb-agreement"),
    ("تحاول", [0], F, "verb-agreement"),                    # حاول (form III)
    ("تضيف", [0], F, "verb-agreement"),                     # أضاف (form IV, hollow)
    ("يعيشن", [0], F, "verb-agreement"),
    ("يكتسبون", [0], M, "verb-agreement"),
    ("لم تكن", [1], F, "verb-agreement"),                   # the jussive of كان
    ("ستعترف", [0], F, "verb-agreement"),                   # the future's س
    ("لتتمكّن", [0], F, "verb-agreement"),                  # ل of purpose
    # a bound pronoun: on a preposition or particle, on a noun that names no person, on a verb
    ("لها", [0], F, "pronoun-suffix"),
    ("له", [0], M, "pronoun-suffix"),
    ("كونها", [0], F, "pronoun-suffix"),
    ("لكنها قررت", [0, 1], F, "pronoun-suffix"),            # the first word that says decides
    ("أسلوبها", [0], F, "pronoun-suffix"),                  # "her style": أسلوب is masculine, she is not
    ("وفاته", [0], M, "pronoun-suffix"),                    # "his death": the ة of وفاة is not his
    ("مكانتهن", [0], F, "pronoun-suffix"),
    ("أجبرهم", [0], M, "pronoun-suffix"),
    ("أعطاها", [0], F, "pronoun-suffix"),                   # the object pronoun, not the unmarked verb
    ("يتابعونها", [0], F, "pronoun-suffix"),
    # the noun decides wherever the span has one: verbs are not heads (WinoMT's entities)
    ("قالت المدير", [0, 1], M, "noun"),
    ("تقول المديرة", [0, 1], F, "noun"),
    ("يقول المديرة", [0, 1], F, "noun"),
    ("وأخبر مديرته", [1], F, "noun"),                       # a person noun with a suffix: the noun
    ("نظمت الغرفة لرئيسها", [2], M, "noun"),                # رئيس names a person (ar.yaml)
    ("تحدثت مع السباك", [0, 2], M, "noun"),
    ("ألبومها", [0], F, "pronoun-suffix"),                  # ها after a word the lexicon lacks
    ("كن", [0], F, "verb-agreement"),                       # they (f) were: listed in ar.yaml (the lexicon's كنّ "hid")
    ("وفحص الفاحص", [0], M, "verb-agreement"),              # only the verb aligned: it agrees with its subject
    ("مٌنحت", [0], F, "verb-agreement"),                    # also a noun to the lexicon; marked: the verb
    # a verbal noun in the span names no person: the verb aligned with it agrees with it, and is not read
    ("قال الإنتقال", [0, 1], U, "not-in-lexicon"),
    # nothing marks a gender
    ("لهما", [0], U, "not-in-lexicon"),                     # the dual pronoun has none
    ("أنا", [0], U, "not-in-lexicon"),
]


@pytest.mark.parametrize("text, span, label, reason", MARKS, ids=ids(MARKS))
def test_verbs_and_pronouns_without_a_noun(ar, text, span, label, reason):
    assert label_reason(read(ar, text, span)) == (label, reason)


@pytest.mark.parametrize("past, vowel, triliteral, stem", [
    ("كتب", "ضمة", True, "كتب"),        # sound: يكتب
    ("قام", "ضمة", True, "قوم"),        # hollow: يقوم, and the jussive يقم
    ("قام", "ضمة", True, "قم"),
    ("باع", "كسرة", True, "بيع"),
    ("نام", "فتحة", True, "نام"),
    ("رمى", "كسرة", True, "رمي"),       # defective: يرمي, يدعو, يبقى
    ("دعا", "ضمة", True, "دعو"),
    ("بقي", "فتحة", True, "بقى"),
    ("وصل", "كسرة", True, "صل"),        # assimilated: يصل
    ("أعلن", "فتحة", False, "علن"),     # form IV: يعلن, يريد, يعطي
    ("أراد", "فتحة", False, "ريد"),
    ("أعطى", "فتحة", False, "عطي"),
    ("انضم", "فتحة", False, "نضم"),     # forms VII, VIII, X: ينضم, يشتري, يستقيل
    ("اشترى", "فتحة", False, "شتري"),
    ("استقال", "فتحة", False, "ستقيل"),
    ("تزوج", "فتحة", False, "تزوج"),    # forms V, II, III: يتزوج, يساعد, ينادي
    ("ساعد", "فتحة", False, "ساعد"),
    ("نادى", "فتحة", False, "نادي"),
])
def test_imperfect_stems(past, vowel, triliteral, stem):
    assert stem in imperfect_stems(past, vowel, triliteral)


_PERFECT_ENDINGS = {"ت": F, "وا": M, "ن": F}  # she; they (m); they (f)
_WEAK = "ىاي"  # a verb in one of these changes its last letter before an ending (أعطى: أعطت)


@pytest.fixture(scope="module")
def sound_verbs(ar) -> list[str]:
    """The lexicon's past-tense verbs that keep their last letter before an ending and that ar.yaml
    does not list as a noun (أحد is the indefinite "one", not أحّد "unified")."""
    d = ar.data
    listed = d.indefinite | d.generic | d.female | d.male | d.epicene | d.persons
    return sorted(v for v in ar.lexicon.verbs if len(v) >= 3 and v[-1] not in _WEAK and v not in listed)


@pytest.fixture(scope="module")
def agent_nouns(ar) -> list[str]:
    """Masculine singular agent nouns of the lexicon that are nothing else (مدير, مهندس)."""
    return sorted(w for w, entries in ar.lexicon.nouns.items()
                  if len(w) >= 3 and not w.endswith("ة") and not ar.lexicon.verb(w) and not ar.lexicon.is_broken_plural(w)
                  and all(e.agent and e.gender == "m" and not e.broken_plural for e in entries))


@pytest.mark.property
@given(st.data())
def test_every_perfect_ending_of_a_lexicon_verb_is_read(ar, sound_verbs, data):
    """Any past-tense verb of the lexicon with ت, وا or ن, alone in a span, reads as she, they (m), they
    (f), unless the lexicon also has that word as a verb of its own (حسن is "was good", not حس + ن) or
    as a noun, which a span holding it reads as a noun, or the word is also an imperfect of another
    person (يأسن: "they (f) despaired" or "he stagnates"), which says nothing without a particle. A
    particle with a pronoun says the same gender as a pronoun (أنهن: أن + هن, not أنه + ن). Checked on
    every such word of the lexicon once (21,556 words, none read otherwise); here on a sample."""
    verb = data.draw(st.sampled_from(sound_verbs))
    ending = data.draw(st.sampled_from(sorted(_PERFECT_ENDINGS)))
    word = verb + ending
    form = ar.verbs.form(word)
    if ar.lexicon.verb(word) or ar.lexicon.noun(word) or ar.stem(word)[0] != word or form and form.imperfect:
        return
    reading = read(ar, word, [0])
    assert reading.label == _PERFECT_ENDINGS[ending] and reading.reason in MARK_REASONS, (word, reading)


@pytest.mark.property
@given(st.data())
def test_a_verb_never_decides_where_the_span_has_a_noun(ar, sound_verbs, agent_nouns, data):
    """A WinoMT span holding a verb (any person) and a masculine agent noun of the lexicon ("قالت
    المدير") is read from the noun: verbs are not heads."""
    verb = data.draw(st.sampled_from(sound_verbs)) + data.draw(st.sampled_from(["", "ت", "وا", "ن"]))
    noun = data.draw(st.sampled_from(agent_nouns))
    reading = read(ar, f"{verb} ال{noun}", [0, 1])
    assert reading.reason not in MARK_REASONS and reading.label == M, (verb, noun, reading)


def test_evidence(ar):
    assert read(ar, "قالت الشيف", [1]).evidence == "قالت الشيف"
    assert read(ar, "قال المدير لموظفة الاستقبال", [3]).evidence == "لموظفة"
    # ساعد "helped" (to Arramooz also "forearm") is the verb that agrees with السباك, not the entity
    assert read(ar, "ساعد السباك", [0, 1]).evidence == "ساعد السباك"
    assert read(ar, "جادل المطور مع المصمم", [0, 1]).evidence == "المطور"
    assert read(ar, "قام عامل البناء", [1, 2]).evidence == "عامل"


def test_registered_and_span_contract(ar):
    assert isinstance(analyser_for("ar"), Arabic)
    check_span_contract(ar, ["قالت", "المديرة"], [1])


def test_missing_lexicon_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "arramooz", None)  # what Python reports for a package not installed
    with pytest.raises(MissingAnalyser, match=r"Arramooz lexicon: pip install arramooz-pysqlite"):
        Arabic()


def test_diacritics_stay_in_their_word(ar):
    """Shadda and tanwīn are marks, not letters: the tokenizer keeps them in the word (they used to
    split it: "المدرّس" -> "المدر", "ّ", "س"), and the analyser reads the word without them."""
    assert tokenize("قابلت شخصاً ما المدرّسة.", "ar") == ["قابلت", "شخصاً", "ما", "المدرّسة", "."]
    assert label_reason(read(ar, "قابلت المدرّسة", [1])) == (F, "noun")
    assert label_reason(read(ar, "قابلت شخصاً ما", [1])) == (N, "indefinite")
