"""The CloudWatch log groups the emulated HyperPod writes to, made in moto's CloudWatch Logs as
the emulator says they exist (`HyperPodEmulator.lifecycle_log_groups`).

HyperPod writes each node's lifecycle-script logs to ``/aws/sagemaker/Clusters/<name>/<id>``
(with the instance role's ``logs:CreateLogGroup``); nothing deletes the group with the
cluster, so it stays after a teardown, as on AWS."""

from __future__ import annotations

from hypd_local.emulator.hyperpod import HyperPodEmulator


class LogGroupSync:
    """Makes moto's log group for each HyperPod cluster whose nodes have launched, once."""

    account_id: str
    region: str
    hyperpod: HyperPodEmulator
    _log_groups: set[str]
    """The log groups made (one deleted by hand stays deleted)."""

    def _sync_log_groups(self) -> None:
        from moto.logs.models import logs_backends

        backend = logs_backends[self.account_id][self.region]
        for name in self.hyperpod.lifecycle_log_groups():
            if name not in self._log_groups:
                self._log_groups.add(name)
                if name not in backend.groups:
                    backend.create_log_group(name, {})
