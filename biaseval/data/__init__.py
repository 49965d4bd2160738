"""Package data and the readers of data: registered datasets pinned to upstream commits with
checksums (``datasets``), the occupation lexicon (``lexicons``; ``lexicon/occupations.csv``), word
lists (``wordlists``), the built-in template suites (``suites/*.yaml``), detector rules, published
numbers and per-language word data (YAML), and the YAML/text readers that name file and line on
bad input. The bottom layer: it imports nothing else of biaseval but ``errors`` and ``registry``.
"""
