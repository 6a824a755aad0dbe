"""`hypd local demo`, the README's main job: a whole create on the local cloud, identity
enforced, ending in the summary a user reads."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from hypd_cli.demo import IdentityTally
from tests.cli.conftest import RunCli


def test_the_demo_creates_a_cluster_with_every_function_under_its_own_role(
    run_cli: RunCli,
) -> None:
    demo = run_cli("local", "demo")

    log = re.search(r"Function logs and metrics: (\S+)", demo.out)
    assert log, demo.text
    Path(log.group(1)).unlink()
    assert demo.code == 0, demo.text
    assert re.search(r"Operation op-[0-9a-f]{32} \(create-cluster\): SUCCEEDED", demo.out)
    assert re.search(r"HyperPod cluster\s+hypd-demo\s+InService", demo.out)
    assert re.search(r"node\s+hyperpod-i-[0-9a-f]+\s+Ready, Schedulable", demo.out)
    assert re.search(r"Storage claim\s+default/hypd-shared\s+Bound", demo.out)
    # Every call was authorised under a function's or state machine's own role; none denied
    identity = re.search(r"IAM: (\d+) AWS calls, each authorised as the role of the function "
                         r"or state machine that made it; none denied\n  (.*)\n", demo.out)
    assert identity, demo.out
    roles = dict(part.rsplit(" ", 1) for part in identity.group(2).split(", "))
    # (CloudFormation's role names end in a generated suffix)
    assert {"hypd-ApiFunctionRole", "hypd-ClusterTasksFunctionRole",
            "hypd-CreateClusterStateMachineRole"} <= {r.rsplit("-", 1)[0] for r in roles}
    assert sum(int(n) for n in roles.values()) == int(identity.group(1))
    # And hypd published each transition of its operation and its cluster, once
    assert "  hypd Operation State Change: PENDING -> RUNNING -> SUCCEEDED\n" in demo.out
    assert "  hypd Cluster State Change: CREATING -> ACTIVE\n" in demo.out
    assert re.search(r"Done: cluster demo created in \d+m\d{2}s of virtual time", demo.out)


def test_the_identity_summary_names_what_iam_denied() -> None:
    tally = IdentityTally()
    role = "arn:aws:iam::123456789012:role/hypd-ClusterTasksFunctionRole"
    allowed = SimpleNamespace(principal=SimpleNamespace(arn=role), denial=None)
    denied = SimpleNamespace(principal=SimpleNamespace(arn=role), denial=SimpleNamespace(
        message="... is not authorized to perform: eks:CreateCluster on resource: ..."))
    for authorization in (allowed, allowed, denied):
        tally(authorization)

    summary = tally.summary()

    assert summary.splitlines() == [
        "IAM: 3 AWS calls, each authorised as the role of the function or state machine that "
        "made it; 1 denied: ... is not authorized to perform: eks:CreateCluster on resource: ...",
        "  hypd-ClusterTasksFunctionRole 3",
    ]
