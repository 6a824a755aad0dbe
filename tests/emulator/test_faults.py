"""The Faults API: deterministic, thread-safe, JSON round trips and admin routes."""

from __future__ import annotations

import json
import threading

import pytest

from hypd_local.emulator.faults import Faults, admin_routes
from tests.emulator import model


def test_each_call_consumes_one_in_order() -> None:
    faults = Faults()
    faults.fail("sagemaker", "CreateCluster", code="ThrottlingException", times=2)
    faults.fail("sagemaker", "CreateCluster", code="ResourceLimitExceeded", times=1)
    seen = []
    for _ in range(4):
        fault = faults.take("sagemaker", "CreateCluster")
        seen.append(fault.code if fault else None)
    assert seen == ["ThrottlingException", "ThrottlingException", "ResourceLimitExceeded", None]
    assert [f["code"] for f in faults.fired] == seen[:3]


def test_matching_is_by_service_and_operation() -> None:
    faults = Faults()
    faults.fail("eks", "DescribeCluster")
    assert faults.take("sagemaker", "DescribeCluster") is None
    assert faults.take("eks", "ListClusters") is None
    assert faults.take("EKS", "DescribeCluster") is not None


def test_wildcard_and_unlimited() -> None:
    faults = Faults()
    faults.fail("eks", "*", code="InternalFailure", times=None)
    for operation in ("ListClusters", "CreateAddon", "DescribeAddon"):
        fault = faults.take("eks", operation)
        assert fault is not None
        assert fault.operation == operation
    assert faults.pending()[0]["times"] is None
    assert faults.clear() == 1
    assert faults.take("eks", "ListClusters") is None


def test_clear_by_service_or_operation() -> None:
    faults = Faults()
    faults.fail("eks", "ListClusters")
    faults.fail("eks", "CreateAddon")
    faults.fail("sagemaker", "CreateCluster")
    assert faults.clear(service="eks", operation="CreateAddon") == 1
    assert faults.clear(service="eks") == 1
    assert [f["service"] for f in faults.pending()] == ["sagemaker"]


@pytest.mark.parametrize(("kwargs", "text"), [
    ({"times": 0}, "times"),
    ({"times": -1}, "times"),
    ({"status": 200}, "status"),
    ({"code": ""}, "required"),
])
def test_bad_arguments(kwargs: dict[str, object], text: str) -> None:
    with pytest.raises(ValueError, match=text):
        Faults().fail("eks", "ListClusters", **kwargs)  # type: ignore[arg-type]


def test_errors_carry_the_model_status() -> None:
    faults = Faults()
    faults.fail("eks", "CreateAddon", code="ThrottlingException")
    faults.fail("sagemaker", "CreateCluster", code="ThrottlingException")
    faults.fail("sagemaker", "CreateCluster", code="InternalFailure")
    faults.fail("sagemaker", "CreateCluster", code="ResourceLimitExceeded", status=503,
                message="no capacity")
    eks_error = faults.error_for(model("eks"), "CreateAddon")
    assert eks_error is not None
    assert (eks_error.code, eks_error.status) == ("ThrottlingException", 429)
    statuses = []
    for _ in range(3):
        error = faults.error_for(model("sagemaker"), "CreateCluster")
        assert error is not None
        statuses.append((error.code, error.status, error.message))
    assert statuses == [("ThrottlingException", 400, "Rate exceeded"),
                        ("InternalFailure", 500, "An internal error occurred."),
                        ("ResourceLimitExceeded", 503, "no capacity")]
    assert faults.error_for(model("sagemaker"), "CreateCluster") is None


def test_thread_safe_exact_count() -> None:
    faults = Faults()
    faults.fail("eks", "ListClusters", times=500)
    hits: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        count = 0
        for _ in range(200):
            if faults.take("eks", "ListClusters") is not None:
                count += 1
        with lock:
            hits.append(count)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(hits) == 500
    assert faults.pending() == []


def test_json_round_trip() -> None:
    faults = Faults()
    faults.fail("eks", "ListClusters", times=3)
    faults.fail("sagemaker", "CreateCluster", code="InternalFailure", times=None, status=500)
    data = json.loads(json.dumps(faults.to_json()))
    copy = Faults.from_json(data)
    assert [(f["service"], f["operation"], f["code"], f["times"], f["status"])
            for f in copy.pending()] == [
        ("eks", "ListClusters", "ThrottlingException", 3, None),
        ("sagemaker", "CreateCluster", "InternalFailure", None, 500)]


def test_add_json_rejects_unknown_fields() -> None:
    with pytest.raises(ValueError, match="unknown"):
        Faults().add_json({"service": "eks", "operation": "X", "tims": 2})


def test_admin_routes() -> None:
    faults = Faults()
    routes = admin_routes(faults)
    assert set(routes) == {("GET", "/_local/faults"), ("POST", "/_local/faults"),
                           ("DELETE", "/_local/faults")}
    status, body = routes[("POST", "/_local/faults")](
        {"service": "sagemaker", "operation": "CreateCluster", "code": "ResourceLimitExceeded",
         "times": 2})
    assert status == 201
    assert body["faults"][0]["times"] == 2
    status, body = routes[("POST", "/_local/faults")](
        [{"service": "eks", "operation": "ListClusters"}])
    assert status == 201
    status, body = routes[("GET", "/_local/faults")](None)
    assert status == 200
    assert [f["operation"] for f in body["faults"]] == ["CreateCluster", "ListClusters"]
    status, body = routes[("POST", "/_local/faults")]({"service": "eks", "times": "x"})
    assert status == 400
    assert "message" in body
    assert routes[("DELETE", "/_local/faults")](None) == (200, {"cleared": 2})
    assert faults.pending() == []


def test_has_tells_whether_a_service_has_pending_faults() -> None:
    faults = Faults()
    assert not faults.has("ec2")
    faults.fail("ec2", "DescribeVpcs", code="RequestLimitExceeded")
    assert faults.has("EC2")
    assert not faults.has("s3")
    error = faults.error_for(model("ec2"), "DescribeVpcs")
    assert error is not None
    assert (error.code, error.status) == ("RequestLimitExceeded", 503)
    assert not faults.has("ec2")
