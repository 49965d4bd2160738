"""How the open-model backends name languages: the tag conventions of a model family.

- ``marian``: one language pair per model, nothing to add; a multi-target model (its vocabulary
  has ``>>xx<<`` tokens) gets the target token in front of each source text.
- ``nllb``, ``m2m100``: the tokenizer's ``src_lang`` puts the source tag on the input; the target
  tag is forced as the first generated token (``forced_bos_token_id``; a target prefix in CT2).
- ``indictrans2``: the input text itself carries the tags, ``"eng_Latn hin_Deva text"``.

Codes: ISO 639-1 -> FLORES-200 (NLLB, IndicTrans2), the ISO code itself (M2M-100), ``>>xx<<``
tokens (multi-target opus-mt); a system's ``language_codes`` override them.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from biaseval.errors import ConfigError

FAMILIES: tuple[str, ...] = ("marian", "nllb", "m2m100", "indictrans2")

# ISO 639-1 (and a few ISO 639-3 without a 2-letter code) -> FLORES-200 codes, as NLLB and
# IndicTrans2 name languages. Extend or override per system with ``language_codes``.
FLORES200: dict[str, str] = {
    "af": "afr_Latn", "am": "amh_Ethi", "ar": "arb_Arab", "as": "asm_Beng", "az": "azj_Latn",
    "be": "bel_Cyrl", "bg": "bul_Cyrl", "bn": "ben_Beng", "bo": "bod_Tibt", "bs": "bos_Latn",
    "ca": "cat_Latn", "cs": "ces_Latn", "cy": "cym_Latn", "da": "dan_Latn", "de": "deu_Latn",
    "el": "ell_Grek", "en": "eng_Latn", "eo": "epo_Latn", "es": "spa_Latn", "et": "est_Latn",
    "eu": "eus_Latn", "fa": "pes_Arab", "fi": "fin_Latn", "fr": "fra_Latn", "ga": "gle_Latn",
    "gl": "glg_Latn", "gu": "guj_Gujr", "ha": "hau_Latn", "he": "heb_Hebr", "hi": "hin_Deva",
    "hr": "hrv_Latn", "hu": "hun_Latn", "hy": "hye_Armn", "id": "ind_Latn", "ig": "ibo_Latn",
    "is": "isl_Latn", "it": "ita_Latn", "ja": "jpn_Jpan", "jv": "jav_Latn", "ka": "kat_Geor",
    "kk": "kaz_Cyrl", "km": "khm_Khmr", "kn": "kan_Knda", "ko": "kor_Hang", "ks": "kas_Arab",
    "ky": "kir_Cyrl", "lo": "lao_Laoo", "lt": "lit_Latn", "lv": "lvs_Latn", "mk": "mkd_Cyrl",
    "ml": "mal_Mlym", "mn": "khk_Cyrl", "mr": "mar_Deva", "ms": "zsm_Latn", "mt": "mlt_Latn",
    "my": "mya_Mymr", "ne": "npi_Deva", "nl": "nld_Latn", "nb": "nob_Latn", "nn": "nno_Latn",
    "no": "nob_Latn", "or": "ory_Orya", "pa": "pan_Guru", "pl": "pol_Latn", "ps": "pbt_Arab",
    "pt": "por_Latn", "ro": "ron_Latn", "ru": "rus_Cyrl", "sa": "san_Deva", "sd": "snd_Arab",
    "si": "sin_Sinh", "sk": "slk_Latn", "sl": "slv_Latn", "so": "som_Latn", "sq": "als_Latn",
    "sr": "srp_Cyrl", "sv": "swe_Latn", "sw": "swh_Latn", "ta": "tam_Taml", "te": "tel_Telu",
    "tg": "tgk_Cyrl", "th": "tha_Thai", "tl": "tgl_Latn", "tr": "tur_Latn", "uk": "ukr_Cyrl",
    "ur": "urd_Arab", "uz": "uzn_Latn", "vi": "vie_Latn", "yo": "yor_Latn", "zh": "zho_Hans",
    "zu": "zul_Latn",
    # Indian languages without an ISO 639-1 code (IndicTrans2 covers them)
    "mai": "mai_Deva", "kok": "gom_Deva", "doi": "doi_Deva", "brx": "brx_Deva", "sat": "sat_Olck",
    "mni": "mni_Beng",
}


def model_language_code(family: str, lang: str, overrides: Mapping[str, str]) -> str:
    """The code a model of ``family`` uses for the ISO 639 code ``lang``.

    ``overrides`` (the system's ``language_codes``) win; NLLB and IndicTrans2 use FLORES-200 codes
    (a code that already looks like one, ``hin_Deva``, passes through); M2M-100 and Marian use
    the ISO code itself.
    """
    if lang in overrides:
        return overrides[lang]
    if family in ("nllb", "indictrans2"):
        if re.fullmatch(r"[a-z]{3}_[A-Z][a-z]{3}", lang):
            return lang
        code = FLORES200.get(lang)
        if code is None:
            raise ValueError(f"no FLORES-200 code known for language {lang!r}; add it to the system's "
                             f"language_codes (e.g. {lang}: xxx_Latn)")
        return code
    return lang


def indictrans_input(text: str, src_code: str, tgt_code: str) -> str:
    """IndicTrans2's input convention without IndicTransToolkit: ``"src_tag tgt_tag text"``."""
    return f"{src_code} {tgt_code} {' '.join(text.split())}"


def marian_target_token(tgt: str, supported: Sequence[str], overrides: Mapping[str, str]) -> str | None:
    """The ``>>xx<<`` token a multi-target Marian model needs for target ``tgt``; None for a
    single-target model (no such tokens in its vocabulary)."""
    if not supported:
        return None
    candidates = [overrides.get(tgt), tgt, FLORES200.get(tgt, "").split("_")[0], FLORES200.get(tgt)]
    for code in candidates:
        if code and f">>{code}<<" in supported:
            return f">>{code}<<"
    shown = ", ".join(sorted(supported)[:12])
    raise ValueError(f"this multi-target Marian model has no target token for {tgt!r} (it has {shown}, ...); "
                     f"map it in language_codes")


def marian_declared_pair(tokenizer: Any, src: str, tgt: str, overrides: Mapping[str, str]) -> None:
    """ValueError when a Marian model is asked for languages its tokenizer says it does not translate
    (``source_lang``/``target_lang``: opus-mt-en-es has en and es). Only two-letter codes are compared:
    group models name theirs otherwise (mul, gem, ROMANCE)."""
    for side, lang in (("source", src), ("target", tgt)):
        declared = getattr(tokenizer, f"{side}_lang", None)
        if isinstance(declared, str) and re.fullmatch(r"[a-z]{2}", declared) and declared not in (lang, overrides.get(lang)):
            raise ValueError(f"this Marian model translates {tokenizer.source_lang}->{tokenizer.target_lang} (its "
                             f"tokenizer's {side}_lang), not {src}->{tgt}; map {lang} in language_codes if it is "
                             f"the same language")


def detect_family(model_type: str | None, architectures: Sequence[str], tokenizer_class: str) -> str:
    """The language-tag convention of a model, from its config and its tokenizer's class."""
    kind = (model_type or "").lower()
    names = " ".join([tokenizer_class, *architectures]).lower()
    if kind == "marian" or "marian" in names:
        return "marian"
    if "indictrans" in kind or "indictrans" in names:
        return "indictrans2"
    if "nllb" in kind or "nllb" in names:
        return "nllb"
    if kind == "m2m_100" or "m2m100" in names:
        return "m2m100"
    raise ConfigError(f"cannot tell which language tags this model needs (model_type {model_type!r}, tokenizer "
                      f"{tokenizer_class}); set family: one of {', '.join(FAMILIES)} "
                      f"(marian adds none)")
