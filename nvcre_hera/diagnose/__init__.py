"""testScale: diagnose — localize the nodes (or links) that make a group fail, round by round.

`plan` is the single planner used by the workflow's plan step, the local executor and the benchmark.
"""

from __future__ import annotations

from nvcre_hera.diagnose.planner import FULL_ID, STRATEGIES, plan

__all__ = ["FULL_ID", "STRATEGIES", "plan"]
