"""What a local cloud changes in its process: moto's server on loopback, the environment every
client reads (endpoint, fake credentials, Region), the domain's clock, and moto's backends."""

from __future__ import annotations

import importlib
import logging
import os
import threading
from typing import Any

import boto3
from werkzeug.serving import BaseWSGIServer, make_server

from hypd_local import transport
from hypd_local.clock import VirtualClock
from hypd_local.emulation import Emulation

LOG = logging.getLogger("hypd_local.cloud")

ACCESS_KEY_ID = "testing"


SECRET_ACCESS_KEY = "testing"  # noqa: S105 - moto's fake credentials, not a secret


# The moto port of the last cloud in this process: reused when free, so boto3 clients that a
# module created at import time (e.g. in the layer package) still reach the next cloud.
_last_aws_port: int | None = None


# How often the servers' loops check for shutdown (seconds): bounds the time stop() takes.
_POLL_INTERVAL = 0.02


# One boto3 session per Region for every cloud of the process: a session loads the service
# models and endpoint data it needs (about a second of JSON for the clients a cloud makes) and
# keeps them, so a fresh session per cloud would load them again each time. boto3 sessions are
# not thread-safe: clients are created under `_SESSIONS_LOCK`.
_SESSIONS: dict[str, boto3.session.Session] = {}


_SESSIONS_LOCK = threading.Lock()


class ProcessSetup:
    """The moto server, the process environment and the boto3 sessions and clients of a
    `LocalCloud`."""

    region: str
    clock: VirtualClock
    emulation: Emulation | None
    _aws_port: int
    _moto: BaseWSGIServer | None
    _moto_thread: threading.Thread | None
    _moto_transport: transport.InProcessTransport | None
    _saved_env: dict[str, str | None]
    _hypd_clock: Any
    _clients: dict[str, Any]
    _clients_lock: threading.Lock

    @property
    def aws_port(self) -> int:
        if self._moto is None:
            raise RuntimeError("the local cloud is not started")
        return int(self._moto.server_port)

    @property
    def aws_endpoint(self) -> str:
        """URL of the moto server (what AWS_ENDPOINT_URL is set to)."""
        return f"http://127.0.0.1:{self.aws_port}"

    def boto3_session(self) -> boto3.session.Session:
        """The process's boto3 session with the local credentials and this cloud's Region
        (endpoint from the environment). Shared by every cloud: create its clients on one
        thread at a time, or through `client`."""
        with _SESSIONS_LOCK:
            session = _SESSIONS.get(self.region)
            if session is None:
                session = boto3.session.Session(
                    aws_access_key_id=ACCESS_KEY_ID,
                    aws_secret_access_key=SECRET_ACCESS_KEY,
                    region_name=self.region,
                )
                _SESSIONS[self.region] = session
            return session

    def client(self, service: str) -> Any:
        """A (cached, thread-safe) boto3 client for ``service`` pointed at the moto server."""
        with self._clients_lock:
            client = self._clients.get(service)
            if client is None:
                session = self.boto3_session()
                with _SESSIONS_LOCK:
                    client = session.client(service, endpoint_url=self.aws_endpoint)
                self._clients[service] = client
            return client

    def _start_moto(self) -> None:
        global _last_aws_port
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

        # moto's ThreadedMotoServer binds inside its thread and hangs if the port is taken;
        # binding here makes a bad port an immediate error.
        assert self.emulation is not None
        # EKS and HyperPod operations go to the emulators; every other request to moto.
        app = self.emulation.wrap(DomainDispatcherApplication(create_backend_app))
        if self._aws_port:
            ports = [self._aws_port]
        else:
            ports = [p for p in (_last_aws_port, 0) if p is not None]
        server = None
        for index, port in enumerate(ports):
            try:
                server = make_server("127.0.0.1", port, app, threaded=True,
                                     request_handler=_quiet_moto_handler())
                break
            except OSError:
                if index == len(ports) - 1:
                    raise
        assert server is not None
        self._moto = server
        self._moto_thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": _POLL_INTERVAL},
            name="moto-server", daemon=True,
        )
        self._moto_thread.start()
        _last_aws_port = self.aws_port
        # The cloud's own requests (functions, the Step Functions interpreter) skip HTTP.
        self._moto_transport = transport.InProcessTransport(
            app, "127.0.0.1", self.aws_port, aliases=("localhost",))
        transport.serve(self._moto_transport)

    def _stop_moto(self) -> None:
        if self._moto_transport is not None:
            transport.stop_serving(self._moto_transport)
            self._moto_transport = None
        if self._moto is not None:
            self._moto.shutdown()
            self._moto.server_close()
            if self._moto_thread is not None:
                self._moto_thread.join()
            self._moto = None
            self._moto_thread = None

    def _set_environment(self) -> None:
        values: dict[str, str | None] = {
            "AWS_ENDPOINT_URL": self.aws_endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
            "AWS_SESSION_TOKEN": None,
            "AWS_SECURITY_TOKEN": None,
            "AWS_PROFILE": None,
            "AWS_DEFAULT_PROFILE": None,
            "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": None,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
            # moto's Step Functions interpreter builds its clients against localhost:MOTO_PORT.
            "MOTO_PORT": str(self.aws_port),
            # moto's EC2 would load thousands of public AMIs at every cloud's start (a tenth of
            # the time of a short test); nothing here launches EC2 instances.
            "MOTO_EC2_LOAD_DEFAULT_AMIS": "false",
            "POWERTOOLS_TRACE_DISABLED": "true",
        }
        # A service-specific endpoint would bypass the moto server.
        for key in os.environ:
            if key.startswith("AWS_ENDPOINT_URL_"):
                values[key] = None
        for key, value in values.items():
            self._saved_env[key] = os.environ.get(key)
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    def _restore_environment(self) -> None:
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env.clear()

    def _use_virtual_time_in_domain(self) -> None:
        try:
            module = importlib.import_module("hypd.clock")
        except ImportError:
            return
        set_source = getattr(module, "set_source", None)
        if callable(set_source):
            set_source(self.clock.now)
            self._hypd_clock = set_source

    def _restore_domain_time(self) -> None:
        if self._hypd_clock is not None:
            self._hypd_clock(None)
            self._hypd_clock = None


def _quiet_moto_handler() -> type[Any]:
    """moto's request handler without werkzeug's one-line-per-request access log."""
    from moto.moto_server.werkzeug_app import MotoRequestHandler

    class QuietMotoRequestHandler(MotoRequestHandler):
        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            LOG.debug("moto %s %s %s", self.command, self.path, code)

    return QuietMotoRequestHandler


def _reset_moto() -> None:
    """Forget every moto resource (all services, accounts, Regions)."""
    from moto.core.base_backend import BackendDict
    from moto.core.model_instances import reset_model_data
    from moto.stepfunctions.parser.utils import TMP_THREADS

    BackendDict.reset()
    reset_model_data()
    # moto keeps every interpreter thread it ever started in this list.
    TMP_THREADS[:] = [thread for thread in TMP_THREADS if thread.is_alive()]
