"""Proof of validity without a cluster: strict CRD validation and an Argo lint over compiled dicts."""
