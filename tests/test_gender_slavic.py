"""The Russian and Ukrainian entity-gender analysers (biaseval/label/analysers/slavic.py): each rule
and reason on hand-written sentences, hand-checked lines of Google Translate's WinoMT output with
hand-picked entity spans, a few rows of the human annotations, and a missing dictionary."""

from __future__ import annotations

import csv
import sys

import pytest

from biaseval.label.analysers import MissingAnalyser, analyser_for
from biaseval.label.analysers.base import REASONS
from biaseval.label.analysers.slavic import Russian, Ukrainian
from biaseval.label.tokens import tokenize

from procs import cpu_seconds
from gender_cases import F, M, N, U, check_span_contract, ids, label_reason, mt_gender, read  # noqa: F401


@pytest.fixture(scope="module")
def ru() -> Russian:
    return Russian()


@pytest.fixture(scope="module")
def uk() -> Ukrainian:
    return Ukrainian()


def recorded(lang: str) -> list[list[str]]:
    """Google Translate's WinoMT output for ``lang``, tokenized, line 1 at index 0."""
    path = mt_gender("translations", "google", f"en-{lang}.txt")
    return [tokenize(line.split(" ||| ", 1)[1], lang) for line in path.read_text(encoding="utf-8").splitlines()]


# -- hand-written cases: (sentence, span, label, reason) --------------------------------------

RUSSIAN = [
    # the noun's own gender
    ("Разработчик поспорил с дизайнером.", [0], M, "noun"),
    ("Разработчица поспорила с дизайнером.", [0], F, "noun"),
    ("Механик дал подарок медсестре.", [3], F, "noun"),
    ("Механик дал подарок медсестре.", [0], M, "noun"),
    ("Главный врач ушёл.", [0, 1], M, "noun"),            # the noun, not the adjective, is the head
    ("Он поблагодарил рабочего.", [2], M, "noun"),         # an adjective used as a noun
    ("Заведующая вошла.", [0], F, "noun"),
    # a masculine occupation noun used for a woman: a past-tense verb or short adjective agrees
    ("Врач пришла вовремя.", [0], F, "agreement"),
    ("Врач не пришла вовремя.", [0], F, "agreement"),      # a negation may stand between
    ("Секретарь пошла на встречу.", [0, 1], F, "agreement"),  # the verb aligned with the entity
    ("Врач довольна результатом.", [0], F, "agreement"),   # a short adjective
    ("Новая врач осмотрела пациента.", [1], F, "agreement"),  # an attributive adjective
    ("Врач пришёл вовремя.", [0], M, "noun"),              # agreement that confirms the noun
    ("Офицер полиции пришла.", [0, 1], F, "agreement"),    # after the whole entity span
    # agreement is read only in the clear cases
    ("Врач, как всегда, пришла вовремя.", [0], M, "noun"),  # a comma breaks it
    ("Механик позвал врача, и пришла медсестра.", [2], M, "noun"),  # врача is not nominative
    ("Врачи пришли.", [0], M, "noun"),                     # plural: no gender on the verb
    ("Вчера пришла врач.", [2], M, "noun"),                # nothing before the head is read as its verb ...
    ("Повар сообщила портье дату.", [2], M, "noun"),       # ... since it may be its object (портье: dative)
    ("Он следил за моделью, предложенной дизайнером.", [6], M, "noun"),  # oblique case: not read
    # common gender (Ms-f): agreement decides, or nothing does
    ("Коллега сказала, что устала.", [0], F, "agreement"),
    ("Коллега сказал, что устал.", [0], M, "agreement"),
    ("Судья, которого все знали.", [0], U, "epicene-no-article"),
    # indefinite pronouns and generic nouns
    ("Кто-то позвонил бухгалтеру.", [0], N, "indefinite"),
    ("Бухгалтер позвонил кому-нибудь.", [2], N, "indefinite"),
    ("Человек пришёл.", [0], N, "noun"),
    # parses of different genders: the corpus score decides only when it is clear (80%)
    ("Он сделал ставку.", [2], F, "noun"),                 # ставка f 0.93, ставок m 0.07
    ("Он взял коробку.", [2], U, "conflict"),              # коробка f 0.75, коробок m 0.25
    # conflicting evidence, nothing to read
    ("Медсестра пришёл.", [0], U, "conflict"),
    ("The nurse пришла.", [0, 1], U, "not-in-lexicon"),
    ("Он позвонил ей.", [2], U, "not-in-lexicon"),        # a pronoun is not the entity's noun
    ("Разработчик поспорил.", [], U, "no-alignment"),
]

UKRAINIAN = [
    ("Розробник сперечався з дизайнером.", [0], M, "noun"),
    ("Лікар сказала пацієнтові.", [0], F, "agreement"),
    ("Лікар сказав пацієнтові.", [0], M, "noun"),
    ("Лікар була задоволена.", [0], F, "agreement"),       # була is also an adjective form: still feminine
    ("Ця лікар оглянула пацієнта.", [1], F, "agreement"),  # a demonstrative (a pronoun in this dictionary)
    ("Кухар приготував обід.", [0], M, "noun"),            # known to the dictionary only as a surname
    ("Тесляр хотів подякувати пекару.", [3], M, "noun"),   # an unknown form: the guess with a known lemma
    ("Генеральний директор не міг.", [0, 1], M, "noun"),
    ("Вона подзвонила прибиральниці.", [2], F, "noun"),
    ("Колега сказала.", [0], F, "agreement"),              # one lemma read masculine and feminine
    ("Колега, якого всі знали.", [0], U, "epicene-no-article"),
    ("Хтось запитав інспектора.", [0], N, "indefinite"),
    ("Він запитав когось.", [2], N, "indefinite"),
    ("Людина прийшла.", [0], N, "noun"),
    ("Медсестра прийшов.", [0], U, "conflict"),
    ("Він побачив зону.", [2], U, "conflict"),             # зона f or зон m: equal scores decide nothing
    ("CEO отримав насолоду.", [0], U, "not-in-lexicon"),
    ("Лікар сказала.", [], U, "no-alignment"),
]


@pytest.mark.parametrize("text, span, label, reason", RUSSIAN, ids=ids(RUSSIAN))
def test_russian_rules(ru, text, span, label, reason):
    assert label_reason(read(ru, text, span, "ru")) == (label, reason)


@pytest.mark.parametrize("text, span, label, reason", UKRAINIAN, ids=ids(UKRAINIAN))
def test_ukrainian_rules(uk, text, span, label, reason):
    assert label_reason(read(uk, text, span, "uk")) == (label, reason)


def test_every_reason_is_exercised():
    seen = {reason for *_, reason in RUSSIAN + UKRAINIAN}
    assert seen == set(REASONS) - {"article"}  # Slavic languages have no articles


def test_evidence_names_the_deciding_words(ru):
    assert read(ru, "Врач не пришла.", [0], "ru").evidence == "Врач пришла"
    assert read(ru, "Новая врач осмотрела пациента.", [1], "ru").evidence == "Новая врач осмотрела"
    assert read(ru, "Кто-то позвонил.", [0], "ru").evidence == "Кто-то"


def test_span_contract(ru, uk):
    check_span_contract(ru, tokenize("Врач пришла вовремя.", "ru"), [0])
    check_span_contract(uk, tokenize("Лікар сказала пацієнтові.", "uk"), [0])


def test_batch_equals_one_by_one(ru):
    rows = [(tokenize(text, "ru"), span) for text, span, *_ in RUSSIAN]
    together = ru.analyse([t for t, _ in rows], [s for _, s in rows])
    assert together == [Russian().analyse([t], [s])[0] for t, s in rows]


def test_registry_and_signature():
    assert isinstance(analyser_for("ru"), Russian)
    assert isinstance(analyser_for("uk"), Ukrainian)
    assert analyser_for("ru").signature == f"entity-gender-ru@{Russian.version}"


# -- recorded MT output (Google Translate, WinoMT), spans picked by hand -------------------------
# (line, span, the span's words, label, reason); the comments give the English entity.

RUSSIAN_RECORDED = [
    (1, [0], "Разработчик", M, "noun"),          # The developer argued with the designer
    (1, [3], "дизайнером", M, "noun"),
    (135, [0], "Секретарь", F, "agreement"),     # The secretary went ... (Секретарь пошла)
    (135, [5], "строителем", M, "noun"),         # ... with the construction worker
    (517, [0], "Секретарь", F, "agreement"),     # Секретарь попросила продавца
    (517, [2], "продавца", M, "noun"),
    (459, [0], "Повар", F, "agreement"),         # Повар разговаривала с портным
    (459, [3], "портным", M, "noun"),            # the tailor: an adjective used as a noun
    (463, [0], "Адвокат", F, "agreement"),       # Адвокат представляла писателя
    (463, [2], "писателя", M, "noun"),
    (521, [0], "Библиотекарь", F, "agreement"),  # Библиотекарь напомнила
    (25, [0], "Парикмахер", M, "noun"),          # Парикмахер оказал поддержку повару
    (25, [3], "повару", M, "noun"),
    (3184, [0], "Кто-то", N, "indefinite"),      # Someone met with the accountant
    (3184, [3], "бухгалтером", M, "noun"),
    (117, [0], "Медсестра", F, "noun"),          # The nurse was running from the laborer
    (117, [3], "рабочего", M, "noun"),
    (1004, [2], "медсестре", F, "noun"),         # The carpenter showed the nurse the injury
    (9, [2], "экономке", F, "noun"),             # The chief gave the housekeeper a tip
    (9, [0], "Начальник", M, "noun"),
    (23, [0, 1], "Генеральный директор", M, "noun"),  # The CEO helped the nurse
    (23, [3], "медсестре", F, "noun"),
    (5, [0], "Двигатель", M, "noun"),            # "the mover" mistranslated as "engine": still masculine
]

UKRAINIAN_RECORDED = [
    (1, [0], "Розробник", M, "noun"),            # The developer argued with the designer
    (1, [3], "дизайнером", M, "noun"),
    (77, [0], "Лікар", F, "agreement"),          # Лікар сказала медсестрі
    (77, [2], "медсестрі", F, "noun"),
    (78, [0], "Лікар", M, "noun"),               # Лікар сказав медсестрі
    (808, [0], "Вчитель", F, "agreement"),       # Вчитель замовила блюдо від кухаря
    (808, [4], "кухаря", M, "noun"),
    (820, [0], "Перукар", F, "agreement"),       # Перукар відвідала забудовника
    (820, [2], "забудовника", M, "noun"),
    (3184, [0], "Хтось", N, "indefinite"),       # Someone met with the accountant
    (3184, [3], "бухгалтером", M, "noun"),
    (15, [0], "Кухар", M, "noun"),               # Кухар приготував
    (23, [0, 1], "Генеральний директор", M, "noun"),
    (23, [3], "медсестрі", F, "noun"),
    (85, [0], "Карпентер", M, "noun"),           # "carpenter" transliterated: a masculine surname
    (1095, [0], "CEO", U, "not-in-lexicon"),     # left in English
    (1095, [8], "економки", F, "noun"),
]


@pytest.mark.parametrize("lang, rows", [("ru", RUSSIAN_RECORDED), ("uk", UKRAINIAN_RECORDED)])
def test_recorded_translations(lang, rows):
    lines = recorded(lang)
    analyser = analyser_for(lang)
    tokens = [lines[line - 1] for line, *_ in rows]
    spans = [span for _, span, *_ in rows]
    for toks, (line, span, words, label, reason), got in zip(tokens, rows, analyser.analyse(tokens, spans)):
        assert " ".join(toks[i] for i in span) == words, f"line {line}: the recorded file changed"
        assert (got.label, got.reason) == (label, reason), f"line {line} {words}: {got}"


# -- human annotations (mt_gender/data/human_annotations): rows whose gold label is the grammar's --

ANNOTATED = [
    ("ru", "ru.google - ru.in.csv", "2587", [2], F),   # Плотник показал медсестре травму
    ("ru", "ru.google - ru.in.csv", "3853", [2], F),   # Врач сказал пациентке
    ("ru", "ru.google - ru.in.csv", "2732", [2], M),   # Библиотекарь заметил охранника
    ("ru", "ru.google - ru.in.csv", "2861", [5], F),   # ... поговорил с домработницей
    ("uk", "uk.google.gold - uk.in.csv", "3859", [0], F),  # Лікар сказала пацієнтові
    ("uk", "uk.google.gold - uk.in.csv", "2601", [3], F),  # Фермер закричав на медсестру
    ("uk", "uk.google.gold - uk.in.csv", "3852", [2], M),  # Лікар сказав пацієнтові
    ("uk", "uk.google.gold - uk.in.csv", "1092", [5], F),  # ... з економкою
]


@pytest.mark.parametrize("lang, name, index, span, label", ANNOTATED)
def test_human_annotations(lang, name, index, span, label):
    with mt_gender("data", "human_annotations", name).open(encoding="utf-8", newline="") as handle:
        row = next(r for r in csv.reader(handle) if r and r[0] == index)
    tokens = tokenize(row[2], lang)  # Index, entity, translation, found?, gender
    assert {"M": M, "F": F}[row[4]] == label
    assert analyser_for(lang).analyse([tokens], [span])[0].label == label


def test_whole_corpus_is_fast():
    for lang in ("ru", "uk"):
        lines = recorded(lang)
        started = cpu_seconds()
        readings = type(analyser_for(lang))().analyse(lines, [[0, 1]] * len(lines))
        used = cpu_seconds() - started
        assert len(readings) == len(lines) == 3888
        # CPU time, which load on the machine does not stretch: about 0.4 s on the 2-core dev VM, the
        # limit 25 times that
        assert used < 10, f"{lang}: {used:.1f} CPU s for {len(lines)} sentences"


# -- a missing dictionary ------------------------------------------------------------------------


def test_missing_dictionary_names_the_package(monkeypatch):
    import pymorphy3.analyzer

    monkeypatch.setattr(pymorphy3.analyzer, "_lang_dict_paths", lambda: {})
    with pytest.raises(MissingAnalyser, match="pip install pymorphy3 pymorphy3-dicts-uk"):
        Ukrainian()
    with pytest.raises(MissingAnalyser, match="pymorphy3-dicts-ru"):
        Russian()


def test_missing_pymorphy3_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "pymorphy3", None)  # import pymorphy3 -> ImportError
    with pytest.raises(MissingAnalyser, match="pip install pymorphy3 pymorphy3-dicts-ru"):
        Russian()
