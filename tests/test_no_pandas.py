"""pyarrow imports pandas (0.2 s) the first time a list or numpy array is given to pa.array / pa.table;
a sweep's worker and the driver's scoring do not need it, so they build Arrow data through polars.
These tests fail if a change brings the import back (a cost every sweep pays on its critical path)."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
from datetime import datetime, timezone
import polars as pl
import biaseval.run.worker as worker
from biaseval.label.rules import LABEL_ENUM
from biaseval.metrics.labelling import _dictionary, _repeated
from biaseval.run.translation_store import TranslationStore
rows = worker._store_rows({
    "key_hash": pl.Series([1, 2], dtype=pl.UInt64), "src_lang": ["en", "en"], "tgt_lang": ["hi", "hi"],
    "source": ["a", "b"], "translation": ["x", None], "error": [None, "failed"], "attempts": [1, 2],
    "model": [None, "m"], "provider": ["p", "p"], "system_version": ["v", "v"], "run_id": ["r", "r"],
    "translated_at": [datetime(2026, 1, 1, tzinfo=timezone.utc)] * 2,
    **worker._details([type("R", (), {"details": None})()] * 2)})
store = TranslationStore(sys.argv[1])
identity = {"backend": "identity", "version": "1", "options": {}}
store.append(identity, rows)
items = pl.DataFrame({"src_lang": ["en"], "tgt_lang": ["hi"], "source": ["a"]})
found, failed = store.latest(identity, items, pl.Series(rows.column("key_hash")).to_numpy()[:1])
_repeated("suite", 3)
_dictionary(pl.Series(["male", None], dtype=LABEL_ENUM))
_dictionary(pl.Series(["male", None]))
print(rows.num_rows, found.height, "pandas" in sys.modules)
"""


def test_worker_store_rows_and_label_columns_do_not_import_pandas(tmp_path):
    done = subprocess.run([sys.executable, "-c", CHECK, str(tmp_path / "store")], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["2", "1", "False"], done.stdout + done.stderr
