"""Certification → Argo documents. `plan.py` is pure; `workflow.py` is the only module importing Hera."""
