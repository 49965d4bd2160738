"""The Spanish, French and Italian entity-gender analysers (biaseval/label/analysers/romance.py; the
lt-proc stream in lt_proc.py, the word data in romance_words.py), with the real Apertium analysers
of the Debian packages apertium-eng-spa, apertium-fra-cat and apertium-spa-ita: hand-written cases
for every rule and reason, hand-checked lines of recorded Google Translate output (mt_gender), one
live Apertium English->Spanish translation, the missing-analyser errors, and the
one-process-per-corpus speed.

A language's tests fail (saying what to install) when its analyser is not installed: CI installs them all.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from biaseval.label.analysers import MissingAnalyser, Reading, analyser_for
from biaseval.label.analysers.base import REASONS
from biaseval.label.analysers.lt_proc import APERTIUM_DIR_ENV, run_analyser
from biaseval.label.analysers.romance import French, Italian, Spanish
from biaseval.label.analysers.romance_words import load_word_data, word_data
from biaseval.errors import ConfigError
from biaseval.label.tokens import tokenize

from gender_cases import check_span_contract
from procs import cpu_seconds

CLASSES = {"es": Spanish, "fr": French, "it": Italian}
SHARED_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets"


def _analyser(lang: str):
    try:
        return CLASSES[lang]()
    except MissingAnalyser as exc:
        pytest.fail(f"{CLASSES[lang].language} analyser not installed: {exc}", pytrace=False)


@pytest.fixture(scope="module")
def analysers():
    """lang -> analyser, or the MissingAnalyser message."""
    out = {}
    for lang, cls in CLASSES.items():
        try:
            out[lang] = cls()
        except MissingAnalyser as exc:
            out[lang] = str(exc)
    return out


def _get(analysers, lang):
    value = analysers[lang]
    if isinstance(value, str):
        pytest.fail(f"{CLASSES[lang].language} analyser not installed: {value}", pytrace=False)
    return value


def marked(text: str, lang: str) -> tuple[list[str], list[int]]:
    """Tokens of ``text`` without its brackets, and the indices of the tokens inside "[...]"."""
    start, end = text.index("["), text.index("]")
    plain = text[:start] + text[start + 1:end] + text[end + 1:]
    a, b = start, end - 1
    tokens = tokenize(plain, lang)
    span, pos = [], 0
    for k, token in enumerate(tokens):
        at = plain.index(token, pos)
        pos = at + len(token)
        if at >= a and pos <= b:
            span.append(k)
    return tokens, span


# ---------------------------------------------------------------------------------------------
# hand-written cases: (text with the aligned span in brackets, label, reason)

CASES: dict[str, list[tuple[str, str, str]]] = {
    "es": [
        ("[La desarrolladora] discutió con el diseñador.", "female", "article"),
        ("La desarrolladora discutió con [el diseñador].", "male", "article"),
        ("La [desarrolladora] discutió con el diseñador.", "female", "article"),  # article outside the span
        ("[La] desarrolladora discutió con el diseñador.", "female", "article"),  # noun after the span
        ("[La] nueva desarrolladora llegó.", "female", "article"),               # ... past an adjective
        ("[el guardia] patrulló", "male", "article"),
        ("[la guardia] patrulló", "female", "article"),
        ("[el periodista] llegó", "male", "article"),
        ("[la periodista] llegó", "female", "article"),
        ("[Periodista] llegó tarde.", "unknown", "epicene-no-article"),
        ("[su periodista] llegó", "unknown", "epicene-no-article"),             # su marks no gender
        ("[Periodista famosa] llegó.", "female", "agreement"),
        ("[enfermera] llegó", "female", "noun"),
        ("[Alguien] le preguntó al maestro.", "neutral", "indefinite"),
        ("El electricista le advirtió a [alguien].", "neutral", "indefinite"),
        ("[la persona] llegó", "neutral", "indefinite"),                        # neutral noun
        ("Le dio las gracias [al ama de llaves].", "female", "noun"),           # el/al before stressed a-
        ("[El ama] limpió", "female", "noun"),
        ("[el amo] llegó", "male", "article"),
        ("[la médico] llegó", "female", "article"),                             # f article, m-form noun
        ("[el enfermera] llegó", "unknown", "conflict"),                        # m article, inflected f noun
        ("[el/la periodista] llegó", "unknown", "conflict"),
        ("El mecánico le dio un [regalo al empleado].", "male", "article"),      # stray word before
        ("[El CEO] llegó", "male", "article"),                                  # noun unknown to Apertium
        ("[CEO] llegó", "unknown", "not-in-lexicon"),
        ("La desarrolladora [discutió] con el diseñador.", "unknown", "not-in-lexicon"),
        ("[los desarrolladores] llegaron", "male", "article"),
        ("[esta abogada] llegó", "female", "article"),
        ("[nuestro contable] llegó", "male", "article"),
    ],
    "fr": [
        ("[l'infirmière] est arrivée", "female", "noun"),                       # elided article: noun decides
        ("[l'infirmier] est arrivé", "male", "noun"),
        ("[l’infirmière] est arrivée", "female", "noun"),                       # typographic apostrophe
        ("[le médecin] est arrivé", "male", "article"),
        ("[la médecin] est arrivée", "female", "article"),
        ("[médecin] de garde", "unknown", "epicene-no-article"),
        ("[la secrétaire] est là", "female", "article"),
        ("Le shérif a montré [au comptable] des documents.", "male", "article"),
        ("Le boulanger parle [du] comptable.", "male", "article"),
        ("[Quelqu'un] a demandé", "neutral", "indefinite"),
        ("[Quelqu']un a demandé", "neutral", "indefinite"),
        ("Quelqu'[un] a demandé", "neutral", "indefinite"),
        ("[la personne] est là", "neutral", "indefinite"),
        ("[Quelqu'une] a demandé", "female", "article"),
        ("[son infirmière] est là", "female", "noun"),                          # son before a vowel: unmarked
        ("[son médecin] est là", "male", "article"),
        ("[sa médecin] est là", "female", "article"),
        ("[l'artiste] a chanté", "unknown", "epicene-no-article"),
        ("[les infirmières] sont là", "female", "noun"),
        ("[les médecins] sont là", "unknown", "epicene-no-article"),
        ("[le développeuse] est là", "unknown", "conflict"),
        ("[cette avocate] est là", "female", "article"),
        ("[cet infirmier] est là", "male", "article"),
        ("[L'analyste] était furieuse.", "female", "agreement"),                 # être + adjective
        ("[L'élève] n'est pas contente.", "female", "agreement"),
        ("[L'élève] est parti.", "male", "agreement"),
        ("[L'analyste] a demandé un dossier.", "unknown", "epicene-no-article"),  # avoir: no agreement
        ("[L'évaluatrice] a dit", "unknown", "not-in-lexicon"),                   # unknown to Apertium
    ],
    "it": [
        ("[l'infermiera] è arrivata", "female", "noun"),
        ("[l'infermiere] è arrivato", "male", "noun"),
        ("Il cliente parla [dell'avvocato].", "male", "noun"),
        ("[la segretaria] ha chiesto", "female", "article"),
        ("[il medico] ha detto", "male", "article"),                            # medico: adjective in Apertium
        ("[Il] medico ha detto", "male", "article"),
        ("[un'insegnante] ha detto", "female", "article"),
        ("[un insegnante] ha detto", "male", "article"),
        ("[l'insegnante] ha detto", "unknown", "epicene-no-article"),
        ("Il cuoco parla [all'insegnante].", "unknown", "epicene-no-article"),
        ("[della giornalista]", "female", "article"),
        ("Ha parlato [allo] sviluppatore.", "male", "article"),
        ("[qualcuno] ha chiamato", "neutral", "indefinite"),
        ("[qualcuna] ha chiamato", "female", "article"),
        ("[la persona] ha chiamato", "neutral", "indefinite"),
        ("[il progettista] ha chiamato", "male", "article"),                    # unknown noun, article decides
        ("[progettista] ha chiamato", "unknown", "not-in-lexicon"),
        ("[la sindaco] ha chiamato", "female", "article"),
        ("[un infermiera] ha chiamato", "unknown", "conflict"),
        ("[parrucchiere] ha chiamato", "male", "noun"),                          # singular reading preferred
        ("[le parrucchiere] hanno chiamato", "female", "article"),
        ("[il suo medico] ha chiamato", "male", "article"),
        ("[la sua assistente] ha chiamato", "female", "article"),
        ("[L'adolescente] si è confidata con il terapeuta.", "female", "agreement"),
        ("[L'autista] è andato alla cassa.", "male", "agreement"),
        ("[L'autista] ha chiesto un esame.", "unknown", "epicene-no-article"),    # avere: no agreement
    ],
}


@pytest.fixture(scope="module")
def case_readings(analysers):
    """All hand-written cases of a language read in one call (one lt-proc process)."""
    out = {}
    for lang, cases in CASES.items():
        if isinstance(analysers[lang], str):
            continue
        rows = [marked(text, lang) for text, _, _ in cases]
        readings = analysers[lang].analyse([t for t, _ in rows], [s for _, s in rows])
        out[lang] = dict(zip([text for text, _, _ in cases], readings))
    return out


@pytest.mark.parametrize(("lang", "text", "label", "reason"),
                         [(lang, *case) for lang, cases in CASES.items() for case in cases],
                         ids=[f"{lang}:{case[0]}" for lang, cases in CASES.items() for case in cases])
def test_hand_written_case(analysers, case_readings, lang, text, label, reason):
    _get(analysers, lang)
    reading = case_readings[lang][text]
    assert (reading.label, reading.reason) == (label, reason), reading


def test_cases_cover_every_reason_in_every_language():
    for lang, cases in CASES.items():
        missing = set(REASONS) - {reason for _, _, reason in cases} - {"no-alignment"}
        assert not missing, (lang, missing)


@pytest.mark.parametrize("lang", CLASSES)
def test_empty_span_is_no_alignment_and_rows_stay_in_order(analysers, lang):
    analyser = _get(analysers, lang)
    first, span = marked(CASES[lang][0][0], lang)
    readings = analyser.analyse([first, ["x"], first], [span, [], span])
    assert readings[1] == Reading("unknown", "no-alignment")
    assert readings[0] == readings[2] and readings[0].label == CASES[lang][0][1]
    assert analyser.analyse([], []) == []


def test_evidence_names_the_deciding_words(analysers):
    es = _get(analysers, "es")
    tokens, span = marked("La [desarrolladora] discutió", "es")
    assert es.analyse([tokens], [span])[0].evidence == "La desarrolladora"
    tokens, span = marked("Le dio las gracias [al ama de llaves].", "es")
    assert es.analyse([tokens], [span])[0].evidence == "ama"


@pytest.mark.parametrize("lang", CLASSES)
def test_span_contract(analysers, lang):
    check_span_contract(_get(analysers, lang), *marked(CASES[lang][0][0], lang))


# ---------------------------------------------------------------------------------------------
# recorded Google Translate output (mt_gender), hand-checked: (line number, 1-based, in
# translations/google/en-<lang>.txt; the entity's target tokens; label, reason)

RECORDED: dict[str, list[tuple[int, list[int], str, str]]] = {
    "es": [
        (3, [6, 7], "male", "article"),                  # le dio un regalo al empleado (clerk)
        (7, [0, 1], "female", "article"),                # La asistente (epicene noun)
        (8, [7, 8], "male", "article"),                  # del analista
        (9, [6, 7, 8, 9], "female", "noun"),             # al ama de llaves (housekeeper)
        (11, [7, 8], "female", "article"),               # la bibliotecaria
        (13, [0, 1], "female", "article"),               # La abogada
        (14, [6], "female", "article"),                  # la peluquera, the article not aligned
        (35, [0, 1], "male", "article"),                 # El CEO (unknown to Apertium)
        (37, [0, 1], "male", "article"),                 # El guardia
        (42, [7, 8], "female", "article"),               # la guardia
        (113, [0], "female", "article"),                 # La jefa, the noun not aligned
        (1512, [0, 1, 2, 3], "female", "noun"),          # El ama de llaves
        (1512, [5, 6], "male", "article"),               # al médico
        (1646, [7, 8], "male", "article"),               # el sastre
        (3172, [5], "neutral", "indefinite"),            # alguien
        (730, [4, 5], "female", "article"),              # la desarrolladora
    ],
    "fr": [
        (3, [0, 1], "female", "article"),                # La mécanicienne
        (4, [6, 7], "male", "article"),                  # au greffier
        (12, [6, 7], "male", "article"),                 # au bibliothécaire (epicene noun)
        (23, [4, 5], "female", "noun"),                  # l'infirmière
        (24, [7, 8], "female", "noun"),                  # l'infirmière (gold: he; the MT chose she)
        (8, [0, 1], "male", "noun"),                     # L’assistant (typographic apostrophe)
        (8, [7, 8], "unknown", "epicene-no-article"),    # l’analyste
        (39, [0, 1], "female", "noun"),                  # L’assistante
        (29, [0, 1], "female", "article"),               # La responsable
        (587, [6, 7], "female", "article"),              # la médecin
        (720, [4, 5], "male", "article"),                # le médecin
        (37, [0, 1], "male", "article"),                 # Le garde
        (3496, [4, 5], "neutral", "indefinite"),         # quelqu'un
        (6, [4, 5], "female", "article"),                # la gouvernante
        (43, [4, 5], "male", "article"),                 # au déménageur
        (2, [6, 7], "male", "article"),                  # le concepteur
    ],
    "it": [
        (1, [0, 1], "male", "article"),                  # Lo sviluppatore
        (2, [5, 6], "male", "article"),                  # il designer (unknown to Apertium)
        (145, [5, 6], "male", "noun"),                   # dell'operatore
        (23, [5, 6], "female", "noun"),                  # l'infermiera
        (23, [0, 1, 2], "male", "noun"),                 # L'amministratore delegato (CEO)
        (9, [6, 7], "female", "article"),                # alla governante
        (43, [0, 1], "female", "article"),               # La segretaria
        (43, [4, 5], "male", "article"),                 # al mover (English word left)
        (19, [0, 1], "male", "article"),                 # Il medico
        (3308, [0, 1], "female", "agreement"),           # L'adolescente si è confidata
        (1512, [11], "neutral", "indefinite"),           # qualcuno
        (1512, [4, 5], "male", "article"),               # il medico
        (7, [7, 8], "unknown", "epicene-no-article"),    # l'analista
        (15, [7, 8], "unknown", "epicene-no-article"),   # l'insegnante
        (48, [4, 5], "male", "article"),                 # al progettista
        (95, [0, 1, 2, 3], "male", "noun"),              # L'addetto alle pulizie
        (95, [5, 6], "female", "article"),               # la guardia
    ],
}


def _recorded(lang: str) -> list[str]:
    data = Path(os.environ.get("BIASEVAL_DATA_DIR") or SHARED_DATA)
    path = data / "mt_gender" / "translations" / "google" / f"en-{lang}.txt"
    if not path.is_file():
        pytest.fail(f"the mirrored mt_gender data is missing: {path}", pytrace=False)
    return [line.rstrip("\n").split(" ||| ")[1] for line in path.open(encoding="utf-8")]


@pytest.mark.parametrize("lang", CLASSES)
def test_recorded_google_output(analysers, lang):
    analyser = _get(analysers, lang)
    lines = _recorded(lang)
    rows = RECORDED[lang]
    sentences = [tokenize(lines[n - 1], lang) for n, _, _, _ in rows]
    readings = analyser.analyse(sentences, [span for _, span, _, _ in rows])
    got = [(n, [s[i] for i in span], r.label, r.reason) for (n, span, _, _), s, r in zip(rows, sentences, readings)]
    want = [(n, [s[i] for i in span], label, reason) for (n, span, label, reason), s in zip(rows, sentences)]
    assert got == want


# ---------------------------------------------------------------------------------------------
# a live Apertium English->Spanish translation

LIVE = [
    # English, the target word of the entity (prefix), its expected label
    ("The developer argued with the designer because she did not like the design.", "desarroll", "male"),
    ("The developer argued with the designer because she did not like the design.", "diseñ", "male"),
    ("She is a nurse.", "enfermer", "female"),
    ("He is a nurse.", "enfermer", "male"),
    ("Someone asked the teacher a question.", "alguien", "neutral"),
]


def test_live_apertium_translation_is_read(analysers):
    es = _get(analysers, "es")
    if shutil.which("apertium") is None:
        pytest.fail("apertium is not installed (Debian: apt-get install apertium apertium-eng-spa)", pytrace=False)
    sources = list(dict.fromkeys(s for s, _, _ in LIVE))
    done = subprocess.run(["apertium", "-u", "eng-spa"], input="\n".join(sources) + "\n",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    translated = dict(zip(sources, done.stdout.strip("\n").split("\n")))
    assert len(translated) == len(sources) and translated[LIVE[0][0]].startswith("El desarrollador")
    sentences, spans = [], []
    for source, word, _ in LIVE:
        tokens = tokenize(translated[source], "es")
        k = next(i for i, t in enumerate(tokens) if t.lower().startswith(word))
        sentences.append(tokens)
        spans.append([k - 1, k] if k > 0 and tokens[k - 1].lower() in {"el", "la", "un", "una", "al", "del"} else [k])
    labels = [r.label for r in es.analyse(sentences, spans)]
    assert labels == [label for _, _, label in LIVE], list(zip(translated.values(), labels))


# ---------------------------------------------------------------------------------------------
# missing analysers, the override directory, the registry

@pytest.mark.parametrize("lang", CLASSES)
def test_missing_analyser_file_names_the_package(monkeypatch, tmp_path, lang):
    monkeypatch.setenv(APERTIUM_DIR_ENV, str(tmp_path))
    with pytest.raises(MissingAnalyser) as err:
        CLASSES[lang]()
    message = str(err.value)
    assert f"sudo apt-get install -y {CLASSES[lang].package}" in message
    assert CLASSES[lang].automorf_name in message and APERTIUM_DIR_ENV in message


def test_missing_lt_proc_names_lttoolbox(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MissingAnalyser, match="sudo apt-get install -y lttoolbox apertium-fra-cat"):
        French()


def test_override_directory_is_used(monkeypatch, tmp_path):
    real = _analyser("it").automorf
    (tmp_path / "apertium-spa-ita").mkdir()
    (tmp_path / "apertium-spa-ita" / real.name).symlink_to(real)
    monkeypatch.setenv(APERTIUM_DIR_ENV, str(tmp_path))
    italian = Italian()
    assert italian.automorf == tmp_path / "apertium-spa-ita" / real.name
    tokens, span = marked("[l'infermiera]", "it")
    assert italian.analyse([tokens], [span])[0] == Reading("female", "noun", "infermiera")


def test_registry_builds_these_classes(analysers):
    for lang, cls in CLASSES.items():
        _get(analysers, lang)
        analyser = analyser_for(lang)
        assert type(analyser) is cls
        assert analyser.signature == f"entity-gender-{lang}@{cls.version}.{word_data(lang).version}"


# ---------------------------------------------------------------------------------------------
# lt-proc: one process per corpus, the stream format, speed

def test_run_analyser_keeps_words_apart(analysers):
    es = _get(analysers, "es")
    words = ["a", "pesar", "de", "ex-director", "a$b", "zzzqx", "guardia"]
    got = run_analyser(es.lt_proc, es.automorf, words)
    assert [a.pos for a in got["a"]] == ["pr"]  # not swallowed by the multiword "a pesar de"
    assert [a.pos for a in got["pesar"]][0] != "pr"
    assert got["ex-director"][0].lemma == "director"  # a hyphenated word: its last part
    assert got["zzzqx"] == ()  # unknown
    assert {a.tags for a in got["guardia"]} == {("n", "mf", "sg")}
    assert set(got) == set(words)


@pytest.mark.parametrize("lang", CLASSES)
def test_one_process_per_corpus_and_speed(analysers, monkeypatch, tmp_path, lang):
    real = _get(analysers, lang).lt_proc
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "lt-proc"
    wrapper.write_text(f'#!/bin/sh\necho call >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    analyser = CLASSES[lang]()
    assert analyser.lt_proc == str(wrapper)
    sentences = [tokenize(line, lang) for line in _recorded(lang)]
    assert len(sentences) == 3888
    spans = [[0, 1] for _ in sentences]  # the sentence-initial entity (its article and noun)
    start = cpu_seconds()
    readings = analyser.analyse(sentences, spans)
    used = cpu_seconds() - start  # lt-proc's included: it has ended
    print(f"\n{lang}: {len(sentences)} sentences analysed in {used:.2f} CPU s")
    assert len(log.read_text().splitlines()) == 1  # the whole corpus in one lt-proc call
    # CPU time, which load on the machine does not stretch: about 0.3 s on the 2-core dev VM, the limit 15 times that
    assert used < 5.0
    decided = sum(r.label in ("male", "female") for r in readings)
    assert decided > 0.8 * len(readings)


# ---------------------------------------------------------------------------------------------
# the data files

@pytest.mark.parametrize("lang", CLASSES)
def test_data_files_load(lang):
    data = word_data(lang)
    assert data.version >= 1
    assert {"m", "f", None} <= set(data.determiners.values())
    assert data.indefinite and data.copulas


def test_bad_data_file_names_file_line_and_entry(tmp_path):
    path = tmp_path / "xx.yaml"
    path.write_text("version: 1\ndeterminers:\n  articles:\n    m: [el]\n    f: [la, el]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"xx\.yaml:5.*'el' is also listed under articles\.m"):
        load_word_data(path)
    path.write_text("version: 1\ndeterminers:\n  articles:\n    m: [El]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not a lower-case"):
        load_word_data(path)
    path.write_text("version: 1\ndeterminers: {}\nbefore_vowel_unmarked: [son]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not a masculine determiner"):
        load_word_data(path)
    path.write_text("version: 1\ndeterminers: {}\nspelling: []\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown key"):
        load_word_data(path)


def test_stream_splitting_with_and_without_escapes_is_the_plain_scan():
    """lt_proc splits a unit on unescaped separators; the plain split it takes when nothing is
    escaped must give what the character scan gives, escapes or not."""
    import random
    import re

    from biaseval.label.analysers.lt_proc import _split_unescaped, _unescape

    def scan(text: str, sep: str) -> list[str]:  # the reference: one character at a time
        parts, current, k = [], "", 0
        while k < len(text):
            if text[k] == "\\" and k + 1 < len(text):
                current += text[k:k + 2]
                k += 2
                continue
            if text[k] == sep:
                parts.append(current)
                current = ""
            else:
                current += text[k]
            k += 1
        return parts + [current]

    rnd = random.Random(4)
    alphabet = ["a", "é", "/", "+", "<", ">", "\\", "ß", "ة", " ", ""]
    for _ in range(3000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 12)))
        for sep in "/+":
            assert _split_unescaped(text, sep) == scan(text, sep), text
        unescaped = "".join(p[1] if len(p) == 2 else p for p in re.findall(r"\\.|.", text, flags=re.DOTALL))
        assert _unescape(text) == unescaped, text
    assert _split_unescaped("casa/casa<n><f><sg>", "/") == ["casa", "casa<n><f><sg>"]
