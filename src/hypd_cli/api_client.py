"""A small client for the hypd REST API, shared by the CLI and the MCP server.

Clients never call AWS or Kubernetes themselves: every action is one REST operation, named by
its ``operationId`` in docs/openapi.json (`ROUTES`).

    api = ApiClient.connect("https://abc123.execute-api.us-west-2.amazonaws.com/v1")  # signed
    api = ApiClient.connect("http://127.0.0.1:8080/v1")                              # local
    api.call("getOperation", operationId="op-...")
    api.get_operation("op-...")                                   # the same, typed

Against AWS every request is signed with SigV4 for the ``execute-api`` service, with
credentials from botocore's standard chain (environment, profile, SSO, instance role...).
Against the local cloud (a loopback endpoint) requests go unsigned; the local API front
accepts both.

Errors: `ApiError` (the API answered 4xx/5xx; carries its ``code``, ``message`` and
``details``), `ApiUnreachable` (no answer from the endpoint), `ApiConfigError` (no usable
endpoint, Region or credentials). All three are `ApiClientError`.

About 530 lines, kept whole: the route table, signing and the typed calls (one short method per
operation, read by the CLI) are one client; the typed calls are most of it.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SERVICE = "execute-api"
USER_AGENT = "hypd-cli/0.1"

# execute-api's default host names carry the Region: {api-id}.execute-api.{region}.amazonaws.com
_EXECUTE_API_HOST = re.compile(r"^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$")


@dataclass(frozen=True)
class Route:
    """One REST operation: method, path template (``{name}`` segments), query parameters and
    whether it takes a JSON body."""

    method: str
    path: str
    query: tuple[str, ...] = ()
    has_body: bool = False

    @property
    def path_params(self) -> tuple[str, ...]:
        return tuple(re.findall(r"{(\w+)}", self.path))


# operationId -> route; a test checks this table against docs/openapi.json.
ROUTES: dict[str, Route] = {
    "listClusters": Route("GET", "/clusters", ("limit", "nextToken")),
    "getCluster": Route("GET", "/clusters/{tag}"),
    "createCluster": Route("POST", "/clusters", has_body=True),
    "deleteCluster": Route("DELETE", "/clusters/{tag}", ("force", "forget")),
    "getTeardownPlan": Route("GET", "/clusters/{tag}/teardown-plan", ("force",)),
    "setProtection": Route("PUT", "/clusters/{tag}/protection", has_body=True),
    "discoverClusters": Route("POST", "/clusters/discover", has_body=True),
    "listOperations": Route("GET", "/operations", ("clusterTag", "status", "limit", "nextToken")),
    "getOperation": Route("GET", "/operations/{operationId}"),
    "retryOperation": Route("POST", "/operations/{operationId}/retry", ("maxRetries",)),
    "cancelOperation": Route("POST", "/operations/{operationId}/cancel"),
    "listAvailabilityZones": Route("GET", "/catalog/availability-zones"),
    "listInstanceTypes": Route("GET", "/catalog/instance-types", ("availabilityZone",)),
    "listTrainingPlans": Route("GET", "/catalog/training-plans"),
    "listInstanceGroupFields": Route("GET", "/catalog/instance-group-fields"),
    "listInstanceGroups": Route("GET", "/clusters/{tag}/instance-groups"),
    "addInstanceGroup": Route("POST", "/clusters/{tag}/instance-groups", has_body=True),
    "updateInstanceGroup": Route(
        "PATCH", "/clusters/{tag}/instance-groups/{name}", has_body=True
    ),
    "deleteInstanceGroup": Route("DELETE", "/clusters/{tag}/instance-groups/{name}"),
    "listNodes": Route("GET", "/clusters/{tag}/nodes", ("instanceGroup",)),
    "rebootNode": Route("POST", "/clusters/{tag}/nodes/{nodeId}/reboot"),
    "replaceNode": Route("POST", "/clusters/{tag}/nodes/{nodeId}/replace"),
    "deleteNode": Route("DELETE", "/clusters/{tag}/nodes/{nodeId}"),
    "getAutoscaling": Route("GET", "/clusters/{tag}/autoscaling"),
    "setAutoscaling": Route("PUT", "/clusters/{tag}/autoscaling", has_body=True),
    "getClusterHealth": Route("GET", "/clusters/{tag}/health"),
    "getNodeHealth": Route("GET", "/clusters/{tag}/nodes/{nodeId}/health"),
    "getHealthPolicy": Route("GET", "/clusters/{tag}/health-policy"),
    "setHealthPolicy": Route("PUT", "/clusters/{tag}/health-policy", has_body=True),
    "getFeatures": Route("GET", "/clusters/{tag}/features"),
    "setFeatures": Route("PATCH", "/clusters/{tag}/features", has_body=True),
    "getUpgrades": Route("GET", "/clusters/{tag}/upgrades"),
    "upgradeCluster": Route("POST", "/clusters/{tag}/upgrades", ("dryRun",), has_body=True),
    "listTeams": Route("GET", "/clusters/{tag}/teams"),
    "getTeam": Route("GET", "/clusters/{tag}/teams/{team}"),
    "setTeam": Route("PUT", "/clusters/{tag}/teams/{team}", has_body=True),
    "deleteTeam": Route("DELETE", "/clusters/{tag}/teams/{team}"),
    "submitTrainingJob": Route("POST", "/clusters/{tag}/training-jobs", has_body=True),
    "listTrainingJobs": Route("GET", "/clusters/{tag}/training-jobs"),
    "getTrainingJob": Route("GET", "/clusters/{tag}/training-jobs/{name}", ("namespace",)),
    "getTrainingJobLogs": Route(
        "GET", "/clusters/{tag}/training-jobs/{name}/logs",
        ("namespace", "pod", "container", "tail", "sinceSeconds"),
    ),
    "deleteTrainingJob": Route("DELETE", "/clusters/{tag}/training-jobs/{name}", ("namespace",)),
    "deployInferenceEndpoint": Route("POST", "/clusters/{tag}/inference-endpoints",
                                     has_body=True),
    "listInferenceEndpoints": Route("GET", "/clusters/{tag}/inference-endpoints"),
    "getInferenceEndpoint": Route("GET", "/clusters/{tag}/inference-endpoints/{name}",
                                  ("namespace",)),
    "invokeInferenceEndpoint": Route(
        "POST", "/clusters/{tag}/inference-endpoints/{name}/invoke", ("namespace",),
        has_body=True,
    ),
    "deleteInferenceEndpoint": Route("DELETE", "/clusters/{tag}/inference-endpoints/{name}",
                                     ("namespace",)),
    "listEvents": Route("GET", "/events", ("cluster", "since", "detailType", "limit")),
}


@dataclass(frozen=True)
class RawAnswer:
    """The API's answer as it came: status, body bytes and headers (`ApiClient.send`)."""

    status: int
    body: bytes
    headers: Any


class ApiClientError(Exception):
    """Anything that kept a request from getting an answer it could use."""


class ApiError(ApiClientError):
    """The API answered with an error: its status, code, message and details."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: dict[str, Any],
        operation_id: str | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.operation_id = operation_id

    @property
    def temporary(self) -> bool:
        """Worth asking again later (throttled, or the service failed)."""
        return self.status == 429 or self.status >= 500


class ApiUnreachable(ApiClientError):
    """No HTTP answer from the endpoint (refused, DNS, TLS, timeout, connection dropped)."""

    def __init__(self, endpoint: str, reason: str) -> None:
        super().__init__(f"cannot reach the hypd API at {endpoint}: {reason}")
        self.endpoint = endpoint
        self.reason = reason


class ApiConfigError(ApiClientError, ValueError):
    """The client cannot be set up: bad endpoint, no Region, no credentials, unknown profile."""


def check_endpoint(endpoint: str, source: str = "--endpoint") -> str:
    """`endpoint` (without a trailing slash) when it is the API's base URL: http(s), a host,
    and a path: the stage (``/v1``); else `ApiConfigError` saying what is wrong, naming where
    it came from (`source`)."""
    parts = urllib.parse.urlsplit(endpoint)
    example = "http://127.0.0.1:8080/v1 for `hypd local up`, or the stack's ApiUrl output"
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ApiConfigError(f"{source}: {endpoint!r} is not a URL (expected {example})")
    if parts.path.strip("/") == "":
        suggested = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/v1", "", ""))
        raise ApiConfigError(
            f"{source}: {endpoint} has no stage: the API's base URL ends with its stage "
            f"(try {suggested})")
    return endpoint.rstrip("/")


def is_local_endpoint(endpoint: str) -> bool:
    """Whether the endpoint is on this machine (the local cloud): loopback names and addresses."""
    host = urllib.parse.urlsplit(endpoint).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def region_of_endpoint(endpoint: str) -> str | None:
    """The Region in an execute-api default host name, else None (custom domain, local)."""
    match = _EXECUTE_API_HOST.match(urllib.parse.urlsplit(endpoint).hostname or "")
    return match.group(1) if match else None


DEFAULT_STACK_NAME = "hypd"
API_URL_OUTPUT = "ApiUrl"


def endpoint_from_stack(
    stack_name: str = DEFAULT_STACK_NAME,
    *,
    profile: str | None = None,
    region: str | None = None,
    cloudformation: Any = None,
) -> str:
    """The API's base URL: the `ApiUrl` output of the deployed stack (template.yaml's).

    This is configuration, not an operation: the one AWS call the clients make besides
    signing, so that a deployment needs no endpoint to be copied around.

    Raises:
        ApiConfigError: no such stack, no such output, or no credentials/Region to look.
    """
    import botocore.exceptions
    import botocore.session

    try:
        if cloudformation is None:
            session = botocore.session.Session(profile=profile)
            cloudformation = session.create_client("cloudformation", region_name=region)
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except botocore.exceptions.ClientError as exc:
        raise ApiConfigError(
            f"no endpoint: give --endpoint URL, set HYPD_ENDPOINT, or deploy the stack "
            f"{stack_name} (CloudFormation said: {exc.response.get('Error', {}).get('Message')})"
        ) from None
    except botocore.exceptions.BotoCoreError as exc:
        raise ApiConfigError(
            f"no endpoint: give --endpoint URL or set HYPD_ENDPOINT (looking up the stack "
            f"{stack_name} failed: {exc})"
        ) from None
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs") or []}
    if API_URL_OUTPUT not in outputs:
        raise ApiConfigError(
            f"stack {stack_name} has no {API_URL_OUTPUT} output; give --endpoint URL"
        )
    return str(outputs[API_URL_OUTPUT])


class SigV4Signer:
    """Signs requests for ``execute-api`` (SigV4, body included) with botocore's signer.

    ``credentials`` is a botocore ``Credentials`` object (refreshable ones are refreshed as
    needed: each request signs with the current frozen set).
    """

    def __init__(self, credentials: Any, region: str, service: str = SERVICE) -> None:
        self.credentials = credentials
        self.region = region
        self.service = service

    @classmethod
    def from_session(
        cls, *, profile: str | None = None, region: str | None = None, endpoint: str | None = None
    ) -> SigV4Signer:
        """Credentials from botocore's standard chain (of ``profile``, else the default one).
        Region: ``region``, else the endpoint's execute-api host, else the session's."""
        import botocore.exceptions
        import botocore.session

        try:
            session = botocore.session.Session(profile=profile)
            credentials = session.get_credentials()
            region = region or (region_of_endpoint(endpoint) if endpoint else None)
            region = region or session.get_config_variable("region")
        except botocore.exceptions.BotoCoreError as exc:
            raise ApiConfigError(str(exc)) from None
        if credentials is None:
            raise ApiConfigError(
                "no AWS credentials found (environment, --profile, ~/.aws, SSO or instance "
                "role); requests to the hypd API are signed with SigV4"
            )
        if not region:
            raise ApiConfigError(
                "no AWS Region: give --region (or set AWS_REGION / a profile's region)"
            )
        return cls(credentials, region)

    def sign(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> dict[str, str]:
        """The headers to send: ``headers`` plus X-Amz-Date, Authorization (and
        X-Amz-Security-Token for temporary credentials)."""
        import botocore.exceptions
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        try:
            frozen = self.credentials.get_frozen_credentials()
        except botocore.exceptions.BotoCoreError as exc:
            raise ApiConfigError(f"cannot load AWS credentials: {exc}") from None
        request = AWSRequest(method=method, url=url, data=body or b"", headers=dict(headers))
        SigV4Auth(frozen, self.service, self.region).add_auth(request)
        return dict(request.headers.items())


class ApiClient:
    """The hypd REST API at ``endpoint`` (the stage URL, e.g. ``https://.../v1``), checked
    by `check_endpoint` (`source`: where it came from, for the message)."""

    def __init__(
        self, endpoint: str, timeout: float = 30.0, *, signer: SigV4Signer | None = None,
        source: str = "--endpoint",
    ) -> None:
        self.endpoint = check_endpoint(endpoint, source)
        self.timeout = timeout
        self.signer = signer

    @classmethod
    def connect(
        cls,
        endpoint: str,
        *,
        region: str | None = None,
        profile: str | None = None,
        sign: bool | None = None,
        timeout: float = 30.0,
        source: str = "--endpoint",
    ) -> ApiClient:
        """A client for ``endpoint`` (checked first, before any credentials are looked for):
        signed (SigV4, botocore's credential chain) unless ``sign`` is False, or None and the
        endpoint is local (loopback)."""
        client = cls(endpoint, timeout, source=source)
        if sign is None:
            sign = not is_local_endpoint(client.endpoint)
        if sign:
            client.signer = SigV4Signer.from_session(profile=profile, region=region,
                                                     endpoint=client.endpoint)
        return client

    # -- the generic door ------------------------------------------------------------------

    def call(
        self, operation_id: str, /, *, body: dict[str, Any] | None = None, **params: Any
    ) -> dict[str, Any]:
        """Run the REST operation ``operation_id`` (see `ROUTES`): path parameters and query
        parameters by their API names, ``body`` for the operations that take one (POST, PATCH,
        PUT). Any 2xx answer is returned as its JSON body (an empty body as ``{}``)."""
        try:
            route = ROUTES[operation_id]
        except KeyError:
            raise ValueError(f"unknown operation {operation_id!r}") from None
        unknown = set(params) - set(route.path_params) - set(route.query)
        if unknown:
            raise TypeError(f"{operation_id} takes no parameter {', '.join(sorted(unknown))}")
        if body is not None and not route.has_body:
            raise TypeError(f"{operation_id} takes no body")
        path = route.path
        for name in route.path_params:
            value = params.get(name)
            if value is None or value == "":
                raise TypeError(f"{operation_id} needs {name}")
            path = path.replace("{" + name + "}", urllib.parse.quote(str(value), safe=""))
        query = {name: params[name] for name in route.query if params.get(name) is not None}
        return self.request(
            route.method, path, query=query, body=body, operation_id=operation_id
        )

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        operation_id: str | None = None,
    ) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        answer = self.send(method, path, query=query, data=data)
        if not 200 <= answer.status < 300:
            raise _api_error(answer.status, answer.body, answer.headers, operation_id)
        status, payload = answer.status, answer.body
        if not payload:
            return {}
        try:
            result = json.loads(payload)
        except ValueError:
            raise ApiError(
                status, "InvalidResponse", f"the API answered {status} with a body that is not "
                f"JSON: {payload[:200].decode(errors='replace')}", {}, operation_id
            ) from None
        if not isinstance(result, dict):
            raise ApiError(status, "InvalidResponse", "the API answered with a JSON "
                           f"{type(result).__name__}, not an object", {}, operation_id)
        return result

    def send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        data: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> RawAnswer:
        """One request as it is (signed when the client signs), and the API's answer as it
        is, error statuses included: what a proxy forwards (the web console's). ``data`` is
        sent as the JSON body; ``headers`` are added (an ``Idempotency-Key``, say).

        Raises:
            ApiUnreachable: no HTTP answer.
            ApiConfigError: the credentials to sign with could not be loaded.
        """
        url = self.endpoint + path
        params = {k: _query_value(v) for k, v in (query or {}).items() if v is not None}
        if params:
            # RFC 3986 encoding (%20, not +): what SigV4's canonical query string expects.
            url += "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote, safe="-_.~")
        sent = {"Accept": "application/json", "User-Agent": USER_AGENT, **(headers or {})}
        if data is not None:
            sent["Content-Type"] = "application/json"
        if self.signer is not None:
            sent = self.signer.sign(method, url, sent, data)
        request = urllib.request.Request(  # noqa: S310 - the scheme is checked in __init__
            url, data=data, method=method, headers=sent
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                return RawAnswer(response.status, response.read(), response.headers)
        except urllib.error.HTTPError as exc:
            return RawAnswer(exc.code, exc.read(), exc.headers)
        except urllib.error.URLError as exc:
            raise ApiUnreachable(self.endpoint, str(exc.reason)) from None
        except (OSError, http.client.HTTPException) as exc:
            raise ApiUnreachable(self.endpoint, str(exc) or type(exc).__name__) from None

    def get(self, path: str, **query: Any) -> dict[str, Any]:
        return self.request("GET", path, query=query)

    def post(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.request("POST", path, body=body)

    # -- one typed method per REST operation -----------------------------------------------

    def list_clusters(
        self, *, limit: int | None = None, next_token: str | None = None
    ) -> dict[str, Any]:
        return self.call("listClusters", limit=limit, nextToken=next_token)

    def get_cluster(self, tag: str) -> dict[str, Any]:
        return self.call("getCluster", tag=tag)

    def create_cluster(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.call("createCluster", body=body)

    def delete_cluster(self, tag: str, *, force: bool = False, forget: bool = False
                       ) -> dict[str, Any]:
        return self.call("deleteCluster", tag=tag, force=force or None, forget=forget or None)

    def get_teardown_plan(self, tag: str, *, force: bool = False) -> dict[str, Any]:
        return self.call("getTeardownPlan", tag=tag, force=force or None)

    def set_protection(self, tag: str, enabled: bool) -> dict[str, Any]:
        return self.call("setProtection", tag=tag, body={"enabled": enabled})

    def discover_clusters(self, cluster_names: list[str] | None = None) -> dict[str, Any]:
        body = {"clusterNames": cluster_names} if cluster_names else None
        return self.call("discoverClusters", body=body)

    def list_operations(
        self,
        *,
        cluster_tag: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        next_token: str | None = None,
    ) -> dict[str, Any]:
        return self.call(
            "listOperations", clusterTag=cluster_tag, status=status, limit=limit,
            nextToken=next_token,
        )

    def get_operation(self, operation_id: str) -> dict[str, Any]:
        return self.call("getOperation", operationId=operation_id)

    def list_events(
        self,
        *,
        cluster: str | None = None,
        since: str | None = None,
        detail_type: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        return self.call("listEvents", cluster=cluster, since=since, detailType=detail_type,
                         limit=limit)

    def retry_operation(self, operation_id: str) -> dict[str, Any]:
        return self.call("retryOperation", operationId=operation_id)

    def cancel_operation(self, operation_id: str) -> dict[str, Any]:
        return self.call("cancelOperation", operationId=operation_id)

    def list_availability_zones(self) -> dict[str, Any]:
        return self.call("listAvailabilityZones")

    def list_instance_types(self, availability_zone: str | None = None) -> dict[str, Any]:
        return self.call("listInstanceTypes", availabilityZone=availability_zone)

    def list_training_plans(self) -> dict[str, Any]:
        return self.call("listTrainingPlans")

    def list_instance_group_fields(self) -> dict[str, Any]:
        return self.call("listInstanceGroupFields")

    # Capacity. A change answers 202 with an operation to follow ({operationId, status, kind}),
    # or, for a PATCH or PUT that matches the cluster, 200 {"changed": false, ...}: see
    # `started`.

    def list_instance_groups(self, tag: str) -> dict[str, Any]:
        return self.call("listInstanceGroups", tag=tag)

    def add_instance_group(self, tag: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.call("addInstanceGroup", tag=tag, body=body)

    def update_instance_group(self, tag: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.call("updateInstanceGroup", tag=tag, name=name, body=body)

    def delete_instance_group(self, tag: str, name: str) -> dict[str, Any]:
        return self.call("deleteInstanceGroup", tag=tag, name=name)

    def list_nodes(self, tag: str, instance_group: str | None = None) -> dict[str, Any]:
        return self.call("listNodes", tag=tag, instanceGroup=instance_group)

    def reboot_node(self, tag: str, node_id: str) -> dict[str, Any]:
        return self.call("rebootNode", tag=tag, nodeId=node_id)

    def replace_node(self, tag: str, node_id: str) -> dict[str, Any]:
        return self.call("replaceNode", tag=tag, nodeId=node_id)

    def delete_node(self, tag: str, node_id: str) -> dict[str, Any]:
        return self.call("deleteNode", tag=tag, nodeId=node_id)

    def get_autoscaling(self, tag: str) -> dict[str, Any]:
        return self.call("getAutoscaling", tag=tag)

    def set_autoscaling(self, tag: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.call("setAutoscaling", tag=tag, body=body)

    # Health: what the HyperPod and EKS events said (docs/health.md), and the repair policy.
    # A policy is no operation: the PUT answers 200 with the policy now in force.

    def get_cluster_health(self, tag: str) -> dict[str, Any]:
        return self.call("getClusterHealth", tag=tag)

    def get_node_health(self, tag: str, node_id: str) -> dict[str, Any]:
        return self.call("getNodeHealth", tag=tag, nodeId=node_id)

    def get_health_policy(self, tag: str) -> dict[str, Any]:
        return self.call("getHealthPolicy", tag=tag)

    def set_health_policy(self, tag: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.call("setHealthPolicy", tag=tag, body=body)

    # Managed features (docs/features.md) and task governance's teams. A PATCH of the features
    # names only what changes (explicit diff); both changes answer 202 or 200 changed: false.

    def get_features(self, tag: str) -> dict[str, Any]:
        return self.call("getFeatures", tag=tag)

    def set_features(self, tag: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.call("setFeatures", tag=tag, body=body)

    def list_teams(self, tag: str) -> dict[str, Any]:
        return self.call("listTeams", tag=tag)

    def get_team(self, tag: str, team: str) -> dict[str, Any]:
        return self.call("getTeam", tag=tag, team=team)

    def set_team(self, tag: str, team: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.call("setTeam", tag=tag, team=team, body=body)

    def delete_team(self, tag: str, team: str) -> dict[str, Any]:
        return self.call("deleteTeam", tag=tag, team=team)

    # Workloads (docs/workloads.md): training jobs and inference endpoints. ``namespace``
    # None looks the name up in every namespace.

    def submit_training_job(self, tag: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.call("submitTrainingJob", tag=tag, body=body)

    def list_training_jobs(self, tag: str) -> dict[str, Any]:
        return self.call("listTrainingJobs", tag=tag)

    def get_training_job(self, tag: str, name: str, namespace: str | None = None
                         ) -> dict[str, Any]:
        return self.call("getTrainingJob", tag=tag, name=name, namespace=namespace)

    def get_training_job_logs(
        self, tag: str, name: str, *, namespace: str | None = None, pod: str | None = None,
        container: str | None = None, tail: int | None = None,
        since_seconds: int | None = None,
    ) -> dict[str, Any]:
        return self.call("getTrainingJobLogs", tag=tag, name=name, namespace=namespace,
                         pod=pod, container=container, tail=tail, sinceSeconds=since_seconds)

    def delete_training_job(self, tag: str, name: str, namespace: str | None = None
                            ) -> dict[str, Any]:
        return self.call("deleteTrainingJob", tag=tag, name=name, namespace=namespace)

    def deploy_inference_endpoint(self, tag: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.call("deployInferenceEndpoint", tag=tag, body=body)

    def list_inference_endpoints(self, tag: str) -> dict[str, Any]:
        return self.call("listInferenceEndpoints", tag=tag)

    def get_inference_endpoint(self, tag: str, name: str, namespace: str | None = None
                               ) -> dict[str, Any]:
        return self.call("getInferenceEndpoint", tag=tag, name=name, namespace=namespace)

    def invoke_inference_endpoint(self, tag: str, name: str, body: dict[str, Any],
                                  namespace: str | None = None) -> dict[str, Any]:
        return self.call("invokeInferenceEndpoint", tag=tag, name=name, namespace=namespace,
                         body=body)

    def delete_inference_endpoint(self, tag: str, name: str, namespace: str | None = None
                                  ) -> dict[str, Any]:
        return self.call("deleteInferenceEndpoint", tag=tag, name=name, namespace=namespace)


def started(response: Mapping[str, Any]) -> bool:
    """Whether a change's answer started an operation (202 ``{operationId, status, kind}``)
    rather than found nothing to do (200 ``{"changed": false, ...}``): the two shapes share no
    key."""
    return "operationId" in response


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _api_error(
    status: int, raw: bytes, headers: Any = None, operation_id: str | None = None
) -> ApiError:
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = {}
    if not isinstance(payload, dict):
        payload = {}
    # API Gateway's own errors (403 Missing Authentication Token, signature mismatch, 429...)
    # have only {"message"} and name their type in the x-amzn-ErrorType header.
    gateway_type = (headers.get("x-amzn-ErrorType") if headers is not None else None) or ""
    code = payload.get("code") or gateway_type.split(":")[0] or f"HTTP{status}"
    message = (
        payload.get("message") or payload.get("Message") or raw[:200].decode(errors="replace")
        or http.client.responses.get(status, "")
    )
    details = payload.get("details")
    return ApiError(
        status, str(code), str(message), dict(details) if isinstance(details, dict) else {},
        operation_id,
    )
