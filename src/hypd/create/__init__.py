"""The create-cluster pipeline: one module per stage's domain logic, plus its tasks.

See docs/create-pipeline.md for the layout and the data flow.
"""
