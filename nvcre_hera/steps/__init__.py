"""`nvcre-step`: the entry points the workflow's own containers run. Thin shells over the pure code; each talks
to the cluster through one `Cluster` and writes its outputs through one `Outputs` sink, so the local executor runs
the very same functions in process against the simulated cluster.
"""
