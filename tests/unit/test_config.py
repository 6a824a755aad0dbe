"""Each function's settings: parsed from its environment at init, missing variables named."""

from __future__ import annotations

import pytest

from hypd.config import (
    ApiSettings,
    CapacityTaskSettings,
    ConfigurationError,
    CreateTaskSettings,
    EventSettings,
)
from hypd.operations.models import OperationKind

BASE = {"TABLE_NAME": "hypd-table", "AWS_REGION": "us-west-2"}


def test_a_missing_variable_is_a_configuration_error_naming_it() -> None:
    with pytest.raises(ConfigurationError) as caught:
        CreateTaskSettings.from_env({**BASE, "EKS_CLUSTER_ROLE_ARN": "arn:aws:iam::1:role/e"})
    assert caught.value.details["variables"] == [
        "HYPERPOD_EXECUTION_ROLE_ARN",
        "DEPENDENCY_CHART",
    ]
    assert "HYPERPOD_EXECUTION_ROLE_ARN: is not set" in caught.value.message
    assert caught.value.code == "ConfigurationError"


def test_the_table_is_needed_by_every_function() -> None:
    with pytest.raises(ConfigurationError, match="TABLE_NAME"):
        CapacityTaskSettings.from_env({"HYPERPOD_EXECUTION_ROLE_ARN": "arn:aws:iam::1:role/h"})


def test_empty_optional_variables_are_unset_and_lists_are_split() -> None:
    settings = CreateTaskSettings.from_env({
        **BASE,
        "EKS_CLUSTER_ROLE_ARN": "arn:aws:iam::1:role/e",
        "HYPERPOD_EXECUTION_ROLE_ARN": "arn:aws:iam::1:role/h",
        "DEPENDENCY_CHART": "/opt/chart.tgz",
        "S3_CSI_DRIVER_ROLE_ARN": "",
        "KUBERNETES_ACCESS_ROLE_ARNS": "arn:aws:iam::1:role/a,,arn:aws:iam::1:role/b",
    })
    assert settings.s3_csi_driver_role_arn is None
    assert settings.kubernetes_access_roles == ("arn:aws:iam::1:role/a", "arn:aws:iam::1:role/b")


def test_the_region_falls_back_to_aws_default_region() -> None:
    settings = EventSettings.from_env({"TABLE_NAME": "t-1", "AWS_DEFAULT_REGION": "eu-west-1"})
    assert settings.region == "eu-west-1"
    assert settings.service_name == "hypd-cluster-events"


def test_the_api_reads_the_state_machine_of_each_kind_from_its_spec() -> None:
    settings = ApiSettings.from_env({
        **BASE,
        "CREATE_CLUSTER_STATE_MACHINE_ARN": "arn:aws:states:us-west-2:1:stateMachine:create",
        "DISCOVER_STATE_MACHINE_ARN": "",
    })
    assert settings.state_machines == {
        OperationKind.CREATE_CLUSTER: "arn:aws:states:us-west-2:1:stateMachine:create"
    }


def test_only_the_variables_names_are_read() -> None:
    # A variable spelled like a field (not like its variable) is not configuration
    settings = EventSettings.from_env({**BASE, "service_name": "other", "region": "eu-west-1"})
    assert settings.service_name == "hypd-cluster-events"
    assert settings.region == "us-west-2"
