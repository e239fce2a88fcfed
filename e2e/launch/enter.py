"""Runs as the first process of a "pod" inside its network namespace (`ip netns exec NS unshare --uts -- python
enter.py ...`): sets the pod's hostname, bind-mounts files over paths in its own mount namespace (ip netns exec
already gave it one, with mount propagation to the host cut), then execs the pod's command with the pod's env.
Everything arrives as argv; nothing goes through a shell.

Usage: enter.py --hostname NAME [--bind SRC DST]... -- ARGV...
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys


def main(args: list[str]) -> None:
    sep = args.index("--")
    opts, argv = args[:sep], args[sep + 1:]
    hostname, binds = None, []
    i = 0
    while i < len(opts):
        if opts[i] == "--hostname":
            hostname, i = opts[i + 1], i + 2
        elif opts[i] == "--bind":
            binds.append((opts[i + 1], opts[i + 2]))
            i += 3
        else:
            raise SystemExit(f"enter.py: unknown option {opts[i]!r}")
    # ip netns exec makes / a slave mount; make it private too, so nothing mounted here can reach the host.
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    for src, dst in binds:
        subprocess.run(["mount", "--bind", src, dst], check=True)
    if hostname:
        socket.sethostname(hostname)
    if not argv:
        raise SystemExit("enter.py: no command")
    os.execvpe(argv[0], argv, os.environ)


if __name__ == "__main__":
    main(sys.argv[1:])
