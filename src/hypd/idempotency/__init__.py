"""Requests sent with an `Idempotency-Key`: their claims and answers (docs/api.md).

`models`: the values; `store`: their records in the table. The API's middleware that reads the
header and replays answers is `hypd.api.idempotency`.
"""
