"""mt_gender's per-language readings of an aligned entity (gabrielStanovsky/mt_gender, src/languages/,
as of 2019-2020), re-stated from their behaviour so that docs/winomt-en.md's examples of where
biaseval reads otherwise can be checked. Not biaseval's code and not used by it: only the tests
(test_winomt_mt_gender.py) and the one-off measurements in the docs use these.

- German (``gendered_article.py``): the source entity "nurse" is female whatever the translation;
  no aligned word: male; an aligned word ending in "in": female; else the determiner *or pronoun*
  of a fixed list nearest to the first aligned word, on either side (no such word: male). The list
  leaves out "den", and reads "seine" as female and "ihren", "ihrem" as male.
- Hebrew (``semitic_languages.py``): any aligned word but "את" ending in ה or ת: female, else male.
- Arabic (``semitic_languages.py``): any aligned word containing ة: female, else male (nothing
  aligned: male).
- Russian, Ukrainian (``pymorph_support.py``): per aligned word, the genders of all its pymorphy
  parses: none -> neutral, any feminine -> female, else the commonest; the commonest over the words.
- Spanish, French, Italian (``spacy_support.py``): the commonest Gender of spaCy's tags of the aligned
  words; none -> unknown. Not re-stated (it needs spaCy's 2019 models).
"""

from __future__ import annotations

from collections import Counter

DE_WORDS = {
    "der": "male", "ein": "male", "dem": "male", "einen": "male", "des": "male", "er": "male", "seiner": "male",
    "ihn": "male", "seinen": "male", "ihm": "male", "ihren": "male", "seinem": "male", "ihrem": "male", "sein": "male",
    "die": "female", "eine": "female", "einer": "female", "sie": "female", "seine": "female", "ihrer": "female",
    "ihr": "neutral", "ihre": "neutral", "das": "neutral", "jemanden": "neutral",
}


def german(tokens: list[str], aligned: list[int], source_entity: str) -> str:
    if source_entity.lower() in ("nurse", "the nurse"):
        return "female"
    if not aligned:
        return "male"
    if any(tokens[k].endswith("in") for k in aligned):
        return "female"
    first = min(aligned)
    found = [(abs(k - first), k, DE_WORDS[t.lower()]) for k, t in enumerate(tokens) if t.lower() in DE_WORDS]
    return min(found)[2] if found else "male"


def arabic(words: list[str]) -> str:
    return "female" if any("ة" in w or "ﺔ" in w for w in words) else "male"


def hebrew(words: list[str]) -> str:
    return "female" if any(w[-1] in "הת" for w in words if w and w != "את") else "male"


_GENDERS = {"masc": "male", "femn": "female", "neut": "neutral"}


def slavic(words: list[str], analyser) -> str:
    """``analyser``: a pymorphy3 MorphAnalyzer of the language."""
    def one(word: str) -> str:
        genders = [_GENDERS[p.tag.gender] for p in analyser.parse(word) if p.tag.gender in _GENDERS]
        if not genders:
            return "neutral"
        return "female" if "female" in genders else Counter(genders).most_common(1)[0][0]

    return Counter(one(w) for w in words).most_common(1)[0][0] if words else "unknown"


def measure(run: str, lang: str) -> list[str]:
    """Per system of a finished run with suite winomt-en (e.g. conf/winomt-en-adj.yaml's): Acc of our
    labels and of mt_gender's rule applied to the target words our aligner links to each entity
    (the aligner trained as scoring trains it: on all the run's pairs of the language)."""
    import glob

    import polars as pl
    import pymorphy3

    from biaseval.label.align import align, project
    from biaseval.label.entities import entity_tokens
    from biaseval.label.tokens import tokenize

    labels = pl.read_parquet(f"{run}/labels.parquet").filter(pl.col("suite") == "winomt-en")
    items = pl.read_parquet(f"{run}/items.parquet").select("item_id", "gold", "tgt_lang", "source", "occupation",
                                                            "entity_index")
    shards = pl.read_parquet(glob.glob(f"{run}/translations/system=*/suite=winomt-en/*.parquet"))
    rows = (labels.join(items, on="item_id").join(shards.select("system", "item_id", "translation"),
                                                   on=["system", "item_id"])
            .filter((pl.col("tgt_lang") == lang) & pl.col("translation").is_not_null()))
    pairs = rows.select("source", "translation").unique(maintain_order=True)
    source_tokens = [tokenize(s, "en") for s in pairs["source"]]
    target_tokens = [tokenize(t, lang) for t in pairs["translation"]]
    links = align(source_tokens, target_tokens, method="fast_align")
    where = {pair: k for k, pair in enumerate(pairs.iter_rows())}
    morph = pymorphy3.MorphAnalyzer(lang=lang) if lang in ("ru", "uk") else None
    theirs = []
    for r in rows.iter_rows(named=True):
        k = where[(r["source"], r["translation"])]
        span = sorted(set(project(links[k], entity_tokens(r["source"], r["entity_index"], r["occupation"]))))
        words = [target_tokens[k][i] for i in span]
        theirs.append(german(target_tokens[k], span, r["occupation"]) if lang == "de"
                      else hebrew(words) if lang == "he" else arabic(words) if lang == "ar" else slavic(words, morph))
    rows = rows.with_columns(pl.Series("mt_gender", theirs))
    out = []
    for system, part in rows.group_by("system", maintain_order=True):
        ours, rule = (part["label"] == part["gold"]).mean(), (part["mt_gender"] == part["gold"]).mean()
        out.append(f"{lang} {system[0]}: Acc ours {100 * ours:.1f}, mt_gender's rule {100 * rule:.1f} "
                   f"({(part['label'] != part['mt_gender']).sum()} of {part.height} labels differ)")
    return out


if __name__ == "__main__":  # python tests/mt_gender_rules.py RUN_DIR de he ru uk
    import sys

    for language in sys.argv[2:]:
        print("\n".join(measure(sys.argv[1], language)), flush=True)


# --- mt_gender's 2019 alignment, read by our analysers (docs/winomt-en-mt-gender.md, "The 2019 numbers") ---

def recorded_file(data_dir, system: str, lang: str):
    """mt_gender's recorded outputs of ``system`` into ``lang`` (``source ||| translation`` lines)."""
    return data_dir / "mt_gender" / "translations" / system / f"en-{lang}.txt"


def whitespace_projection(sources: list[str], translations: list[str], entity_indices: list[int]) -> list[list[int]]:
    """mt_gender's entity projection (load_alignments.py, 2019): fast_align forward only (every target
    word picks at most one source word), trained on one system's file, on whitespace-separated words;
    the source side is the entity's first word plus a preceding "the"/"a"/"an". Per row, the indices
    of the target's whitespace words linked to it. (fast_align-style models of systran-align, as
    biaseval trains them; mt_gender ran fast_align with -d -o -v.)"""
    from biaseval.label import align

    pairs = list(dict.fromkeys(zip(sources, translations)))
    src = [s.split() for s, _ in pairs]
    tgt = [t.split() for _, t in pairs]
    forward, _ = align._fast_align(align._encode(src), align._encode(tgt))
    links = forward.lists()
    where = {pair: k for k, pair in enumerate(pairs)}
    out = []
    for source, translation, index in zip(sources, translations, entity_indices):
        k = where[(source, translation)]
        words = src[k]
        side = ([index - 1] if index > 0 and words[index - 1].lower() in ("the", "a", "an") else []) + [index]
        out.append(sorted({j for i, j in links[k] if i in side}))
    return out


def read_whitespace_spans(lang: str, translations: list[str], spans: list[list[int]]) -> list:
    """Our analyser's readings of whitespace-word spans: each word's biaseval tokens (an elided article
    is a token of its own) stand for it."""
    from biaseval.label.analysers import analyser_for
    from biaseval.label.tokens import tokenize

    sentences, token_spans = [], []
    for translation, span in zip(translations, spans):
        tokens, owner = [], []
        for w, word in enumerate(translation.split()):
            pieces = tokenize(word, lang)
            tokens += pieces
            owner += [w] * len(pieces)
        sentences.append(tokens)
        token_spans.append([n for n, w in enumerate(owner) if w in span])
    return analyser_for(lang).analyse(sentences, token_spans)


def per_set_projection(sources: list[str], translations: list[str], entity_indices: list[int],
                       sets: list[str | None]) -> list[list[int]]:
    """``whitespace_projection`` with the aligner trained on each set's rows alone (pro: 1,584, anti:
    1,584, Winogender: 720) instead of the system's whole file. Not what mt_gender did (its
    evaluate_language.sh aligns the whole file whatever the data set): the hypothesis the docs rule out."""
    out: list[list[int]] = [[] for _ in sources]
    for group in dict.fromkeys(sets):
        rows = [k for k, s in enumerate(sets) if s == group]
        spans = whitespace_projection([sources[k] for k in rows], [translations[k] for k in rows],
                                      [entity_indices[k] for k in rows])
        for k, span in zip(rows, spans):
            out[k] = span
    return out
