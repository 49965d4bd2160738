"""The grammatical gender a translation gives an entity (WinoMT scoring), per target language.

``analyser_for(lang)`` returns the language's ``GenderAnalyser``; each reads the target words the
entity was aligned to and returns a ``Reading`` (label + reason). What an analyser is, and the span
contract every language shares (empty span: no-alignment; an index outside the sentence: a
``SpanError``), is in ``base``. Per-language word data lives in
``biaseval/data/entity_gender/<lang>.yaml``; the rule layer is in the language's module (``romance``,
``german``, ``slavic``, ``hebrew``, ``dutch``, ``arabic``), its word-data loading beside it (``romance_words``,
``german_words``), and Apertium's lt-proc stream in ``lt_proc``.
"""

from biaseval.label.analysers.base import (
    ANALYSERS,
    GenderAnalyser,
    MissingAnalyser,
    Reading,
    SpanError,
    analyser_for,
)

__all__ = ["ANALYSERS", "GenderAnalyser", "MissingAnalyser", "Reading", "SpanError", "analyser_for"]

# language -> "module:Class" (imported on first use, so an analyser's dependencies load only when needed)
for _lang, _where in {
    "es": "biaseval.label.analysers.romance:Spanish",
    "fr": "biaseval.label.analysers.romance:French",
    "it": "biaseval.label.analysers.romance:Italian",
    "ru": "biaseval.label.analysers.slavic:Russian",
    "uk": "biaseval.label.analysers.slavic:Ukrainian",
    "de": "biaseval.label.analysers.german:German",
    "he": "biaseval.label.analysers.hebrew:Hebrew",
    "pt": "biaseval.label.analysers.romance:Portuguese",
    "nl": "biaseval.label.analysers.dutch:Dutch",
    "ar": "biaseval.label.analysers.arabic:Arabic",
}.items():
    ANALYSERS.add(_lang, _where)
