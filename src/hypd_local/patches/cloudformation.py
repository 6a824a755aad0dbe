"""CloudFormation: stacks authorised as their role, tagged and deleted as CloudFormation does.

``Stack.create_resources`` / ``Stack.update``: the calls CloudFormation makes for each resource
are authorised as the stack's role (hypd_local.iam.stacks); a denied one fails the resource and
rolls the stack back. The EC2 resources get the stack's tags. ``ResourceMap.delete``: the EC2
types moto's CloudFormation cannot delete (routes, associations, endpoints, NAT gateways,
addresses, route tables, gateways) are deleted through the EC2 backend.

``Stack.delete`` / ``CloudFormationBackend.delete_stack`` (DeleteStack): resources are deleted
in reverse dependency order (a resource once nothing left in the stack refers to it: ``Ref``,
``Fn::GetAtt``, ``Fn::Sub``, ``DependsOn``). A deletion the service refuses (EC2's
DependencyViolation while a network interface holds a subnet or group) is the resource's
DELETE_FAILED with the service's message as its status reason, what it depends on is left
alone, and the stack is DELETE_FAILED ("The following resource(s) failed to delete: [...]"),
still listed and described; a later DeleteStack retries what is left, as CloudFormation does.
moto instead dropped the stack and answered DeleteStack with the refusal.

``Stack.parse_template``: a JSON template is read as JSON, as CloudFormation reads it. moto
reads every template with PyYAML first (JSON is YAML), in pure Python: about 50 ms for the
network stack of a create, 4% of the process with fifty creates at once. A template that is not
JSON is read as before.
"""

from __future__ import annotations

import re
from typing import Any

from hypd_local.documents import json_first
from hypd_local.iam.stacks import StackResource
from hypd_local.patches.engine import active, replace


def _stack_resources(stack: Any, names: list[str] | None = None) -> list[StackResource]:
    """The stack's resources (or those named) in the order moto made them, properties
    resolved; those moto skips (SecurityGroupEgress) last."""
    from moto.cloudformation.parsing import clean_json

    resource_map = stack.resource_map
    template = stack.template_dict.get("Resources") or {}
    made = [n for n in resource_map._parsed_resources if n in template]
    ordered = made + [n for n in template if n not in made]
    found = []
    for name in ordered:
        if names is not None and name not in names:
            continue
        declared = template[name]
        try:
            properties = clean_json(declared.get("Properties") or {}, resource_map)
        except Exception:  # a reference moto could not resolve (a skipped resource)
            properties = declared.get("Properties") or {}
        physical = resource_map._parsed_resources.get(name)
        found.append(StackResource(name, str(declared.get("Type")), properties,
                                   getattr(physical, "physical_resource_id", None)))
    return found


def _resource_event(stack: Any, resource: str, rtype: str, status: str, reason: str) -> None:
    from moto.cloudformation.models import Event

    stack.events.append(Event(stack.stack_id, stack.name, resource, "", rtype, status, reason,
                              None))


# EC2 resources CloudFormation tags with the stack's tags: id prefixes
_EC2_TAGGED_PREFIXES = frozenset({"vpc", "subnet", "rtb", "igw", "nat", "eipalloc", "sg",
                                  "vpce"})


def patch_cloudformation() -> None:
    """moto makes a stack's resources in its backends, authorising nothing: the local cloud
    authorises CloudFormation's calls for each (as the stack's role) afterwards, and a denied
    one fails the resource and rolls the stack back, as on AWS (hypd_local.iam.stacks)."""
    from moto.cloudformation import models, parsing

    create_resources = models.Stack.create_resources
    update = models.Stack.update

    def refusal(stack: Any, names: list[str] | None) -> tuple[str, str] | None:
        engine = active()
        if engine is None:
            return None
        tags = {str(k): str(v) for k, v in (stack.tags or {}).items()}
        return engine.stack_refusal(stack.role_arn, _stack_resources(stack, names), tags)

    def tag_like_cloudformation(stack: Any) -> None:
        # CloudFormation puts the stack's tags on every resource that takes tags; moto only
        # on some EC2 types (not on Elastic IPs, for one).
        from moto.ec2.models import ec2_backends

        backend = ec2_backends[stack.account_id][stack.region_name]
        tags = dict(stack.resource_map.tags)
        for name, resource in list(stack.resource_map._parsed_resources.items()):
            # an Elastic IP's physical id is its address; its tags are on its allocation
            ident = (getattr(resource, "allocation_id", None) or getattr(resource, "id", None)
                     or getattr(resource, "physical_resource_id", None))
            declared = (stack.template_dict.get("Resources") or {}).get(name) or {}
            if (isinstance(ident, str) and str(declared.get("Type", "")).startswith(
                    "AWS::EC2::") and ident.split("-", 1)[0] in _EC2_TAGGED_PREFIXES):
                backend.create_tags([ident], {**tags, "aws:cloudformation:logical-id": name})

    def patched_create(self: Any) -> None:
        create_resources(self)
        tag_like_cloudformation(self)
        refused = refusal(self, None)
        if refused is None:
            return
        resource, reason = refused
        rtype = str(self.template_dict["Resources"][resource].get("Type"))
        # moto's last CREATE_COMPLETE event was never CloudFormation's
        if self.events and self.events[-1].resource_status == "CREATE_COMPLETE":
            self.events.pop()
        _resource_event(self, resource, rtype, "CREATE_FAILED", reason)
        self._add_stack_event("ROLLBACK_IN_PROGRESS", resource_status_reason=(
            f"The following resource(s) failed to create: [{resource}]. Rollback requested "
            "by user."))
        self.resource_map.delete()
        # Nothing is left: no outputs (moto would make a resource again to read one).
        self.resource_map._resource_json_map = {}
        self.output_map = parsing.OutputMap(self.resource_map, {}, self.stack_id)
        self.status = "ROLLBACK_COMPLETE"
        self._add_stack_event("ROLLBACK_COMPLETE")

    def patched_update(self: Any, template: str, role_arn: str | None = None,
                       parameters: dict[str, Any] | None = None,
                       tags: dict[str, str] | None = None) -> None:
        before_template, before_role = self.template, self.role_arn
        before = set(self.template_dict.get("Resources") or {})
        update(self, template, role_arn, parameters, tags)
        tag_like_cloudformation(self)
        added = [n for n in self.template_dict.get("Resources") or {} if n not in before]
        refused = refusal(self, added) if added else None
        if refused is None:
            return
        resource, reason = refused
        rtype = str(self.template_dict["Resources"][resource].get("Type"))
        _resource_event(self, resource, rtype, "CREATE_FAILED", reason)
        self._add_stack_event("UPDATE_ROLLBACK_IN_PROGRESS", resource_status_reason=(
            f"The following resource(s) failed to create: [{resource}]."))
        # Back to the template before: moto removes what the update added (its own events
        # of that inner update are not CloudFormation's).
        kept = len(self.events)
        update(self, before_template, before_role, parameters, None)
        del self.events[kept:]
        self.status = "UPDATE_ROLLBACK_COMPLETE"
        self._add_stack_event("UPDATE_ROLLBACK_COMPLETE")

    parse_template = models.Stack.parse_template

    def parse_json_as_json(template: str) -> dict[str, Any]:
        if active() is None:
            return parse_template(template)
        parsed: dict[str, Any] = json_first(template, parse_template)
        return parsed

    replace(models.Stack, "parse_template", staticmethod(parse_json_as_json))
    replace(models.Stack, "create_resources", patched_create)
    replace(models.Stack, "update", patched_update)
    replace(parsing.ResourceMap, "delete", _delete_stack_resources)
    _patch_delete_stack()


class _DeleteFailed(Exception):
    """A stack's deletion ended DELETE_FAILED: the backend keeps the stack."""


def _patch_delete_stack() -> None:
    from moto.cloudformation import models

    delete_stack = models.CloudFormationBackend.delete_stack

    def patched_stack_delete(self: Any) -> None:
        self._add_stack_event("DELETE_IN_PROGRESS", resource_status_reason="User Initiated")
        failed = _delete_in_dependency_order(self)
        if failed:
            reason = f"The following resource(s) failed to delete: [{', '.join(failed)}]. "
            self.status = "DELETE_FAILED"
            self.stack_status_reason = reason
            self._add_stack_event("DELETE_FAILED", resource_status_reason=reason)
            raise _DeleteFailed(self.stack_id)
        self.stack_status_reason = None
        self._add_stack_event("DELETE_COMPLETE")
        self.status = "DELETE_COMPLETE"

    def patched_delete_stack(self: Any, name_or_stack_id: str) -> None:
        stack = self.stacks.get(name_or_stack_id) or next(
            (s for s in self.stacks.values() if s.name == name_or_stack_id), None)
        try:
            delete_stack(self, name_or_stack_id)
        except _DeleteFailed:
            assert stack is not None
            self.stacks[stack.stack_id] = stack  # moto took it out before deleting it

    replace(models.Stack, "delete", patched_stack_delete)
    replace(models.CloudFormationBackend, "delete_stack", patched_delete_stack)


def _references(declared: Any) -> set[str]:
    """The logical ids a resource's declaration refers to."""
    found: set[str] = set()
    if isinstance(declared, dict):
        for key, value in declared.items():
            if key == "Ref" and isinstance(value, str):
                found.add(value)
            elif key == "Fn::GetAtt":
                target = value[0] if isinstance(value, list) else str(value).split(".")[0]
                found.add(str(target))
            elif key == "Fn::Sub":
                text = value[0] if isinstance(value, list) else value
                found |= {ref.split(".")[0] for ref in re.findall(r"\$\{([^}!]+)\}", str(text))}
                found |= _references(value[1] if isinstance(value, list) else None)
            elif key == "DependsOn":
                found |= {value} if isinstance(value, str) else set(value)
            else:
                found |= _references(value)
    elif isinstance(declared, list):
        for item in declared:
            found |= _references(item)
    return found


def _delete_in_dependency_order(stack: Any) -> list[str]:
    """Delete the stack's resources, each once no resource left refers to it; the logical ids
    whose deletion was refused (each gets its DELETE_FAILED event), in the order tried."""
    resource_map = stack.resource_map
    declared = resource_map._resource_json_map
    left = [n for n in resource_map._parsed_resources if n in declared
            and declared[n].get("DeletionPolicy") != "Retain"]
    needs = {n: _references(declared[n]) & set(left) - {n} for n in left}
    failed: list[str] = []
    while True:
        ready = [n for n in reversed(left) if n not in failed
                 and not any(n in needs[other] for other in left if other != n)]
        if not ready:
            return failed
        for name in ready:
            try:
                _delete_ec2_resource(resource_map, name)
            except Exception as exc:  # the service refused: CloudFormation reports it
                failed.append(name)
                _resource_event(stack, name, str(declared[name].get("Type")), "DELETE_FAILED",
                                _refusal_reason(exc))
            else:
                left.remove(name)
                resource_map._parsed_resources.pop(name, None)
                # gone from the stack (moto would make a declared resource again to list it)
                resource_map._resource_json_map = {
                    k: v for k, v in resource_map._resource_json_map.items() if k != name}


def _refusal_reason(exc: Exception) -> str:
    """The status reason CloudFormation gives a refused deletion: the service's message with
    its code, as CloudFormation quotes EC2 (e.g. "The subnet 'subnet-...' has dependencies and
    cannot be deleted. (Service: Ec2, Status Code: 400, ...)")."""
    code = getattr(exc, "code", None) or type(exc).__name__
    message = getattr(exc, "message", None) or str(exc)
    return f"{message} (Service: Ec2, Status Code: 400, Error Code: {code})"


def _delete_ec2_resource(resource_map: Any, name: str) -> None:
    """Delete one resource of a stack; the EC2 types moto's CloudFormation cannot delete
    through the EC2 backend, the others as moto does."""
    from moto.cloudformation.parsing import clean_json
    from moto.ec2.models import ec2_backends

    declared = resource_map._resource_json_map[name]
    kind = str(declared.get("Type"))
    resource = resource_map._parsed_resources.get(name)
    ec2 = ec2_backends[resource_map._account_id][resource_map._region_name]
    props = clean_json(declared.get("Properties") or {}, resource_map)
    ident = str(getattr(resource, "id", None) or getattr(resource, "physical_resource_id", ""))
    if kind == "AWS::EC2::Route":
        ec2.delete_route(props["RouteTableId"], props.get("DestinationCidrBlock"))
    elif kind == "AWS::EC2::SubnetRouteTableAssociation":
        table = ec2.get_route_table(props["RouteTableId"])
        for association, subnet in list(table._associations.items()):
            if subnet == props["SubnetId"]:
                ec2.disassociate_route_table(association)
    elif kind == "AWS::EC2::VPCGatewayAttachment":
        ec2.detach_internet_gateway(props["InternetGatewayId"], props["VpcId"])
    elif kind == "AWS::EC2::VPCEndpoint":
        ec2.delete_vpc_endpoints([ident])
    elif kind == "AWS::EC2::NatGateway":
        gateway = ec2.delete_nat_gateway(ident)
        # its interface goes with it (moto keeps it, and it would hold the subnet)
        ec2.enis.pop(gateway._eni.id, None)
    elif kind == "AWS::EC2::EIP":
        ec2.release_address(allocation_id=getattr(resource, "allocation_id", None))
    elif kind == "AWS::EC2::RouteTable":
        ec2.delete_route_table(ident)
    elif kind == "AWS::EC2::InternetGateway":
        ec2.delete_internet_gateway(ident)
    elif kind in ("AWS::EC2::SecurityGroupIngress", "AWS::EC2::SecurityGroupEgress"):
        return  # rules go with their group
    elif resource is not None and not isinstance(resource, str):
        resource_map._delete_resource(resource, declared)


def _delete_stack_resources(self: Any) -> None:
    """moto's ResourceMap.delete, for the EC2 resources it cannot delete too: newest first,
    again while a pass deletes anything (a dependency may need another's deletion first)."""
    names = [n for n in self._parsed_resources if n in self._resource_json_map
             and self._resource_json_map[n].get("DeletionPolicy") != "Retain"]
    remaining = list(reversed(names))
    last: Exception | None = None
    while remaining:
        progress = False
        for name in list(remaining):
            try:
                _delete_ec2_resource(self, name)
            except Exception as exc:  # a dependency not deleted yet: next pass
                last = exc
            else:
                remaining.remove(name)
                self._parsed_resources.pop(name, None)
                progress = True
        if not progress:
            assert last is not None
            raise last
