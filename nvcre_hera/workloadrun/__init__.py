"""WorkloadRun: NVCRE's way to run one workload without the catalog, compiled to the same workflow shape."""
