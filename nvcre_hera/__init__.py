"""nvcre-hera: certify GPU clusters on Kubernetes with real workloads, compiled with Hera into Argo Workflows."""

__version__ = "0.1.0"
