"""The local cloud's HyperPod catalogue follows EC2's zone offerings (docs/emulator.md)."""

from __future__ import annotations

from moto.ec2.models.instance_types import INSTANCE_TYPE_OFFERINGS

from hypd_local.emulation import ec2_catalog
from hypd_local.emulator.hyperpod_catalog import Catalog, InstanceTypeInfo


def test_a_regions_zones_offer_exactly_what_ec2_offers() -> None:
    # Given a seeded catalogue and EC2 facts for us-west-2
    base = Catalog.default()
    offerings = {"us-west-2a": {"g6.4xlarge", "g7x.2xlarge", "t3.micro"}, "us-west-2b": set()}
    ec2_types = {
        "g7x.2xlarge": {"NetworkInfo": {"MaximumNetworkCards": 2, "EfaSupported": True}},
    }
    # When the catalogue is re-based on EC2
    catalog = base.with_ec2_offerings(
        "us-west-2", ["ml.g6.4xlarge", "ml.g7x.2xlarge", "ml.c5.large"], offerings, ec2_types
    )
    # Then the Region's zones offer the candidates EC2 offers there, and nothing else
    assert catalog.zones_in("us-west-2") == ["us-west-2a", "us-west-2b"]
    assert catalog.zones["us-west-2a"] == {"ml.g6.4xlarge", "ml.g7x.2xlarge"}
    assert catalog.zones["us-west-2b"] == frozenset()
    # And a new type takes EC2's network facts; seeded types and other Regions are kept
    assert catalog.instance_types["ml.g7x.2xlarge"] == InstanceTypeInfo("ml.g7x.2xlarge", 2, True)
    assert catalog.instance_types["ml.p5.48xlarge"] == base.instance_types["ml.p5.48xlarge"]
    assert catalog.zones["us-east-1a"] == base.zones["us-east-1a"]
    assert catalog.training_plans == base.training_plans


def test_the_local_clouds_catalogue_agrees_with_motos_offerings() -> None:
    # Given moto's EC2 offerings in us-west-2 and the local cloud's HyperPod catalogue
    ec2 = {
        (f"ml.{o['InstanceType']}", o["Location"])
        for o in INSTANCE_TYPE_OFFERINGS["availability-zone"]["us-west-2"]
    }
    catalog = ec2_catalog("us-west-2")
    hyperpod = {(t, zone) for zone in catalog.zones_in("us-west-2") for t in catalog.zones[zone]}
    # Then HyperPod offers a candidate type in a zone exactly when EC2 does
    assert hyperpod
    assert hyperpod <= ec2
    assert {(t, z) for t, z in ec2 if t in catalog.instance_types} <= hyperpod
    # And every seeded plan's zone offers its type
    for plan in catalog.training_plans:
        assert (plan.instance_type, plan.availability_zone) in hyperpod
