"""The records of `Idempotency-Key` requests: who holds a key, and the answer it got.

One item per (caller, route, key), in the one table (`hypd.table.idempotency_key`; keys of the
record in docs/architecture.md). A record is first a *claim*, taken by a conditional put so
that of two requests that arrive at once only one runs; it then becomes the *answer* that the
request got, which a repeat of the request is given again. A claim names its holder (`claimId`,
random): only its holder completes or releases it, and a claim whose holder died (the function
timed out or crashed) goes stale after `IN_PROGRESS` and is taken over, conditionally on the
same holder, as `hypd.operations.locks` takes over a lock whose operation ended.

Every record expires `RETENTION` after it was written: DynamoDB's TTL deletes it some time
later, and until then the store treats it as absent.
"""

from __future__ import annotations

import logging
import math
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from hypd import clock
from hypd.aws.dynamodb import ConditionFailed, Table, decode_body, encode_item
from hypd.errors import HypdError, IdempotencyKeyInUse, IdempotencyKeyMismatch
from hypd.idempotency.models import Claim, IdempotentRequest, StoredResponse
from hypd.table import TTL_ATTRIBUTE, idempotency_key

LOG = logging.getLogger(__name__)

RETENTION = timedelta(hours=24)
"""How long a key is remembered after its request was answered (or claimed)."""

IN_PROGRESS = timedelta(seconds=60)
"""How long a claim holds while its request runs: ApiFunction's Timeout (29 s, also API
Gateway's integration limit) and a margin. Past it, the request that claimed the key has
ended one way or another, and a repeat runs instead of waiting for an answer that cannot
come (tests/unit/test_idempotency.py checks it against template.yaml)."""

MAX_RETRY_AFTER_SECONDS = 5
"""The longest `Retry-After` of a 429: most requests answer within a few seconds, so a repeat
asks again soon rather than when the claim would go stale."""

MAX_STORED_BYTES = 300_000
"""The largest answer kept (body and headers as stored): DynamoDB's items are at most 400 KB.
A larger answer is not kept; its claim is released, and a repeat runs again."""

_CLAIM_ATTEMPTS = 3


class State(StrEnum):
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"


@dataclass(frozen=True)
class _Record:
    fingerprint: str
    state: State
    claim_id: str
    stale_at: datetime
    expires_at: int
    response: StoredResponse | None

    @classmethod
    def of(cls, item: dict[str, Any]) -> _Record:
        body = decode_body(item)
        response = body.get("response")
        return cls(
            fingerprint=str(body["fingerprint"]),
            state=State(body["state"]),
            claim_id=str(item["claimId"]["S"]),
            stale_at=datetime.fromisoformat(str(body["staleAt"])),
            expires_at=int(item[TTL_ATTRIBUTE]["N"]),
            response=StoredResponse.from_json(response) if response else None,
        )


class IdempotencyStore:
    """Claims keys, records answers, gives them back (see the module's doc)."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def claim(self, request: IdempotentRequest) -> Claim | StoredResponse:
        """Claim `request`'s key to run it, or the answer a first request with it got.

        Raises:
            IdempotencyKeyMismatch: the key was used for another request on this route.
            IdempotencyKeyInUse: the first request with the key is still being served.
        """
        for _attempt in range(_CLAIM_ATTEMPTS):
            claim = self._new_claim(request)
            try:
                # attribute_not_exists(PK): nobody used this key yet.
                self._table.put(self._claim_item(claim), condition="attribute_not_exists(PK)")
                return claim
            except ConditionFailed:
                pass
            item = self._table.get(idempotency_key(request.scope))
            if item is None:
                continue  # released (its request failed) since: claim it again
            record = _Record.of(item)
            now = clock.now()
            live = record.expires_at > int(now.timestamp())
            if live and record.fingerprint != request.fingerprint:
                raise IdempotencyKeyMismatch(
                    f"Idempotency-Key {request.key!r} was already used for a different request "
                    f"on {request.route} (another path, query or body): use a new key for a "
                    "new request",
                    details={"header": "Idempotency-Key"},
                )
            if live and record.state is State.COMPLETED and record.response is not None:
                return record.response
            if live and record.stale_at > now:
                wait = math.ceil((record.stale_at - now).total_seconds())
                retry_after = max(1, min(MAX_RETRY_AFTER_SECONDS, wait))
                raise IdempotencyKeyInUse(
                    f"a request with Idempotency-Key {request.key!r} is still being served; "
                    f"ask again in {retry_after} s for its answer",
                    retry_after=retry_after,
                    details={"header": "Idempotency-Key", "retryAfter": retry_after},
                )
            # Expired, or claimed by a request that cannot be running any more: take it over.
            try:
                # claimId = :seen: only the claim read here, not one another request took since.
                self._table.put(
                    self._claim_item(claim),
                    condition="claimId = :seen",
                    values={":seen": {"S": record.claim_id}},
                )
                return claim
            except ConditionFailed:
                continue
        raise IdempotencyKeyInUse(
            f"requests with Idempotency-Key {request.key!r} keep arriving at once; ask again",
            retry_after=1,
            details={"header": "Idempotency-Key", "retryAfter": 1},
        )

    def complete(self, claim: Claim, response: StoredResponse) -> bool:
        """Record the answer of `claim`'s request, for its repeats; False when it was not kept
        (too large, or the claim was taken over meanwhile). Never raises for a failed write: the
        request's answer stands, and the claim goes stale as if the function had stopped."""
        now = clock.now()
        body = self._body(claim, State.COMPLETED, now, response)
        item = encode_item(
            idempotency_key(claim.request.scope), body, attributes={"claimId": claim.claim_id}
        )
        if len(item["body"]["S"].encode()) > MAX_STORED_BYTES:
            LOG.warning(
                "the answer to %s is too large to keep for Idempotency-Key %r; a repeat runs again",
                claim.request.route,
                claim.request.key,
            )
            self.release(claim)
            return False
        item[TTL_ATTRIBUTE] = _epoch(now + RETENTION)
        try:
            # claimId = :mine: the claim is still this request's (not taken over as stale).
            self._table.put(
                item, condition="claimId = :mine", values={":mine": {"S": claim.claim_id}}
            )
        except ConditionFailed:
            LOG.warning(
                "the claim of Idempotency-Key %r on %s was taken over before its request ended",
                claim.request.key,
                claim.request.route,
            )
            return False
        except HypdError as exc:
            LOG.warning(
                "the answer for Idempotency-Key %r was not kept: %s", claim.request.key, exc
            )
            return False
        return True

    def release(self, claim: Claim) -> None:
        """Forget `claim` (its request failed), so that a repeat runs again. Never raises: a
        claim that could not be released goes stale after `IN_PROGRESS`."""
        try:
            # claimId = :mine: never release a claim another request has taken over.
            self._table.delete(
                idempotency_key(claim.request.scope),
                condition="claimId = :mine",
                values={":mine": {"S": claim.claim_id}},
            )
        except ConditionFailed:
            return
        except HypdError as exc:
            LOG.warning(
                "the claim of Idempotency-Key %r was not released: %s", claim.request.key, exc
            )

    def _new_claim(self, request: IdempotentRequest) -> Claim:
        return Claim(request, uuid.uuid4().hex, clock.now() + IN_PROGRESS)

    def _claim_item(self, claim: Claim) -> dict[str, Any]:
        now = clock.now()
        item = encode_item(
            idempotency_key(claim.request.scope),
            self._body(claim, State.IN_PROGRESS, now, None),
            attributes={"claimId": claim.claim_id},
        )
        item[TTL_ATTRIBUTE] = _epoch(now + RETENTION)
        return item

    @staticmethod
    def _body(
        claim: Claim, state: State, now: datetime, response: StoredResponse | None
    ) -> dict[str, Any]:
        request = claim.request
        body: dict[str, Any] = {
            "principal": request.principal,
            "route": request.route,
            "key": request.key,
            "fingerprint": request.fingerprint,
            "state": state.value,
            "staleAt": clock.isoformat(claim.stale_at),
            "updatedAt": clock.isoformat(now),
        }
        if response is not None:
            body["response"] = response.to_json()
        return body


def _epoch(when: datetime) -> dict[str, str]:
    return {"N": str(int(when.timestamp()))}
