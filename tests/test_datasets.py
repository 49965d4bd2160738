"""Dataset registry and resolution: BIASEVAL_DATA_DIR, cache, verified download from a local server."""

from __future__ import annotations

import functools
import http.server
import io
import shutil
import tarfile
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes.local_http import POLL_S

from biaseval.cli import main
from biaseval.data import datasets
from biaseval.errors import DataError

NAME = "gender-bias-hi-en-eval"


def _tarball(root: Path, top: str, replace: dict[str, bytes] | None = None, drop: set[str] = frozenset()) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path in sorted(root.rglob("*")):
            if not path.is_file():
                continue
            rel = path.relative_to(root).as_posix()
            if rel in drop:
                continue
            data = (replace or {}).get(rel, path.read_bytes())
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class _Server:
    """Serves files from a folder on 127.0.0.1 and counts requests."""

    def __init__(self, folder: Path):
        self.requests = 0
        outer = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):
                outer.requests += 1
                super().do_GET()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def spec():
    return datasets.get_spec(NAME)


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """No data dir, an empty cache, downloads allowed."""
    monkeypatch.delenv("BIASEVAL_DATA_DIR", raising=False)
    monkeypatch.delenv("BIASEVAL_OFFLINE", raising=False)
    monkeypatch.setenv("BIASEVAL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _serve_archive(tmp_path: Path, spec, payload: bytes) -> Path:
    folder = tmp_path / "www"
    target = folder / spec.repo / "archive" / f"{spec.commit}.tar.gz"
    target.parent.mkdir(parents=True)
    target.write_bytes(payload)
    return folder


def test_registry_entries_are_pinned_and_checksummed():
    for name, spec in datasets.registry().items():
        assert len(spec.commit) == 40 and int(spec.commit, 16) >= 0, name
        assert spec.files and all(len(h) == 64 for h in spec.files.values()), name


def test_unknown_dataset_suggests_a_name():
    with pytest.raises(Exception, match="did you mean 'gender-bias-hi-en-eval'"):
        datasets.get_spec("gender-bias-hi-en-evl")


def test_data_dir_is_used_and_verified(hindi, spec):
    local = datasets.resolve(NAME)
    assert local.origin == "BIASEVAL_DATA_DIR" and local.root == hindi
    local.verify()  # every registered file matches its checksum


def test_download_verifies_and_unpacks_into_cache(fresh, hindi, spec, monkeypatch):
    folder = _serve_archive(fresh, spec, _tarball(hindi, f"Gender-Bias-Hi-En-Eval-{spec.commit}"))
    with _Server(folder) as server:
        monkeypatch.setenv("BIASEVAL_ARCHIVE_MIRROR", server.url)
        result = CliRunner().invoke(main, ["data", "fetch", NAME])
        assert result.exit_code == 0, result.output
        assert "download" in result.output and f"{len(spec.files)} files verified" in result.output
        local = datasets.resolve(NAME)
        assert local.origin == "cache"
        assert local.root == datasets.cache_dir(spec)
        local.verify()
        assert server.requests == 1  # the second resolve came from the cache
    # the cache copy equals the mirror byte for byte
    rel = "WinoMT-Hindi/profinal.txt"
    assert (local.root / rel).read_bytes() == (hindi / rel).read_bytes()


def test_corrupt_download_is_refused_and_nothing_is_cached(fresh, hindi, spec, monkeypatch):
    rel = "WinoMT-Hindi/goldlabelproall.txt"
    payload = _tarball(hindi, "top", replace={rel: b"male\t1\ttampered\tx\n"})
    folder = _serve_archive(fresh, spec, payload)
    with _Server(folder) as server:
        monkeypatch.setenv("BIASEVAL_ARCHIVE_MIRROR", server.url)
        with pytest.raises(DataError, match=rf"{rel}: checksum mismatch"):
            datasets.resolve(NAME)
    assert not datasets.cache_dir(spec).exists()
    cache = fresh / "cache" / "datasets"
    assert (list(cache.iterdir()) if cache.exists() else []) == []  # no half-unpacked copy either


def test_download_missing_file_is_refused(fresh, hindi, spec, monkeypatch):
    rel = "WinoMT-Hindi/profinal.txt"
    folder = _serve_archive(fresh, spec, _tarball(hindi, "top", drop={rel}))
    with _Server(folder) as server:
        monkeypatch.setenv("BIASEVAL_ARCHIVE_MIRROR", server.url)
        with pytest.raises(DataError, match="archive lacks 1 registered file"):
            datasets.resolve(NAME)


def test_no_network_error_says_what_is_missing_and_how_to_provide_it(fresh, spec, monkeypatch):
    with _Server(fresh) as server:  # serves nothing: 404
        monkeypatch.setenv("BIASEVAL_ARCHIVE_MIRROR", server.url)
        with pytest.raises(DataError) as err:
            datasets.resolve(NAME)
    message = str(err.value)
    assert "BIASEVAL_DATA_DIR is not set" in message
    assert str(datasets.cache_dir(spec)) in message
    assert "Gender-Bias-Hi-En-Eval/" in message and spec.commit in message
    assert f"biaseval data fetch {NAME}" in message


def test_offline_mode_never_downloads(fresh, monkeypatch):
    monkeypatch.setenv("BIASEVAL_OFFLINE", "1")
    with pytest.raises(DataError, match="downloads are off"):
        datasets.resolve(NAME)


@pytest.fixture
def copied(hindi, tmp_path, monkeypatch):
    root = tmp_path / "data"
    shutil.copytree(hindi, root / "Gender-Bias-Hi-En-Eval")
    monkeypatch.setenv("BIASEVAL_DATA_DIR", str(root))
    return root / "Gender-Bias-Hi-En-Eval"


def test_corrupt_local_file_names_file_and_digests(copied, spec):
    rel = "WinoMT-Hindi/antifinal.txt"
    path = copied / rel
    path.chmod(0o644)
    path.write_bytes(path.read_bytes() + b"extra\n")
    with pytest.raises(DataError, match=rf"{path}: checksum mismatch .*expected sha256 {spec.files[rel]}"):
        datasets.resolve(NAME).path(rel)
    result = CliRunner().invoke(main, ["data", "verify", NAME])
    assert result.exit_code != 0 and "checksum mismatch" in result.output


def test_missing_local_file_is_named(copied):
    rel = "WinoMT-Hindi/profinal.txt"
    (copied / rel).unlink()
    with pytest.raises(DataError, match=rf"{copied / rel}: missing file"):
        datasets.resolve(NAME).path(rel)


def test_unregistered_file_is_refused(hindi):
    with pytest.raises(DataError, match="not a registered file"):
        datasets.resolve(NAME).path("README.md")


def test_checksums_command_regenerates_the_registry_block(hindi, spec):
    result = CliRunner().invoke(main, ["data", "checksums", str(hindi)])
    assert result.exit_code == 0
    for rel, digest in list(spec.files.items())[:5]:
        assert f'"{rel}": {digest}' in result.output
