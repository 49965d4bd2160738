"""What the two open-model backends, ``hf`` (transformers) and ``ctranslate2``, share: the language
tags of each model family (``languages``: FLORES-200, M2M-100 and opus-mt codes), finding a model
and pinning its files (``location``: local directory, hub cache, revision, weight hashes), the
tokenizer side (``codec``: tags in, text out, thread-safe) and the translator base with the
driver-side checks of the model and its language pairs (``translator``). Part of ``translate``:
imports ``errors`` and ``translate.base``; the backends import it, never the reverse.
"""
