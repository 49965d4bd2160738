"""Word lists for the embedding-bias study: single English words, each in one gender class,
``neutral``, ``feminine`` or ``masculine``.

The default list (``default_word_list()``)
-------------------------------------------

It is built from the lists Bolukbasi et al. (2016) published with *debiaswe*, read through the
dataset registry (``resolve("debiaswe")``, checksum-verified):

    data/definitional_pairs.json    10 [feminine, masculine] pairs
    data/equalize_pairs.json        52 pairs, one word of each gender, in no fixed order
    data/gender_specific_seed.json  218 hand-picked gender-specific words (no direction given)
    data/gender_specific_full.json  1,441 gender-specific words grown from the seed by a classifier
                                    (no direction given; it holds names, typos and noise as well)
    data/professions.json           320 [word, definitional score, stereotypical score] rows;
                                    definitional > 0 means male by definition (actor 0.8),
                                    < 0 female (actress -1.0), 0 not gendered

Construction, in order:

1. Every entry is lower-cased; entries that are not a single word of letters (an underscore, a
   space, a digit, a hyphen, an apostrophe, a dot) are dropped; duplicates merge, and ``origin``
   names every list the word came from, joined by ``+`` in the order above (file stems, e.g.
   ``equalize_pairs+gender_specific_seed``).
2. Candidates: the words of the gender-specific lists and of both kinds of pairs are candidates
   for feminine/masculine; a profession is one when its definitional score is non-zero.
3. Each candidate collects *votes* for a direction from independent evidence:

   - the definitional pairs: the first word is feminine, the second masculine;
   - the professions: the sign of the definitional score, but only where its magnitude is at least
     ``min_definitional`` (default 0.5: most raters agreed the word is gendered by definition).
     Weaker scores (0.1 for "surgeon", "president", "architect"; -0.1 for "nurse") are read as
     rater noise, not as a direction, so those words get no vote from their score;
   - two spelling rules: ``-woman``/``-women`` is feminine; ``-ess``/``-esses`` is feminine
     except ``-ness``/``-less`` (actress, goddess, heiress, but not highness or restless);
   - the explicit lists below (``_FEMININE``, ``_MASCULINE``): words whose dictionary sense
     names a sex (kinship terms, titles, pronouns, animal sexes, body and biology words the
     debiaswe lists count as gender-specific);
   - the equalize pairs, last: a pair holds one word of each gender, so when one word has a
     direction and the other none, the other gets the opposite one; when both have one they must
     differ.

   A candidate with votes that all agree gets that class; votes that disagree exclude it
   (``conflict``); no vote excludes it (``no direction``). Nothing is guessed from how a word
   looks beyond the two spelling rules.
4. Professions with definitional score exactly 0 are ``neutral`` (also when the classifier-grown
   list counts them as gender-specific, as it does "teenager": the raters' score is the direct
   evidence).
5. The result is sorted by word.

With the pinned debiaswe commit and the defaults the list has 496 words: 125 neutral, 192
feminine, 179 masculine. 492 candidate words are excluded (``default_word_list_exclusions()``
lists each with its reason):

- 132 professions with a weak definitional score (0 < |score| < 0.5) and no other evidence
  (``weak definitional score``), among them "nurse" (-0.1), "secretary" (-0.2), "surgeon" (0.1),
  "president" (0.1), "soldier" (0.3); "maid" (-0.4) and "headmaster" (0.4) are kept, from the
  explicit lists;
- 360 words of the gender-specific lists with no evidence of a direction (``no direction``):
  names and surnames ("adesida", "baratheon"), typos and run-together words ("daugher",
  "borthers", "thathe"), noise ("aai", "restless", "slacks", a word in Chinese script), and words
  that do not name a sex ("cousin", "twins", "couple", "deer", "lion", "heir", "feminist",
  "gynecologist");
- none with disagreeing evidence (``conflict``): every definitional pair, every strong score and
  every equalize pair agrees with the explicit lists.

The neutral class is the raters' zero-score professions as they are, including a few entries
that are not professions ("character", "citizen", "acquaintance", "confesses").
``tests/test_wordlists.py`` prints the counts on every run.

User word lists (``load_word_list(path)``)
------------------------------------------

``.txt``: one word per line, optionally ``word<TAB>class``; blank lines and lines starting with
``#`` are skipped. ``.csv``: a header naming ``word`` and optionally ``gender_class``. Words are
stripped and lower-cased; a missing class is ``neutral``; a repeated word (after lower-casing)
keeps its first line. A word is letters, hyphens and apostrophes only (so "ex-wife" and "o'clock"
are words, "police officer" and "e-mail2" are not). Every error is a ``ConfigError`` naming the
file and line.
"""

from __future__ import annotations

import csv
import io
import json
import re
from functools import cache
from pathlib import Path

import polars as pl

from biaseval.errors import ConfigError

CLASSES = ("neutral", "feminine", "masculine")

# debiaswe files, in the order ``origin`` lists them.
SOURCES = (
    "definitional_pairs",
    "equalize_pairs",
    "gender_specific_seed",
    "gender_specific_full",
    "professions",
)

DEFAULT_MIN_DEFINITIONAL = 0.5

# Words whose ordinary dictionary sense names a female (person, animal) or something only women
# or female animals have or are associated with by definition. Only words that occur in the
# debiaswe lists matter; the lists are checked against them in the test.
_FEMININE = frozenset("""
    actress actresses aunt auntie aunties aunts aunty authoress ballerina banshees belles bride
    brides broads choirgirl coeds concubine convent convents countess countrywomen courtesans crone
    dame dames damsel damsels daughter daughters diva dowries dowry dreamgirl estrogen female
    females feminism fiancee fiancée fillies filly frontierswoman gal galpals gals gentlewomen giantess
    girl girlfriend girlfriends girlies girls goddess goddesses governess gramma grandam grandaunt
    granddaughter granddaughters grandma grandmas grandmom grandmother grandmothers grandmum grannie
    granny gurls gynaecology gynecological hags heiress hen hens her heroine heroines hers herself
    hostess housewife housewives hussy jewess ladies lady landlady lass lasses lassies lesbian
    lesbians lioness ma madame maid maiden maidens maids maidservant mam mama mamas mamma mammies
    mammy mare mares maternal maternity matriarch matron menopause milkmaid missis missus mistress
    mom momma mommas mommy moms mother motherhood mothering mothers mum nana nanna niece nieces
    noblewoman nun nuns nymphet nymphets obstetrics princess princesses queen queens salesgirl
    saleswomen schoolgirl scotswoman she shepherdess sis sista sistah sistahs sistas sister
    sisterhood sisterly sisters sorority spinsters spokeswoman stepdaughter stepdaughters
    stepmother stepsister tomboys trollop uterus vagina vixen waitress washerwoman widow widows
    wife wifely wifey wimmin witch witches wives woman womanhood womb women womenfolk
    workingwoman yenta
""".split())

_MASCULINE = frozenset("""
    bachelor bachelors barbershop baritone basso beard beards beau beaus bloke blokes boy boyfriend
    boyfriends boyhood boys boyz brethren bro bros brothas brother brotherhood brothers bull bulls
    businessman businessmen chairman chap codger colt colts congressman councilman councilmen
    countryman countrymen czar dad daddies daddy dads deliveryman dude dudes earl divorcé father fathered
    fatherhood fathering fathers fella fellas fiance fraternal fraternities fraternity fiancé gelding
    gentleman gentlemen godfather godfathers gramps grandad grandads granddad granddaddy
    grandfather grandfathers grandnephew grandpa grandsire grandson grandsons guy guys handyman
    he headmaster herdsman him himself his homeboy horsemen hubby hunk husband husbands king kings
    knight knights lad ladykiller lads lothario macho male males man manhood manliness manly
    masculinity men menfolk monastery monk monks nephew nephews pa papa papas pappa pater paternal
    paternity patriarch patriarchs penile penis prince princes prostate salesman salesmen
    schoolboy semen sir son sons sperm spokesman spokesmen stallion statesman stepdad stepfather
    stepson stepsons strongman stud studs suitor suitors swains testosterone toyboys uncle uncles
    viagra virile virility widower womanizer
""".split())

_WORD_RE = re.compile(r"[^\W\d_]+")  # letters only (any script), for the default list
_USER_WORD_RE = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")  # letters, inner hyphens/apostrophes


def _rule_vote(word: str) -> str | None:
    if word.endswith(("woman", "women")):
        return "feminine"
    if word.endswith(("ess", "esses")) and not word.endswith(("ness", "less", "nesses", "lesses")):
        return "feminine"
    return None


def _single(word: str) -> str | None:
    word = word.strip().lower()
    return word if _WORD_RE.fullmatch(word) else None


def _load_debiaswe() -> dict[str, object]:
    from biaseval.data.datasets import resolve

    data = resolve("debiaswe")
    out: dict[str, object] = {}
    for name in SOURCES:
        path = data.path(f"data/{name}.json")
        with open(path, encoding="utf-8") as fh:
            out[name] = json.load(fh)
    return out


def _build(min_definitional: float) -> tuple[pl.DataFrame, pl.DataFrame]:
    if not 0 < min_definitional <= 1:
        raise ValueError(f"min_definitional must be in (0, 1], got {min_definitional}")
    raw = _load_debiaswe()
    origins: dict[str, list[str]] = {}
    votes: dict[str, dict[str, set[str]]] = {}  # word -> class -> evidence names
    candidates: set[str] = set()
    neutral: set[str] = set()

    def seen(word: str, source: str) -> None:
        sources = origins.setdefault(word, [])
        if source not in sources:
            sources.append(source)

    def vote(word: str, cls: str, evidence: str) -> None:
        votes.setdefault(word, {}).setdefault(cls, set()).add(evidence)

    for female, male in raw["definitional_pairs"]:
        for word, cls in ((_single(female), "feminine"), (_single(male), "masculine")):
            if word:
                seen(word, "definitional_pairs")
                candidates.add(word)
                vote(word, cls, "definitional pair")
    equalize: list[tuple[str, str]] = []
    for a, b in raw["equalize_pairs"]:
        a, b = _single(a), _single(b)
        for word in (a, b):
            if word:
                seen(word, "equalize_pairs")
                candidates.add(word)
        if a and b:
            equalize.append((a, b))
    for name in ("gender_specific_seed", "gender_specific_full"):
        for entry in raw[name]:
            word = _single(entry)
            if word:
                seen(word, name)
                candidates.add(word)
    scores: dict[str, float] = {}
    for entry in raw["professions"]:
        word, definitional = _single(entry[0]), float(entry[1])
        if not word:
            continue
        seen(word, "professions")
        scores[word] = definitional
        if definitional == 0:
            neutral.add(word)
        else:
            candidates.add(word)
            if abs(definitional) >= min_definitional - 1e-9:
                vote(word, "masculine" if definitional > 0 else "feminine", "definitional score")
    candidates -= neutral

    for word in candidates:
        by_rule = _rule_vote(word)
        if by_rule:
            vote(word, by_rule, "spelling rule")
        if word in _FEMININE:
            vote(word, "feminine", "explicit list")
        if word in _MASCULINE:
            vote(word, "masculine", "explicit list")

    def decided(word: str) -> str | None:
        classes = votes.get(word, {})
        return next(iter(classes)) if len(classes) == 1 else None

    opposite = {"feminine": "masculine", "masculine": "feminine"}
    changed = True
    while changed:  # propagate through chains of pairs until nothing changes
        changed = False
        for a, b in equalize:
            for known, other in ((a, b), (b, a)):
                cls = decided(known)
                if cls and other in candidates and not votes.get(other):
                    vote(other, opposite[cls], "equalize pair")
                    changed = True
    for a, b in equalize:
        ca, cb = decided(a), decided(b)
        if ca and cb and ca == cb:  # a pair of one gender: the pair contradicts the other evidence
            for word in (a, b):
                vote(word, opposite[ca], "equalize pair")

    rows, excluded = [], []
    for word in sorted(neutral):
        rows.append((word, "neutral", "+".join(origins[word])))
    for word in sorted(candidates):
        classes = votes.get(word, {})
        origin = "+".join(origins[word])
        if len(classes) == 1:
            rows.append((word, next(iter(classes)), origin))
        elif classes:
            detail = "; ".join(f"{c}: {', '.join(sorted(e))}" for c, e in sorted(classes.items()))
            excluded.append((word, origin, "conflict", detail))
        elif word in scores:
            excluded.append((word, origin, "weak definitional score", f"definitional score {scores[word]}"))
        else:
            excluded.append((word, origin, "no direction", ""))
    order = {s: i for i, s in enumerate(SOURCES)}
    assert all(o.split("+") == sorted(o.split("+"), key=order.get) for _, _, o in rows)
    table = pl.DataFrame(rows, schema={"word": pl.String, "gender_class": pl.String, "origin": pl.String},
                         orient="row").sort("word")
    dropped = pl.DataFrame(excluded, schema={"word": pl.String, "origin": pl.String, "reason": pl.String,
                                             "detail": pl.String}, orient="row").sort("word")
    return table, dropped


@cache
def _cached(min_definitional: float) -> tuple[pl.DataFrame, pl.DataFrame]:
    return _build(min_definitional)


def default_word_list(min_definitional: float = DEFAULT_MIN_DEFINITIONAL) -> pl.DataFrame:
    """The Bolukbasi et al. (2016) words in three gender classes (see the module docstring):
    columns ``word``, ``gender_class``, ``origin``, sorted by word. Raises DataError when the
    debiaswe dataset is missing or corrupt."""
    return _cached(float(min_definitional))[0].clone()


def default_word_list_exclusions(min_definitional: float = DEFAULT_MIN_DEFINITIONAL) -> pl.DataFrame:
    """The candidate words the default list leaves out: ``word``, ``origin``, ``reason``
    (``no direction``, ``weak definitional score``, ``conflict``) and ``detail``."""
    return _cached(float(min_definitional))[1].clone()


# ---------------------------------------------------------------------------------------------
# user word lists


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read word list ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: word list is not valid UTF-8") from None


def _check_word(path: Path, line: int, raw: str) -> str:
    word = raw.strip().lower()
    if not word:
        raise ConfigError(f"{path}:{line}: empty word")
    if any(ch.isspace() for ch in word):
        raise ConfigError(f"{path}:{line}: {raw.strip()!r} is a phrase; a single word is required")
    if not _USER_WORD_RE.fullmatch(word):
        raise ConfigError(
            f"{path}:{line}: {raw.strip()!r} is not a single word (letters, with inner hyphens or "
            f"apostrophes only)"
        )
    return word.replace("’", "'")


def _check_class(path: Path, line: int, raw: str | None) -> str:
    cls = (raw or "").strip().lower()
    if not cls:
        return "neutral"
    if cls not in CLASSES:
        raise ConfigError(f"{path}:{line}: gender class {raw.strip()!r} is not one of {', '.join(CLASSES)}")
    return cls


def _txt_rows(path: Path, text: str) -> list[tuple[int, str, str]]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t")
        parts = line.split()
        if len(fields) == 1 and len(parts) == 2 and parts[1].lower() in CLASSES:
            raise ConfigError(f"{path}:{number}: {line.strip()!r}: separate the word and its class with a TAB")
        if len(fields) > 2:
            raise ConfigError(f"{path}:{number}: expected 'word' or 'word<TAB>class', found {len(fields)} fields")
        word = _check_word(path, number, fields[0])
        cls = _check_class(path, number, fields[1] if len(fields) == 2 else None)
        rows.append((number, word, cls))
    return rows


def _csv_rows(path: Path, text: str) -> list[tuple[int, str, str]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    rows = []
    try:
        for record in reader:
            number = reader.line_num
            if header is None:
                if not any(cell.strip() for cell in record):
                    continue
                header = [cell.strip().lower() for cell in record]
                if "word" not in header:
                    raise ConfigError(f"{path}:{number}: the header has no 'word' column (has: {', '.join(header)})")
                for name in ("word", "gender_class"):
                    if header.count(name) > 1:
                        raise ConfigError(f"{path}:{number}: the header names {name!r} twice")
                continue
            if not any(cell.strip() for cell in record):
                continue
            if len(record) > len(header):
                raise ConfigError(f"{path}:{number}: {len(record)} fields, the header has {len(header)}")
            cells = dict(zip(header, record))
            word = _check_word(path, number, cells.get("word", ""))
            cls = _check_class(path, number, cells.get("gender_class"))
            rows.append((number, word, cls))
    except csv.Error as exc:
        raise ConfigError(f"{path}:{reader.line_num}: not valid CSV ({exc})") from None
    if header is None:
        raise ConfigError(f"{path}:1: word list is empty (no header)")
    return rows


def load_word_list(path: str | Path) -> pl.DataFrame:
    """A user's word list (``.txt`` or ``.csv``, see the module docstring) as a DataFrame with
    ``word``, ``gender_class`` and ``origin`` (the file name), in file order, first occurrence of
    each word kept. Raises ConfigError naming the file and line."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".txt", ".csv"):
        raise ConfigError(f"{path}: a word list is a .txt or .csv file, not {suffix or 'a file without suffix'!r}")
    text = _read_text(path)
    rows = _txt_rows(path, text) if suffix == ".txt" else _csv_rows(path, text)
    if not rows:
        raise ConfigError(f"{path}:1: word list is empty (no words)")
    words, classes, first = [], [], {}
    for number, word, cls in rows:
        if word in first:
            continue
        first[word] = number
        words.append(word)
        classes.append(cls)
    return pl.DataFrame(
        {"word": words, "gender_class": classes, "origin": [path.name] * len(words)},
        schema={"word": pl.String, "gender_class": pl.String, "origin": pl.String},
    )
