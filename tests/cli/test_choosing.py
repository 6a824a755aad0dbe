"""Choosing an instance type (`hypd_cli.choosing`, `Prompter.choose_instance_type`): order,
sections, search, descriptions and the question, on the catalogue the API answers for the
local cloud's Region (``region_types``, conftest.py), and training plans shaped as GET
/catalog/training-plans answers them."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest

from hypd_cli.choosing import (
    InstanceType,
    accelerators,
    covering_plans,
    describe_plan,
    describe_type,
    search,
    sections,
)
from hypd_cli.cli import UsageError
from hypd_cli.prompts import Prompter
from tests.cli.conftest import piped
from tests.unit.support import ACCOUNT, REGION

ZONE = "us-west-2a"


@pytest.fixture
def zone_types(region_types: list[InstanceType]) -> list[InstanceType]:
    """GET /catalog/instance-types?availabilityZone=us-west-2a."""
    return [t for t in region_types if ZONE in t["availabilityZones"]]


def plan(name: str, instance_type: str, zone: str, status: str = "Active",
         available: int = 4, total: int = 4) -> dict[str, Any]:
    return {
        "name": name,
        "arn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-plan/{name}",
        "status": status,
        "instanceTypes": [instance_type],
        "availabilityZones": [zone],
        "totalInstanceCount": total,
        "availableInstanceCount": available,
        "inUseInstanceCount": total - available,
        "startTime": "2026-01-15T09:00:00Z",
        "endTime": "2026-02-14T09:00:00Z",
        "reservedCapacities": [],
        "targetResources": ["hyperpod-cluster"],
    }


def names(types: list[InstanceType]) -> list[str]:
    return [t["instanceType"] for t in types]


def flat(types: list[InstanceType]) -> list[str]:
    return [name for section in sections(types) for name in names(list(section.types))]


# -- order and sections -------------------------------------------------------------------------


def test_accelerated_types_come_first_one_section_per_accelerator_then_the_cpu_only_ones(
    zone_types: list[InstanceType],
) -> None:
    # Given the zone's types, as the API lists them (by name)
    # When they are put in sections
    found = sections(zone_types)

    # Then every section but the last is one accelerator model, the last the CPU-only types
    headings = [s.heading for s in found]
    assert headings[-1] == "CPU only"
    assert all(s.accelerator is not None for s in found[:-1])
    assert len(set(headings)) == len(headings)
    assert "NVIDIA H100 (80 GiB)" in headings
    assert headings.index("NVIDIA A100 (80 GiB)") != headings.index("NVIDIA A100 (40 GiB)")
    # the most memory per GPU first
    memory = [s.accelerator.memory_mib or 0 for s in found[:-1] if s.accelerator]
    assert memory == sorted(memory, reverse=True)
    cpu_only = found[-1].types
    assert cpu_only
    assert not any(t["gpus"] or t["neuronDevices"] for t in cpu_only)
    # and nothing is lost or repeated
    assert sorted(flat(zone_types)) == sorted(names(zone_types))


def test_within_a_section_the_types_go_by_accelerator_count_then_vcpus(
    zone_types: list[InstanceType],
) -> None:
    h100 = next(s for s in sections(zone_types) if s.heading == "NVIDIA H100 (80 GiB)")
    assert names(list(h100.types)) == ["ml.p5.4xlarge", "ml.p5.48xlarge"]

    l4 = next(s for s in sections(zone_types) if s.heading.startswith("NVIDIA L4 "))
    sizes = [(sum(g["count"] for g in t["gpus"]), t["vCpus"]) for t in l4.types]
    assert sizes == sorted(sizes)
    assert names(list(l4.types))[:3] == ["ml.g6.xlarge", "ml.g6.2xlarge", "ml.g6.4xlarge"]
    assert names(list(l4.types))[-1] == "ml.g6.48xlarge"


def test_neuron_devices_come_after_the_gpus_under_aws(region_types: list[InstanceType]) -> None:
    # us-west-2a offers no Trainium: the Region's other zones do
    found = sections(region_types)
    headings = [s.heading for s in found]

    trainium = headings.index("AWS Trainium (32 GiB)")
    assert all(s.accelerator and s.accelerator.kind == "gpu" for s in found[:trainium])
    assert names(list(found[trainium].types)) == ["ml.trn1.32xlarge", "ml.trn1n.32xlarge"]


def test_a_zone_with_cpu_only_types_has_one_section() -> None:
    cpu = [{"instanceType": "ml.m5.large", "vCpus": 2, "memoryMiB": 8192, "gpus": [],
            "neuronDevices": []},
           {"instanceType": "ml.c5.large", "vCpus": 2, "memoryMiB": 4096, "gpus": [],
            "neuronDevices": []}]

    (only,) = sections(cpu)

    assert (only.heading, names(list(only.types))) == ("CPU only",
                                                       ["ml.c5.large", "ml.m5.large"])


# -- search -------------------------------------------------------------------------------------


def test_h100_finds_the_p5_types(zone_types: list[InstanceType]) -> None:
    assert names(search(zone_types, "h100")) == ["ml.p5.48xlarge", "ml.p5.4xlarge"]
    assert names(search(zone_types, "H100 48xlarge")) == ["ml.p5.48xlarge"]  # words: AND


def test_part_of_a_name_matches_as_a_substring(zone_types: list[InstanceType]) -> None:
    g6 = names(search(zone_types, "g6"))
    assert {n.split(".")[1] for n in g6} == {"g6", "g6e"}  # ml.g6e contains g6
    assert "ml.g6.4xlarge" in g6
    assert {n.split(".")[1] for n in search(zone_types, "g6.") for n in [n["instanceType"]]} \
        == {"g6"}
    assert names(search(zone_types, "ML.P5.48")) == ["ml.p5.48xlarge"]  # case is ignored


def test_manufacturers_and_what_a_type_has_are_words_too(
    zone_types: list[InstanceType], region_types: list[InstanceType]
) -> None:
    nvidia = search(zone_types, "nvidia")
    assert nvidia
    assert all(t["gpus"] for t in nvidia)
    assert search(zone_types, "gpu") == nvidia
    assert names(search(region_types, "trainium")) == ["ml.trn1.32xlarge", "ml.trn1n.32xlarge"]
    assert search(region_types, "aws neuron") == search(region_types, "trainium")
    assert search(zone_types, "trainium") == []  # none offered in us-west-2a
    cpu = search(zone_types, "cpu")
    assert cpu
    assert not any(t["gpus"] or t["neuronDevices"] for t in cpu)
    l4, l4_efa = search(zone_types, "l4"), search(zone_types, "efa l4")
    assert l4_efa
    assert all(t["efaSupported"] for t in l4_efa)
    assert set(names(l4_efa)) < set(names(l4))  # the small ml.g6 sizes have no EFA


def test_no_match_and_no_words_find_nothing(zone_types: list[InstanceType]) -> None:
    assert search(zone_types, "h100 cpu") == []
    assert search(zone_types, "tpu") == []
    assert search(zone_types, "  ") == []
    assert search(zone_types, "xlarge nvidia") == search(zone_types, "nvidia")


# -- descriptions -------------------------------------------------------------------------------


def test_a_type_is_described_in_capacity_terms_with_the_plans_that_cover_it(
    zone_types: list[InstanceType],
) -> None:
    p5 = next(t for t in zone_types if t["instanceType"] == "ml.p5.48xlarge")
    plans = [
        plan("p5-active", "ml.p5.48xlarge", ZONE, available=3),
        plan("p5-soon", "ml.p5.48xlarge", ZONE, status="Scheduled"),
        plan("p5-gone", "ml.p5.48xlarge", ZONE, status="Expired"),
        plan("p5-elsewhere", "ml.p5.48xlarge", "us-west-2b"),
        plan("g6-plan", "ml.g6.4xlarge", ZONE),
    ]

    covering = covering_plans(plans, ZONE, "ml.p5.48xlarge")

    assert [p["name"] for p in covering] == ["p5-active", "p5-soon"]
    assert describe_type(p5, covering) == (
        "ml.p5.48xlarge         8 x NVIDIA H100 (80 GiB), 192 vCPU, 2048 GiB, "
        "EFA (32 network cards); "
        "training plan p5-active (Active, 3/4 available, 2026-01-15 09:00:00 to "
        "2026-02-14 09:00:00); "
        "training plan p5-soon (Scheduled, 4/4 available, 2026-01-15 09:00:00 to "
        "2026-02-14 09:00:00)")
    assert describe_plan(plans[0]).startswith("training plan p5-active (Active, 3/4")


def test_other_kinds_of_type_are_described_too(
    zone_types: list[InstanceType], region_types: list[InstanceType]
) -> None:
    by_name = {t["instanceType"]: t for t in region_types}

    assert describe_type(by_name["ml.g6.4xlarge"], width=0) == (
        "ml.g6.4xlarge 1 x NVIDIA L4 (22.4 GiB), 16 vCPU, 64 GiB")
    assert describe_type(by_name["ml.trn1.32xlarge"], width=0) == (
        "ml.trn1.32xlarge 16 x AWS Trainium (32 GiB), 128 vCPU, 512 GiB, "
        "EFA (8 network cards)")
    assert describe_type(by_name["ml.c5.large"], width=0) == "ml.c5.large 2 vCPU, 4 GiB"
    assert accelerators(by_name["ml.c5.large"]) == "-"
    assert describe_type({"instanceType": "ml.new.xlarge"}, width=0) == (
        "ml.new.xlarge ? vCPU, -")  # offered, not described by EC2


# -- the question (Prompter.choose_instance_type) -----------------------------------------------


def choose(types: list[InstanceType], *answers: str,
           plans: tuple[dict[str, Any], ...] = ()) -> tuple[InstanceType, str]:
    """Ask the question with ``answers`` piped: (the type chosen, the transcript)."""
    out = io.StringIO()
    ask = Prompter(io.StringIO(piped(answers)), out)
    chosen = ask.choose_instance_type(f"Instance type (offered in {ZONE})", types, ZONE, plans)
    return chosen, out.getvalue()


def numbered(transcript: str, name: str) -> list[str]:
    """The numbers ``name`` was shown with, in order."""
    return re.findall(rf"^\s+(\d+)\) {re.escape(name)} ", transcript, re.M)


def test_the_question_lists_accelerated_types_by_accelerator_and_sums_up_the_cpu_only_ones(
    zone_types: list[InstanceType],
) -> None:
    cpu_only = sections(zone_types)[-1].types
    accelerated = len(zone_types) - len(cpu_only)
    p5 = plan("p5-active", "ml.p5.48xlarge", ZONE)

    chosen, asked = choose(zone_types, "1", plans=(p5,))

    assert asked.startswith("Instance type (offered in us-west-2a):\n  NVIDIA ")
    assert re.search(r"^  NVIDIA H100 \(80 GiB\)\n\s+\d+\) ml\.p5\.4xlarge .*\n\s+\d+\) "
                     r"ml\.p5\.48xlarge .*; training plan p5-active \(Active, 4/4", asked, re.M)
    assert f"  {len(cpu_only)} CPU-only types: type cpu to list them" in asked
    assert cpu_only[0]["instanceType"] + " " not in asked
    assert f"Choose 1-{accelerated}, a type, or words to narrow: 1\n" in asked  # echoed
    assert chosen == sections(zone_types)[0].types[0]


def test_typing_h100_narrows_the_list_and_a_number_of_it_picks_ml_p5_48xlarge(
    zone_types: list[InstanceType],
) -> None:
    chosen, asked = choose(zone_types, "h100", "2")

    assert chosen["instanceType"] == "ml.p5.48xlarge"
    narrowed = asked.split("2 types match 'h100':\n", 1)[1]
    assert narrowed.startswith("  NVIDIA H100 (80 GiB)\n    1) ml.p5.4xlarge ")
    assert "    2) ml.p5.48xlarge " in narrowed
    assert "Choose 1-2, a type, or words to narrow: 2" in narrowed


def test_a_name_picks_a_type_even_one_not_listed_and_the_only_match_is_picked(
    zone_types: list[InstanceType],
) -> None:
    assert choose(zone_types, "ml.c5.large")[0]["instanceType"] == "ml.c5.large"

    chosen, asked = choose(zone_types, "p5.48")

    assert chosen["instanceType"] == "ml.p5.48xlarge"
    assert "  the only match: ml.p5.48xlarge " in asked


def test_no_match_a_wrong_number_or_an_empty_answer_show_the_list_again(
    zone_types: list[InstanceType],
) -> None:
    chosen, asked = choose(zone_types, "tpu", "999", "g6.", "", "cpu", "ml.g6.4xlarge")

    assert chosen["instanceType"] == "ml.g6.4xlarge"
    assert "  no instance type matches 'tpu'; all of them:" in asked
    assert "  answer a number from 1 to " in asked
    # the whole list: first, after "tpu", after the empty answer
    assert len(numbered(asked, "ml.p5.48xlarge")) == 3
    # "g6." shows the ml.g6 types numbered from 1 (the third list); "cpu" the CPU-only ones
    assert numbered(asked, "ml.g6.xlarge")[2] == "1"
    assert len(numbered(asked, "ml.c5.large")) == 1
    assert "\n  CPU only\n" in asked


def test_answers_that_run_out_are_a_usage_error(zone_types: list[InstanceType]) -> None:
    with pytest.raises(UsageError, match="end of input"):
        choose(zone_types, "h100")
