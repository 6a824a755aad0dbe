"""hypd: a serverless control plane for Amazon SageMaker HyperPod on EKS.

This package is the domain code shared by every Lambda function through the hypd layer.
It never imports moto, the CLI or the local cloud.
"""

__version__ = "0.1.0"
