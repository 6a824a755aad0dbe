"""Inspect before create: which zones, HyperPod instance types and training plans can succeed.

Pure domain logic (no boto3): the ``ml.*`` -> EC2 instance type mapping, merging EC2's per-zone
offerings with HyperPod's candidates, zone checks, and the training-plan view. The adapters in
``hypd.aws.ec2`` and ``hypd.aws.sagemaker`` produce the facts these functions take.
"""
