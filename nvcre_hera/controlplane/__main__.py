"""python -m nvcre_hera.controlplane up|down|status [--state-dir .e2e/run]

Exit codes: 0 done (status: healthy); 1 a component failed, or status found nothing healthy; 2 bad input (missing
binaries or CRD files, a state directory that is not ours)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from nvcre_hera.controlplane.core import ControlPlaneError, down, ensure_up, health
from nvcre_hera.controlplane.install import InstallError
from nvcre_hera.controlplane.state import State, StateError, load_state


def describe(st: State) -> str:
    lines = [f"apiserver     {st.apiserver}", f"argo server   {st.argo_server}", f"namespace     {st.namespace}",
             f"admin         KUBECONFIG={st.admin_kubeconfig}", f"workflow SA   {st.sa_kubeconfig}",
             f"env           source {st.state_dir / 'env.sh'}",
             "versions      " + ", ".join(f"{k} {v}" for k, v in st.versions.items()),
             "pids          " + ", ".join(f"{n} {p}" for n, p in st.pids.items()),
             f"logs          {st.state_dir / 'logs'}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nvcre_hera.controlplane", description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["up", "down", "status"])
    ap.add_argument("--state-dir", default=".e2e/run", type=Path)
    ap.add_argument("--bin-dir", type=Path, help="where e2e/build.sh put the binaries (default .e2e/bin)")
    ap.add_argument("--schemas-dir", type=Path, help="shared/schemas with the CRDs (default ../shared/schemas)")
    a = ap.parse_args(argv)
    try:
        if a.command == "up":
            t0 = time.monotonic()
            st = ensure_up(a.state_dir, bin_dir=a.bin_dir, schemas_dir=a.schemas_dir)
            print(describe(st))
            print(f"up: healthy after {time.monotonic() - t0:.1f} s")
            return 0
        if a.command == "down":
            stopped = down(a.state_dir)
            print(f"down: stopped {', '.join(stopped) if stopped else 'nothing (none was running)'}; "
                  f"{a.state_dir} removed")
            return 0
        st = load_state(a.state_dir)
        if st is None:
            print(f"status: not up ({a.state_dir}/state.json absent)")
            return 1
        print(describe(st))
        problems = health(st)
        print("status: healthy" if not problems else "status: unhealthy: " + "; ".join(problems))
        return 0 if not problems else 1
    except (StateError, InstallError) as e:
        print(f"controlplane: error: {e}", file=sys.stderr)
        return 2
    except ControlPlaneError as e:
        print(f"controlplane: failed: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
