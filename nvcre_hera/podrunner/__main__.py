"""`python -m nvcre_hera.podrunner [--state-dir .e2e/run] [--scale 100]`: run the pods of the loopback control
plane's namespace until killed (SIGTERM). `make e2e-up` starts it in the background; `certify --engine argo` too."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from kubernetes import config

    from nvcre_hera.controlplane import load_state
    from nvcre_hera.local_run import DEFAULT_CLUSTER
    from nvcre_hera.podrunner.runner import PodRunner

    p = argparse.ArgumentParser(prog="python -m nvcre_hera.podrunner")
    p.add_argument("--state-dir", default=".e2e/run")
    p.add_argument("--scale", type=float, default=100.0, help="simulated seconds per real second")
    args = p.parse_args(argv)
    state = load_state(args.state_dir)
    if state is None:
        print(f"podrunner: no control plane state in {args.state_dir} (run make e2e-up)", file=sys.stderr)
        return 2
    admin = config.new_client_from_config(str(state.admin_kubeconfig))
    sa = config.new_client_from_config(str(state.sa_kubeconfig))
    runner = PodRunner(admin, sa, state.namespace, str(DEFAULT_CLUSTER), scale=args.scale,
                       state_dir=Path(args.state_dir), say=lambda line: print(line, flush=True))
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    print(f"podrunner: running pods of namespace {state.namespace} at {args.scale:g} simulated s per s", flush=True)
    runner.serve(lambda: bool(stopping))
    return 0


if __name__ == "__main__":
    sys.exit(main())
