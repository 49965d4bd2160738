"""The grammatical gender a translation gives an entity (WinoMT scoring), per target language.

``analyser_for(lang)`` returns the language's ``GenderAnalyser``; each reads the target words the
entity was aligned to and returns a ``Reading`` (label + reason). Per-language word data lives in
``biaseval/data/entity_gender/<lang>.yaml``; the rule layer is in the language's module.
"""

from .base import ANALYSERS, GenderAnalyser, MissingAnalyser, Reading, analyser_for

__all__ = ["ANALYSERS", "GenderAnalyser", "MissingAnalyser", "Reading", "analyser_for"]

# language -> "module:Class" (imported on first use, so an analyser's dependencies load only when needed)
for _lang, _where in {
    "es": "biaseval.entity_gender.romance:Spanish",
    "fr": "biaseval.entity_gender.romance:French",
    "it": "biaseval.entity_gender.romance:Italian",
    "ru": "biaseval.entity_gender.slavic:Russian",
    "uk": "biaseval.entity_gender.slavic:Ukrainian",
    "de": "biaseval.entity_gender.german:German",
    "he": "biaseval.entity_gender.hebrew:Hebrew",
}.items():
    ANALYSERS.add(_lang, _where)
