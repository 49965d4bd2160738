"""From translations to gender labels: rule detectors over whole sentences (``rules``, rules in
``biaseval/data/detectors.yaml``), the grammatical gender of Italian words (``italian``, its word
lists in ``italian_lexicon``), and for WinoMT from English the entity found by word alignment
(``align``, ``entities``) and read by a per-language analyser (``analysers``). Imports ``data``,
``errors`` and ``registry`` only.
"""
