"""Running a sweep: the plan (shards, texts to send, cost), Ray execution (actors, placement, lost
workers), the run directory and its files (local or object storage, atomic writes, a lock per run),
and the translation store (the cache of everything sent). Imports ``translate``, ``suites``,
``data`` and ``config``; never ``metrics`` or ``report``.
"""
