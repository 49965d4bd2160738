"""A shard is trusted only if its bytes are those written: a SHA-256 of the file is recorded beside it
(``shard-NNNNN.parquet.sha256``) before the shard itself appears. A resume names and rewrites a shard
whose bytes differ from the record, or that has none; scoring refuses it, naming it. Page checksums
alone (test_sweep_recovery) catch damaged bytes, not a well-formed file with other translations."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import example, given, strategies as st

from biaseval.cli import main
from biaseval.errors import RunDirError
from biaseval.pipeline import sweep
from biaseval.run.filesystem import Folder, StoreOptions
from biaseval.run.rundir import SHARD_KEY, RunDir
from test_object_store import BUCKET, s3  # noqa: F401 - moto's S3 server, a module fixture

SUFFIX = ".sha256"


def otsc_es(tmp_path: Path) -> Path:
    """otsc-en into Spanish with the identity backend (a live system: its texts go through the store)."""
    config = {"name": "integrity", "suites": ["otsc-en"], "targets": {"otsc-en": ["es"]},
              "systems": {"identity": {"backend": "identity", "version": "identity (returns the source)"}},
              "cache": {"path": str(tmp_path / "store")}, "metrics": {"bootstrap": 50, "seed": 1},
              "sweep": {"shard_size": 20}}
    path = tmp_path / "integrity.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def shards(out: Path) -> list[Path]:
    return sorted((out / "translations").rglob("shard-*.parquet"))


def forge(path: Path) -> None:
    """Rewrite a shard as a well-formed file, footer (plan key) and page checksums included, whose
    translations are other words: what a copy from another run or a hand edit would leave."""
    table = pq.read_table(path)
    forged = pa.array([f"mi amiga es enfermera ({i})" for i in range(table.num_rows)], pa.string())
    table = table.set_column(table.schema.get_field_index("translation"), "translation", forged)
    pq.write_table(table, path, compression="zstd", write_page_checksum=True)
    pq.read_table(path, page_checksum_verification=True)  # it reads back cleanly


def _values(metrics: pl.DataFrame) -> pl.DataFrame:
    key = ["system", "suite", "subset", "metric"]
    return metrics.select(*key, "value", "n").sort(key)


# -- RunDir: what is recorded, and what a check says ------------------------------------------------

def _table(n: int = 40) -> pa.Table:
    return pl.DataFrame({"item_id": [f"i{k}" for k in range(n)], "translation": [f"t{k}" for k in range(n)]}).to_arrow()


def test_a_shard_is_recorded_with_the_sha256_of_its_bytes(tmp_path):
    run = RunDir(tmp_path / "run")
    rel = run.shard_path("sys", "otsc-en", 3)
    run.write_shard(rel, _table(), {SHARD_KEY: b"k"})
    path = run.translations / rel
    record = (run.translations / (rel + SUFFIX)).read_text(encoding="ascii")
    # sha256sum's format: `sha256sum -c` in the shard's folder checks it
    assert record == f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}\n"
    assert run.shard_files() == [rel]  # the record is not a shard
    assert run.shard_integrity(rel) is None


def test_a_shard_without_a_record_or_with_other_bytes_is_named(tmp_path):
    run = RunDir(tmp_path / "run")
    rel = run.shard_path("sys", "otsc-en", 0)
    run.write_shard(rel, _table(), {SHARD_KEY: b"k"})
    path = run.translations / rel
    pq.write_table(_table(41), path)  # valid Parquet, other content
    assert "checksum" in run.shard_integrity(rel) and "recorded" in run.shard_integrity(rel)
    (run.translations / (rel + SUFFIX)).unlink()
    assert run.shard_integrity(rel) == "no checksum recorded"
    (run.translations / (rel + SUFFIX)).write_text("not a digest\n")
    assert "checksum" in run.shard_integrity(rel)


@pytest.mark.property
@given(position=st.integers(min_value=0), flip=st.integers(min_value=1, max_value=255))
@example(position=0, flip=1)  # the magic number
@example(position=-1, flip=0x80)  # the footer's last byte
def test_any_changed_byte_of_a_shard_is_caught(tmp_path_factory, position, flip):
    """Whatever byte of the file changes, the check names the shard (page checksums cover only the
    pages; the recorded digest covers everything, footer and metadata included)."""
    run = RunDir(tmp_path_factory.mktemp("run"))
    rel = run.shard_path("sys", "otsc-en", 0)
    run.write_shard(rel, _table(), {SHARD_KEY: b"k"})
    path = run.translations / rel
    data = bytearray(path.read_bytes())
    data[position % len(data)] ^= flip
    path.write_bytes(bytes(data))
    assert run.shard_integrity(rel) is not None


# -- a sweep's resume, and scoring -------------------------------------------------------------------

def test_a_rewritten_shard_is_named_and_redone_on_resume(tmp_path, ray_local):
    config, out = otsc_es(tmp_path), tmp_path / "run"
    clean = sweep(config, out)
    files = shards(out)
    assert len(files) >= 3
    forged, unrecorded = files[1], files[2]
    forge(forged)
    Path(str(unrecorded) + SUFFIX).unlink()
    untouched = {p: p.stat().st_mtime_ns for p in files if p not in (forged, unrecorded)}

    log = io.StringIO()
    again = sweep(config, out, stream=log)
    said = log.getvalue()
    assert f"{forged}: its checksum differs from the one recorded when it was written" in said, said
    assert f"{unrecorded}: no checksum recorded" in said, said
    assert again.sweep.skipped == len(files) - 2 and again.sweep.sent == 0  # rewritten from the store
    assert all(p.stat().st_mtime_ns == t for p, t in untouched.items()), "whole shards were rewritten"
    rows = pl.read_parquet(files)
    assert (rows["translation"] == rows["source"]).all()  # the identity's translations again
    assert _values(again.metrics).equals(_values(clean.metrics))
    assert RunDir(out).shard_integrity(files[1].relative_to(out / "translations").as_posix()) is None


def test_score_refuses_a_rewritten_shard_naming_it(tmp_path, ray_local):
    config, out = otsc_es(tmp_path), tmp_path / "run"
    sweep(config, out)
    forged = shards(out)[0]
    forge(forged)
    result = CliRunner().invoke(main, ["score", "--run", str(out)])
    assert result.exit_code == 2, result.output
    assert f"{forged}: its checksum differs from the one recorded when it was written" in result.output
    assert "Traceback" not in result.output

    Path(str(forged) + SUFFIX).unlink()
    with pytest.raises(RunDirError, match=f"{forged}: no checksum recorded"):
        from biaseval.pipeline import score

        score(out)


@pytest.fixture(scope="module")
def ray_after_s3(s3):
    """A local Ray started after moto's credentials are in the environment (its workers read them at
    start: a Ray started before them, as this module's ray_local is, uploads unsigned, and moto keeps the
    body's aws-chunked framing as the object)."""
    import ray

    from biaseval.run.cluster import start_local_ray

    ray.shutdown()
    start_local_ray(2)
    yield
    ray.shutdown()


@pytest.mark.slow
def test_in_a_bucket_a_rewritten_or_unrecorded_shard_is_named_and_redone(s3, tmp_path, ray_after_s3):
    """The same on an object store: each worker uploads the record, then the shard; a resume reads both
    from the bucket."""
    path = otsc_es(tmp_path)
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    spec["output"] = {"endpoint": s3, "region": "us-east-1"}
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    out = f"s3://{BUCKET}/runs/integrity"
    clean = sweep(path, out)
    store = Folder(out, StoreOptions(endpoint=s3))
    files = [f for f in store.files("translations") if f.endswith(".parquet")]
    assert len(files) >= 3 and all(store.exists(f + SUFFIX) for f in files)
    local = tmp_path / "forged.parquet"
    local.write_bytes(store.read_bytes(files[0]))
    forge(local)
    store.write_bytes(files[0], local.read_bytes())
    store.delete(files[1] + SUFFIX)

    log = io.StringIO()
    again = sweep(path, out, stream=log)
    said = log.getvalue()
    assert f"{store.uri(files[0])}: its checksum differs from the one recorded when it was written" in said, said
    assert f"{store.uri(files[1])}: no checksum recorded" in said, said
    assert again.sweep.skipped == len(files) - 2
    assert _values(again.metrics).equals(_values(clean.metrics))
    run = RunDir(out, StoreOptions(endpoint=s3))
    assert all(run.shard_integrity(f[len("translations/"):]) is None for f in files)
