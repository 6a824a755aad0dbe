"""What a cluster's API server says about its build: ``GET /version`` and the kubelet version
its nodes report, from the EKS cluster's Kubernetes and platform versions (DescribeCluster's
``version`` and ``platformVersion``).

EKS builds carry the release and a short commit: ``v1.33.4-eks-e386d34``. The commit here is
derived from the release and platform version, so one cluster always reports the same build.
"""

from __future__ import annotations

import hashlib

from hypd_local.emulator.eks_catalog import (
    DEFAULT_KUBERNETES_VERSION,
    PLATFORM_VERSIONS,
    SERVER_RELEASES,
    ServerRelease,
)


def _release(kubernetes_version: str) -> ServerRelease:
    release = SERVER_RELEASES.get(kubernetes_version)
    if release is None:  # a catalogue of other versions: the minor's first patch release
        return ServerRelease(f"{kubernetes_version}.0", "go1.24.6", "2025-01-01T00:00:00Z")
    return release


def _commit(patch: str, platform_version: str) -> str:
    return hashlib.sha1(f"{patch}/{platform_version}".encode(), usedforsecurity=False).hexdigest()


def git_version(kubernetes_version: str, platform_version: str | None = None) -> str:
    """``v<major>.<minor>.<patch>-eks-<short commit>``, as EKS's API servers and kubelets say."""
    patch = _release(kubernetes_version).patch
    platform = platform_version or PLATFORM_VERSIONS.get(kubernetes_version, "eks.1")
    return f"v{patch}-eks-{_commit(patch, platform)[:7]}"


def version_info(kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
                 platform_version: str | None = None) -> dict[str, str]:
    """The body of ``GET /version`` (kube-apiserver's ``version.Info``)."""
    release = _release(kubernetes_version)
    platform = platform_version or PLATFORM_VERSIONS.get(kubernetes_version, "eks.1")
    major, minor = kubernetes_version.split(".")[:2]
    info = {"major": major, "minor": minor}
    if (int(major), int(minor)) >= (1, 33):  # compatibility versions (KEP-4330) are reported
        info.update({"emulationMajor": major, "emulationMinor": minor,
                     "minCompatibilityMajor": major, "minCompatibilityMinor": str(int(minor) - 1)})
    info.update({
        "gitVersion": git_version(kubernetes_version, platform),
        "gitCommit": _commit(release.patch, platform),
        "gitTreeState": "clean",
        "buildDate": release.build_date,
        "goVersion": release.go_version,
        "compiler": "gc",
        "platform": "linux/amd64",
    })
    return info
