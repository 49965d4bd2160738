"""biaseval: measure gender bias in machine translation at scale.

The flow of a run, one package per stage: ``suites`` (items) → ``translate`` (backends) run by
``run`` (shards on Ray, the translation store) → ``label`` (gender of each output) → ``metrics``
(scores with intervals) → ``report`` (tables, HTML, plots). ``pipeline`` strings them together,
``monitor`` repeats them on a schedule, ``cli`` is the command line; ``data`` and ``config`` are
read by all. docs/architecture.md draws it.
"""

__version__ = "0.1.0"
