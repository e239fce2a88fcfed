"""Single-node diagnose screens: what a diagnose test with a `kind` runs on each of its nodes
(docs/diagnose-screens.md).

The planner may open a diagnose with one-node tests on every node at once, in batches
`{"id", "nodes": [x, ...], "kind": ..., "each": true}` (one job per node, `steps/run.py` `run_screen_batch`):

* `intra`: the diagnose category's own workload (its nccl-tests binary) on that node alone: NVLink and the GPUs,
  the path an intra-node group of one node takes;
* `loopback`: the catalog's nccl-tests loopback entry (NCCL_SHM_DISABLE=1, NCCL_P2P_DISABLE=1, so every byte
  crosses the node's own NICs), run with the diagnose category's options (its timeouts, its short job).

Pure: a kind and the compiled plan's category in, the category (plan form) to run out. The run step swaps it in,
so the job is built, watched, parsed and deleted by the same code as any other diagnose test.
"""

from __future__ import annotations

from nvcre_hera.catalog import CatalogEntry, get_entry

SCREEN_KINDS = ("loopback", "intra")
# the catalog's nccl-tests loopback entry (catalog/communication/nccl-loopback.yaml, test: loopback)
LOOPBACK_DOMAIN, LOOPBACK_VARIANT = "communication", "nccl-loopback"


class UnknownScreen(ValueError):
    """A test's `kind` names no screen: the test fails, naming `group.kind`, and creates no job."""


def screens_for(options: dict, parser: str) -> list[str]:
    """The screens the planner may use for a diagnose category: the `diagnoseScreens` option where the workload's
    parser is nccl (a bus bandwidth a one-node screen can be compared on), else none."""
    if parser != "nccl":
        return []
    return [str(k) for k in (options.get("diagnoseScreens") or [])]


def loopback_entry() -> CatalogEntry:
    return get_entry(LOOPBACK_DOMAIN, LOOPBACK_VARIANT)


def screen_category(kind: object, category: dict) -> dict:
    """The plan category each one-node job of a screen of `kind` runs in place of the diagnose `category` (same
    index and options: the job carries the category's labels and timeouts)."""
    if kind == "intra":
        return category
    if kind == "loopback":
        # a catalog entry travels by name: drop an ad-hoc (WorkloadRun) entry the diagnose category may carry
        return {**{k: v for k, v in category.items() if k != "entry"},
                "domain": LOOPBACK_DOMAIN, "variant": LOOPBACK_VARIANT}
    raise UnknownScreen(f"group.kind: {kind!r} is not a diagnose screen (one of {', '.join(SCREEN_KINDS)})")


__all__ = ["LOOPBACK_DOMAIN", "LOOPBACK_VARIANT", "SCREEN_KINDS", "UnknownScreen", "loopback_entry",
           "screen_category", "screens_for"]
