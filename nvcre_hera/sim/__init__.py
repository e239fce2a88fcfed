"""The simulated GPU cluster: nodes, faults, a performance model and job logs in the real tools' formats."""
