"""The grammatical gender of an Italian word or short phrase: what an MT system returned for an
English word ("nurse" -> "l'infermiera", "teacher" -> "insegnante", "doctor" -> "il medico").

``italian_gender(text)`` gives exactly one of:

    masculine   the phrase is masculine (il medico, attore, i ragazzi)
    feminine    the phrase is feminine (la medico, attrice, un'insegnante, le ragazze)
    both        a common-gender noun with nothing to mark it (insegnante, giornalista, l'artista),
                or both genders given (il/la giornalista, maestro/a, uomo o donna)
    unknown     nothing tells the gender, or the evidence contradicts itself: an -e noun not in
                the lexicon (chiave), an English word left untranslated (nurse), "un attrice",
                an empty text or None. Never a guess.

``italian_genders(values)`` does the same for a list.

What decides, in order
----------------------

1. *Normalising.* Unicode NFC, lower case, typographic apostrophes read as ``'``; text in
   parentheses is dropped, except a lone ending, "maestro(a)", which reads as "maestro/a";
   quotes and punctuation around the text are ignored; a hyphen joins nothing (ex-marito is
   "ex marito"), except before a lone ending, "maestro-a".
2. *Alternatives.* A slash between a word and an ending gives two words: "maestro/a" ->
   maestro / maestra, "l'infermiere/a", "dottore/essa" (or "/ssa"), "attore/trice",
   "signor/a", "un/a". Otherwise "/", ",", e, ed, o, od, oppure and né separate *conjuncts*
   ("il/la giornalista" is "il" and "la giornalista"; "il medico/la dottoressa"). Each conjunct is
   tagged alone and the results are combined: all masculine -> masculine, all feminine ->
   feminine, any unknown -> unknown, anything else (il/la, uomo e donna) -> both.
3. *Tokens.* Elided words split after the apostrophe: "l'infermiera" -> l' + infermiera,
   "dell'uomo", "un'amica", "d'affari".
4. *The noun phrase of a conjunct.* Leading prepositions are skipped (an articulated one, della,
   counts as a determiner); then come determiners and prenominal adjectives (il, la, l', un,
   un', questo, mio, nessuna, due, bravo, buona, bell', ...), then the *head* word (the first
   word that is neither), then the words after it up to the first preposition: what follows
   a preposition is a complement and is ignored ("vigile del fuoco" is "vigile"; "uomo d'affari"
   is "uomo"), unless a conjunction followed by a determiner starts a new conjunct ("il padre di
   Luca e la madre"). With no head (a determiner or adjective alone), the last word is the head
   ("la bella", "giovane"). So in a multi-word phrase the head is the first noun: "donna
   poliziotto" is feminine.
5. *Agreement.* The determiners and prenominal adjectives decide when they mark a gender
   (``l'``, ``quest'``, ``dell'``, ``ogni``, numerals and ``giovane`` do not):

   - feminine determiner: feminine, whatever the head's form (la cantante; and la medico,
     la ministro, la sindaco, where a masculine-form profession names a woman), except before a
     noun that names a male by meaning (la padre, un'uomo: contradictory -> unknown);
   - masculine determiner: masculine (il cantante, il manager, il poeta, il puma), except before
     a noun marked feminine by the lexicon or a feminine suffix (un attrice, il dottoressa:
     contradictory -> unknown);
   - determiners that disagree with each other (il mia) -> unknown.

   With no marking determiner, the head decides (step 6). When the head gives both or unknown,
   marked words after it decide by agreement ("giornalista sportivo" masculine, "giudice donna"
   feminine); if they disagree, the head's tag stands.
6. *The head word*, first rule that applies:

   a. ``not_nouns`` of the lexicon (ma, ora, niente, ...) and ``english`` words -> unknown;
      a word ending in ə, ɜ, * or @ (gender-inclusive spellings) -> both;
   b. in a plural phrase (plural determiner or numeral), an -e word that is the plural of a
      listed feminine or common-gender -a noun -> feminine ("due infermiere");
   c. the lexicon (``biaseval/data/gender_it.yaml``): uomo m, donna f, collega both, re m,
      mano f, problema m, dente m, lista f, ...;
   d. a word that is not spelled like Italian -> unknown: letters outside the Italian alphabet
      (j, k, w, x, y, other scripts), an h not after c or g, or a final consonant (nurse and
      teacher fail on their own: -e and -er; manager, doctor, chef, boss by the final consonant);
   e. a final accented vowel: -tà and -tù feminine (città, virtù), any other unknown;
   f. a plural whose singular is in the lexicon: -i from -o/-io (figli, medici m; mani f), from
      -e (madri f, padri m, cantanti both), from a masculine or common-gender -a (colleghi,
      poeti m); -e from a feminine or common-gender -a (ragazze, amiche, colleghe f);
   g. suffixes: -trice/-trici, -essa/-esse, -zione/-sione/-gione (and -i), -iste, -iatre,
      -ologhe feminine; -ore/-ori (dottore, attore, pastori), -ieri, -isti, -iatri, -ologi,
      -ai, -chi/-ghi masculine; -ista, -iatra, -cida, -ante/-ente/-anti/-enti, -iore (common
      gender: giornalista, pediatra, omicida, cantante, superiore) both;
   h. -o masculine, -a feminine (the lexicon lists the exceptions, steps c and f);
   i. anything else unknown: -e (madre is listed, chiave is not), -i, -ione, -ice, -u.

   A bare word is read as the singular where the form could be either: "infermiere" is the
   masculine singular (listed), not the plural of "infermiera"; "le infermiere" is feminine by
   the article. Lexicon hits and suffixes are *strong* evidence (a masculine determiner cannot
   override them); the -o/-a ending is *weak* (il puma, la radio follow the determiner).

Known limits: the head is the first noun, so "medico donna" is masculine (the form of medico)
and "poliziotto donna" too; an English word that is also spelled like Italian (data, camera) is
read as Italian; abbreviations (dott., prof.ssa) are unknown; a whole sentence is read as a phrase
(its first noun phrase decides).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from biaseval.label.italian_lexicon import BOTH, LABELS, UNKNOWN, F, Lexicon, M, lexicon

_VOWELS = set("aeiouàèéìíòóùú")
_ITALIAN_LETTERS = set("abcdefghilmnopqrstuvz") | _VOWELS
_INCLUSIVE = ("ə", "ɜ", "*", "@")
_APOSTROPHES = dict.fromkeys(map(ord, "’‘`´ʼ′"), "'")

# (suffix, label) for rule 6g, longest suffix first
_SUFFIXES: tuple[tuple[str, str], ...] = tuple(sorted(
    [
        ("trice", F), ("trici", F), ("essa", F), ("esse", F),
        ("zione", F), ("zioni", F), ("sione", F), ("sioni", F), ("gione", F), ("gioni", F),
        ("iste", F), ("iatre", F), ("ologhe", F),
        ("iore", BOTH), ("iori", BOTH),
        ("ore", M), ("ori", M), ("ieri", M), ("isti", M), ("iatri", M), ("ologi", M), ("ologhi", M),
        ("ai", M), ("chi", M), ("ghi", M),
        ("ista", BOTH), ("iatra", BOTH), ("cida", BOTH),
        ("ante", BOTH), ("ente", BOTH), ("anti", BOTH), ("enti", BOTH),
    ],
    key=lambda item: -len(item[0]),
))


# ---------------------------------------------------------------------------------------------
# normalising and tokenising

_PAREN_ENDING = re.compile(r"(?<=\w)\s*\(\s*(a|o|e|i|essa|ssa|trice)\s*\)")
_PARENS = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
_HYPHEN_ENDING = re.compile(r"(?<=\w)-(a|o|e|i|essa|ssa|trice)(?=$|[^\w'])")
_SLASH_ENDING = re.compile(r"([^\s/,;]+)\s*/\s*(a|o|e|i|essa|ssa|trice|rice)(?=$|[^\w'])")
_EDGE_NO_BRACKETS = "\"'«»“”„‹›.,;:!?¡¿-–—…·• \t\r\n"  # not *, an inclusive ending
_EDGE = _EDGE_NO_BRACKETS + "()[]{}"


def _with_ending(word: str, ending: str) -> str:
    if ending in ("trice", "rice"):
        for old in ("tore", "tor"):
            if word.endswith(old):
                return word[: -len(old)] + "trice"
        return word + ending
    if ending in ("essa", "ssa"):
        return (word[:-1] if word[-1:] in _VOWELS else word) + "essa"
    return (word[:-1] if word[-1:] in _VOWELS else word) + ending


def _unwrap(text: str) -> str:
    """Strip punctuation around the text, and brackets that enclose all of it."""
    while True:
        text = text.strip(_EDGE_NO_BRACKETS)
        if len(text) > 1 and text[0] + text[-1] in ("()", "[]", "{}"):
            depth = 0
            for i, ch in enumerate(text):
                depth += ch == text[0]
                depth -= ch == text[-1]
                if depth == 0:
                    break
            if i == len(text) - 1:  # the first bracket closes at the end
                text = text[1:-1]
                continue
        return text


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFC", text).translate(_APOSTROPHES).lower()
    text = _unwrap(text)
    text = _PAREN_ENDING.sub(lambda m: "/" + m.group(1), text)
    previous = None
    while previous != text:  # nested brackets
        previous, text = text, _PARENS.sub(" ", text)
    text = _HYPHEN_ENDING.sub(lambda m: "/" + m.group(1), text)
    text = _SLASH_ENDING.sub(lambda m: f"{m.group(1)} / {_with_ending(m.group(1), m.group(2))}", text)
    return text.strip(_EDGE)


def _tokens(text: str) -> list[str]:
    text = re.sub(r"[/,;]", lambda m: f" {m.group(0)} ", text)
    text = re.sub(r"(?<=\w)-(?=\w)", " ", text)
    text = re.sub(r"[^\w\s'/,;*@əɜ]", " ", text)
    out: list[str] = []
    for raw in text.split():
        raw = raw.lstrip("'")
        while "'" in raw[:-1]:
            cut = raw.index("'") + 1
            out.append(raw[:cut])
            raw = raw[cut:].lstrip("'")
        if raw:
            out.append(raw)
    return out


# ---------------------------------------------------------------------------------------------
# words


def _foreign(word: str) -> bool:
    if any(ch not in _ITALIAN_LETTERS and ch != "'" for ch in word):
        return True
    if any(ch == "h" and (i == 0 or word[i - 1] not in "cg") for i, ch in enumerate(word)):
        return True
    return word[-1] not in _VOWELS


def _plural_of(word: str, lex: Lexicon) -> str | None:
    """The gender of ``word`` read as the plural of a listed singular (rule 6f); None if none."""
    found: set[str] = set()

    def add(singular: str, ok: tuple[str, ...], as_: str | None = None) -> None:
        label = lex.nouns.get(singular)
        if label in ok:
            found.add(as_ or label)

    if word.endswith("i") and len(word) > 2:
        stem = word[:-1]
        add(stem + "o", (M, F, BOTH))
        add(stem + "io", (M, F, BOTH))
        add(stem + "e", (M, F, BOTH))
        add(stem + "a", (M, BOTH), M)
        if word.endswith("hi"):
            add(word[:-2] + "o", (M, F, BOTH))
            add(word[:-2] + "a", (M, BOTH), M)
    elif word.endswith("e") and len(word) > 2:
        add(word[:-1] + "a", (F, BOTH), F)
        if word.endswith("he"):
            add(word[:-2] + "a", (F, BOTH), F)
    return found.pop() if len(found) == 1 else None


def _head(word: str, plural: bool, lex: Lexicon) -> tuple[str, bool]:
    """(label, strong) for a head word (rule 6)."""
    if word in lex.not_nouns or word in lex.english:
        return UNKNOWN, False
    if word.endswith(_INCLUSIVE):
        return BOTH, True
    if plural and word.endswith("e"):
        from_a = _plural_of(word, lex)
        if from_a == F:
            return F, True
    if word in lex.nouns:
        return lex.nouns[word], True
    if word.endswith("'") or _foreign(word):
        return UNKNOWN, False
    if word[-1] in "àèéìíòóùú":
        return (F, True) if word.endswith(("tà", "tù")) else (UNKNOWN, False)
    plural_label = _plural_of(word, lex)
    if plural_label:
        return plural_label, True
    for suffix, label in _SUFFIXES:
        if word.endswith(suffix) and len(word) > len(suffix):
            return label, True
    if word.endswith("o"):
        return M, False
    if word.endswith("a"):
        return F, False
    return UNKNOWN, False


# ---------------------------------------------------------------------------------------------
# phrases


def _conjuncts(tokens: list[str], lex: Lexicon) -> list[list[str]]:
    """Split at separators, leading prepositions kept (as markers), complements dropped (rule 4)."""
    separators = lex.conjunctions | {"/", ",", ";"}
    out: list[list[str]] = [[]]
    in_complement = False
    content = False
    for i, token in enumerate(tokens):
        if token in separators:
            nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
            if in_complement and nxt not in lex.determiners:
                continue
            out.append([])
            in_complement = content = False
            continue
        if in_complement:
            continue
        is_prep = token in lex.prepositions or token in lex.articulated
        if is_prep and content:
            in_complement = True
            continue
        out[-1].append(token)
        if not is_prep and token not in lex.determiners and token not in lex.adjectives:
            content = True
    return [c for c in out if c]


def _combine(labels: list[str]) -> str:
    if not labels or UNKNOWN in labels:
        return UNKNOWN
    kinds = set(labels)
    if kinds == {M}:
        return M
    if kinds == {F}:
        return F
    return BOTH


def _feature(token: str, lex: Lexicon) -> tuple[str | None, str | None] | None:
    return lex.articulated.get(token) or lex.determiners.get(token) or lex.adjectives.get(token)


def _noun_phrase(tokens: list[str], lex: Lexicon) -> str:
    marks: set[str] = set()
    plural = False
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in lex.prepositions:
            i += 1
            continue
        feature = _feature(token, lex)
        if feature is None:
            if token.isdigit():
                plural = plural or token != "1"
                i += 1
                continue
            break
        gender, number = feature
        if gender:
            marks.add(gender)
        plural = plural or number == "pl"
        i += 1
    if i == len(tokens):  # no head: the last determiner or adjective is read as the head
        rest = [t for t in tokens if t not in lex.prepositions and not t.isdigit()]
        if not rest:
            return UNKNOWN
        last = rest[-1]
        marks = {f[0] for t in rest[:-1] if (f := _feature(t, lex)) and f[0]}
        own = _feature(last, lex)[0]
        if last in lex.adjectives:
            label, strong = _head(last, plural, lex)
            if label == UNKNOWN and own:
                label, strong = own, True
            return _agree(marks, label, strong, last, [], plural, lex)
        if own:
            marks.add(own)
        return next(iter(marks)) if len(marks) == 1 else UNKNOWN
    head = tokens[i]
    head_label, strong = _head(head, plural, lex)
    return _agree(marks, head_label, strong, head, tokens[i + 1:], plural, lex)


def _agree(marks: set[str], head_label: str, strong: bool, head: str, after: list[str], plural: bool,
           lex: Lexicon) -> str:
    if len(marks) > 1:
        return UNKNOWN
    if marks == {F}:
        if head_label == M and head in lex.sex_specific:
            return UNKNOWN
        return F
    if marks == {M}:
        if head_label == F and strong:
            return UNKNOWN
        return M
    if head_label in (M, F):
        return head_label
    marked = set()
    for word in after:
        label, _ = _head(word, plural, lex)
        if label in (M, F):
            marked.add(label)
    if len(marked) == 1:
        return next(iter(marked))
    return head_label


@lru_cache(maxsize=65536)
def _tag(text: str) -> str:
    lex = lexicon()
    normal = _normalise(text)
    if not normal:
        return UNKNOWN
    tokens = _tokens(normal)
    conjuncts = _conjuncts(tokens, lex)
    return _combine([_noun_phrase(c, lex) for c in conjuncts])


def italian_gender(text: str | None) -> str:
    """The grammatical gender of an Italian word or short phrase: masculine, feminine, both or
    unknown (see the module docstring for the rules)."""
    if text is None or not isinstance(text, str):
        return UNKNOWN
    return _tag(text)


def italian_genders(values: list[str | None]) -> list[str]:
    """``italian_gender`` of each value, in order (None and empty strings are unknown)."""
    return [italian_gender(v) for v in values]


__all__ = ["LABELS", "italian_gender", "italian_genders"]
