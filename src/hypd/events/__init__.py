"""The events hypd publishes about its operations, clusters and nodes (docs/automation.md).

They are derived from the table's writes (its DynamoDB stream), not sent by each code path
that makes a transition: `derive` turns one stream record into the events of the transitions
it records, once per transition, and `model` holds their detail types.
"""
