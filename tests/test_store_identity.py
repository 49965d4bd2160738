"""Which stored translations a run may reuse: only those of the same system sent to the same place
(an emulator's outputs never feed a run against the real service, another AWS region is another
system), and for cloud systems only under a pinned version or within a max_age."""

from __future__ import annotations

import time

import pytest
import yaml
from click.testing import CliRunner

from biaseval.cli import main
from biaseval.config import SystemConfig
from biaseval.pipeline import sweep
from biaseval.run.plan import identity_of
from test_live_sweep import WINO_TEXTS, live_config, rows


def _google(endpoint: str | None, **extra) -> dict:
    options = {"project": "p", "transport": "rest", "credentials": "anonymous", "model": "general/nmt"}
    if endpoint:
        options["endpoint"] = endpoint
    return {"backend": "google", "version": "v3 nmt", "options": options, **extra}


def test_translations_from_one_endpoint_are_not_reused_for_another(tmp_path, data_dir, ray_local):
    """Two servers answering at different endpoints, one store: the second run sends everything to its
    own server (before, it reused the first server's translations and sent nothing)."""
    from fakes.google_server import FakeGoogleTranslate

    with FakeGoogleTranslate() as emulator, FakeGoogleTranslate() as other:
        first = sweep(
            live_config(tmp_path, {"g": _google(emulator.endpoint("rest"))}, name="a.yaml"), tmp_path / "a")
        assert first.sweep.sent == WINO_TEXTS
        second = sweep(
            live_config(tmp_path, {"g": _google(other.endpoint("rest"))}, name="b.yaml"), tmp_path / "b")
        assert second.sweep.sent == WINO_TEXTS
        assert sum(len(r.contents) for r in other.requests if r.status == "OK") == WINO_TEXTS
        # each row names the model the provider said it used
        google = rows(tmp_path / "b")
        assert google["model"].null_count() == 0 and set(google["model"]) == {"general/nmt"}
    real = SystemConfig(**_google(None))
    assert identity_of(real) != identity_of(SystemConfig(**_google(emulator.endpoint("rest"))))
    anonymous = SystemConfig(**_google("https://translate.googleapis.com"))
    signed = SystemConfig(**{**_google("https://translate.googleapis.com"),
                             "options": {**_google(None)["options"], "credentials": "default",
                                         "endpoint": "https://translate.googleapis.com"}})
    assert identity_of(anonymous) != identity_of(signed)


def test_aws_region_and_endpoint_are_part_of_the_identity(monkeypatch):
    pytest.importorskip("boto3")
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_TRANSLATE", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)

    def aws(**options):
        return identity_of(SystemConfig(backend="aws", version="2026-12", options=options))

    assert aws(region="us-east-1") != aws(region="eu-west-1")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    resolved = aws()["options"]
    assert resolved["region"] == "eu-west-1" and resolved["endpoint"] == "https://translate.eu-west-1.amazonaws.com"
    assert aws() == aws(region="eu-west-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")  # an emulator named by the environment
    assert aws()["options"]["endpoint"] == "http://127.0.0.1:4566"
    assert aws() != aws(region="eu-west-1", endpoint="https://translate.eu-west-1.amazonaws.com")
    # how fast or with which profile file it is reached does not change the identity
    assert aws(max_connections=8) == aws()


@pytest.mark.parametrize("backend, options", [("google", {"project": "p"}), ("azure", {}),
                                              ("aws", {"region": "us-east-1"})])
def test_a_cloud_system_needs_a_version_or_a_max_age(tmp_path, backend, options):
    def validate(**system) -> object:
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump({"suites": ["winomt-hi"],
                                        "systems": {"cloud": {"backend": backend, "options": options, **system}}}),
                        encoding="utf-8")
        return CliRunner().invoke(main, ["validate", "--config", str(path), "--no-data"])

    refused = validate()
    assert refused.exit_code == 2, refused.output
    assert "systems.cloud.version" in refused.output and "max_age" in refused.output
    assert "Traceback" not in refused.output
    assert validate(version="   ").exit_code == 2
    assert validate(version="v3 2026-12").exit_code == 0
    assert validate(max_age="30d").exit_code == 0
    assert validate(max_age="30 days").exit_code == 2


def test_max_age_expires_stored_translations(tmp_path, data_dir, ray_local):
    fresh = {"copy": {"backend": "identity", "version": "v1"}}
    assert sweep(live_config(tmp_path, fresh, name="a.yaml"), tmp_path / "a").sweep.sent == WINO_TEXTS
    assert sweep(live_config(tmp_path, fresh, name="b.yaml"), tmp_path / "b").sweep.sent == 0
    young = {"copy": {"backend": "identity", "version": "v1", "max_age": "1h"}}
    assert sweep(live_config(tmp_path, young, name="c.yaml"), tmp_path / "c").sweep.sent == 0
    time.sleep(1.5)  # timing: makes the stored rows older than 1 s; load only makes them older
    expired = {"copy": {"backend": "identity", "version": "v1", "max_age": "1s"}}
    again = sweep(live_config(tmp_path, expired, name="d.yaml"), tmp_path / "d")
    assert again.sweep.sent == WINO_TEXTS
    copied = rows(tmp_path / "d")
    assert copied["cached"].sum() == 0 and copied["translation"].null_count() == 0
