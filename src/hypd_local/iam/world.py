"""What IAM knows of the account's resources when it authorises a request: ARNs and tags.

The resources live in moto's backends (EC2, CloudFormation, FSx, IAM, AMP...) and in the EKS
and HyperPod emulators; this is the one place that reads them for authorisation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from hypd_local.iam.principals import Directory, partition_of


class EksFacts(Protocol):
    def cluster_facts(self, name: str) -> tuple[str, dict[str, str]] | None: ...

    def addon_facts(self, cluster_name: str, addon_name: str
                    ) -> tuple[str, dict[str, str]] | None: ...

    def access_entry_facts(self, cluster_name: str, principal_arn: str
                           ) -> tuple[str, dict[str, str]] | None: ...

    def pod_identity_facts(self, cluster_name: str, association_id: str
                           ) -> tuple[str, dict[str, str]] | None: ...


class HyperPodFacts(Protocol):
    def cluster_facts(self, name_or_arn: str) -> tuple[str, dict[str, str]] | None: ...

    def training_plan_arn(self, name_or_arn: str) -> str | None: ...

    def cluster_eks_arn(self, name_or_arn: str) -> str | None: ...

    def governance_facts(self, ident_or_arn: str) -> tuple[str, dict[str, str]] | None: ...


class World:
    def __init__(self, account_id: str, region: str, directory: Directory,
                 eks: EksFacts | None = None, hyperpod: HyperPodFacts | None = None) -> None:
        self.account_id = account_id
        self.region = region
        self.partition = partition_of(region)
        self.directory = directory
        self.eks = eks
        self.hyperpod = hyperpod

    def arn(self, service: str, resource: str, *, region: bool = True,
            account: bool = True) -> str:
        return (f"arn:{self.partition}:{service}:{self.region if region else ''}:"
                f"{self.account_id if account else ''}:{resource}")

    # ------------------------------------------------------------------ EC2
    def _ec2(self) -> Any:
        from moto.ec2.models import ec2_backends

        return ec2_backends[self.account_id][self.region]

    def ec2_tags(self, resource_id: str) -> dict[str, str]:
        tags = self._ec2().tags.get(resource_id) or {}
        return {str(k): str(v) for k, v in tags.items()}

    def ec2_arn(self, resource_id: str) -> tuple[str, str]:
        """(SAR resource type, ARN) of an EC2 resource id (``subnet-...``)."""
        prefix = resource_id.split("-", 1)[0]
        kind = _EC2_TYPES.get(prefix)
        if kind is None:
            raise KeyError(f"no EC2 resource type for id {resource_id!r}")
        return kind, self.arn("ec2", f"{kind}/{resource_id}")

    # ------------------------------------------------------------------ CloudFormation
    def stack_arn(self, name_or_id: str) -> str | None:
        from moto.cloudformation.models import cloudformation_backends

        backend = cloudformation_backends[self.account_id][self.region]
        for stack in list(backend.stacks.values()):
            if name_or_id in (stack.name, stack.stack_id) and stack.status != "DELETE_COMPLETE":
                return str(stack.stack_id)
        return None

    def stack_tags(self, arn: str) -> dict[str, str]:
        from moto.cloudformation.models import cloudformation_backends

        stack = cloudformation_backends[self.account_id][self.region].stacks.get(arn)
        return {str(k): str(v) for k, v in (getattr(stack, "tags", None) or {}).items()}

    # ------------------------------------------------------------------ FSx
    def fsx_tags(self, file_system_id: str) -> dict[str, str]:
        from moto.fsx.models import fsx_backends

        backend = fsx_backends[self.account_id][self.region]
        system = backend.file_systems.get(file_system_id)
        if system is None:
            return {}
        return {str(k): str(v) for k, v in
                backend.tagger.get_tag_dict_for_resource(system.resource_arn).items()}

    # ------------------------------------------------------------------ IAM and AMP
    def oidc_provider_tags(self, arn: str) -> dict[str, str] | None:
        """An IAM OIDC provider's tags; None when it does not exist."""
        from moto.iam.models import iam_backends

        provider = iam_backends[self.account_id][self.partition].open_id_providers.get(arn)
        if provider is None:
            return None
        return {str(t["Key"]): str(t.get("Value", "")) for t in provider.tags.values()}

    def amp_tags(self, arn: str) -> dict[str, str]:
        """The tags of an Amazon Managed Service for Prometheus resource (workspace...)."""
        from moto.amp.models import amp_backends

        backend = amp_backends[self.account_id][self.region]
        return {str(k): str(v) for k, v in backend.list_tags_for_resource(arn).items()}

    # ------------------------------------------------------------------ EKS and HyperPod
    def eks_cluster(self, name: str) -> tuple[str, Mapping[str, str] | None]:
        facts = self.eks.cluster_facts(name) if self.eks is not None else None
        if facts is None:
            return self.arn("eks", f"cluster/{name}"), None
        return facts

    def eks_addon(self, cluster: str, addon: str) -> tuple[str, Mapping[str, str] | None]:
        facts = self.eks.addon_facts(cluster, addon) if self.eks is not None else None
        if facts is None:
            return self.arn("eks", f"addon/{cluster}/{addon}/*"), None
        return facts

    def eks_pod_identity_association(self, cluster: str, association_id: str
                                     ) -> tuple[str, Mapping[str, str] | None]:
        facts = (self.eks.pod_identity_facts(cluster, association_id)
                 if self.eks is not None else None)
        if facts is None:
            return self.arn("eks", f"podidentityassociation/{cluster}/{association_id}"), None
        return facts

    def eks_access_entry(self, cluster: str, principal_arn: str
                         ) -> tuple[str, Mapping[str, str] | None]:
        facts = (self.eks.access_entry_facts(cluster, principal_arn)
                 if self.eks is not None else None)
        if facts is not None:
            return facts
        # access-entry/${ClusterName}/${IamIdentityType}/${IamIdentityAccountID}/
        # ${IamIdentityName}/${UUID}: the entry does not exist yet, its UUID is unknown.
        parts = principal_arn.split(":", 5)
        account = parts[4] if len(parts) == 6 else self.account_id
        kind, _, name = (parts[5] if len(parts) == 6 else "role/*").partition("/")
        return self.arn("eks", f"access-entry/{cluster}/{kind}/{account}/"
                               f"{name.rsplit('/', 1)[-1]}/*"), None

    def hyperpod_cluster(self, name_or_arn: str) -> tuple[str, Mapping[str, str] | None]:
        facts = (self.hyperpod.cluster_facts(name_or_arn)
                 if self.hyperpod is not None else None)
        if facts is not None:
            return facts
        if name_or_arn.startswith("arn:"):
            return name_or_arn, None
        # The ARN names the cluster's generated id, unknown for a cluster that does not exist.
        return self.arn("sagemaker", "cluster/*"), None

    def hyperpod_eks_arn(self, name_or_arn: str) -> str | None:
        """The EKS cluster a HyperPod cluster is orchestrated by (None: unknown)."""
        return self.hyperpod.cluster_eks_arn(name_or_arn) if self.hyperpod is not None else None

    def hyperpod_governed(self, kind: str, ident_or_arn: str
                          ) -> tuple[str, Mapping[str, str] | None]:
        """A scheduler config's or compute quota's ARN and tags (``kind``: the ARN's resource
        type); for one that does not exist, the ARN its id names."""
        facts = (self.hyperpod.governance_facts(ident_or_arn)
                 if self.hyperpod is not None else None)
        if facts is not None:
            return facts
        if ident_or_arn.startswith("arn:"):
            return ident_or_arn, None
        return self.arn("sagemaker", f"{kind}/{ident_or_arn}"), None

    def training_plan(self, name_or_arn: str) -> str:
        if name_or_arn.startswith("arn:"):
            return name_or_arn
        found = self.hyperpod.training_plan_arn(name_or_arn) if self.hyperpod else None
        return found or self.arn("sagemaker", f"training-plan/{name_or_arn}")


# EC2 id prefixes -> SAR resource types
_EC2_TYPES = {
    "vpc": "vpc", "subnet": "subnet", "rtb": "route-table", "igw": "internet-gateway",
    "nat": "natgateway", "eipalloc": "elastic-ip", "sg": "security-group",
    "vpce": "vpc-endpoint", "eni": "network-interface", "i": "instance", "vol": "volume",
    "acl": "network-acl", "pl": "prefix-list", "dopt": "dhcp-options",
}
