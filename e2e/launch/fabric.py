"""Pods as processes in Linux network namespaces on this machine: one namespace per pod, each with a veth whose
other end sits on a bridge inside a separate "switch" namespace, addresses from a private /24 that exists only
inside these namespaces. The host's own network namespace is never changed and nothing is sent to any address
outside them.

A Fabric is a context manager: on exit (also after an exception) it stops every process it started and every
process left in its namespaces (by pid, from `ip netns pids`), deletes its namespaces, removes the mount points it
had to create on the host (only those; deepest first) and its scratch directory. Bind mounts live in the pods'
own mount namespaces and vanish with their processes.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ENTER = Path(__file__).with_name("enter.py")
SUBNET = "10.200.0"  # private, and only ever configured inside the namespaces made here


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass
class Node:
    netns: str
    address: str
    hostname: str
    procs: list[subprocess.Popen] = field(default_factory=list)


class Fabric:
    def __init__(self, tag: str | None = None) -> None:
        self.tag = tag or f"{os.getpid() % 100000:05d}"
        self.switch = f"nvl{self.tag}-sw"
        self.nodes: list[Node] = []
        self.scratch = Path(tempfile.mkdtemp(prefix=f"nvcre-launch-{self.tag}-"))
        self._created: list[Path] = []  # mount points made on the host, removed on close
        self._namespaces: list[str] = []

    def __enter__(self) -> Fabric:
        self._add_netns(self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _add_netns(self, name: str) -> None:
        _ip("netns", "add", name)
        self._namespaces.append(name)

    def add_node(self, hostname: str) -> Node:
        i = len(self.nodes)
        ns = f"nvl{self.tag}-{i}"
        self._add_netns(ns)
        _ip("-n", self.switch, "link", "add", f"v{i}", "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("-n", self.switch, "link", "set", f"v{i}", "master", "br0", "up")
        address = f"{SUBNET}.{10 + i}"
        _ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        node = Node(ns, address, hostname)
        self.nodes.append(node)
        return node

    def mount_point(self, path: str, is_dir: bool) -> None:
        """Make sure `path` exists on the host so it can be bound over; remember what had to be created."""
        p = Path(path)
        missing = []
        for q in [p, *p.parents]:
            if q.exists():
                break
            missing.append(q)
        for q in reversed(missing):
            if q == p and not is_dir:
                q.touch()
            else:
                q.mkdir()
            self._created.append(q)

    def start(self, node: Node, argv: list[str], env: dict[str, str], binds: list[tuple[str, str]],
              log: Path) -> subprocess.Popen:
        """Start `argv` as the pod's main process: own hostname, bind mounts, exactly this env (no host env)."""
        for src, dst in binds:
            self.mount_point(dst, Path(src).is_dir())
        cmd = ["ip", "netns", "exec", node.netns, "unshare", "--uts", "--", sys.executable, str(ENTER),
               "--hostname", node.hostname]
        for src, dst in binds:
            cmd += ["--bind", src, dst]
        with open(log, "wb") as out:
            proc = subprocess.Popen([*cmd, "--", *argv], env=env, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        node.procs.append(proc)
        return proc

    def listening(self, node: Node, port: int) -> bool:
        """A TCP listener on `port` in the node's namespace (what a tcpSocket readinessProbe finds)."""
        out = subprocess.run(["ip", "netns", "exec", node.netns, "ss", "-Hltn", f"sport = :{port}"],
                             capture_output=True, text=True)
        return out.returncode == 0 and bool(out.stdout.strip())

    def wait_listening(self, node: Node, port: int, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.listening(node, port):
                return True
            if any(p.poll() is not None for p in node.procs):
                return False
            time.sleep(0.2)
        return False

    def _namespace_pids(self, ns: str) -> list[int]:
        out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        return [int(t) for t in out.stdout.split() if t.isdigit()]

    def close(self) -> None:
        for node in self.nodes:
            for proc in node.procs:
                if proc.poll() is None:
                    try:
                        os.killpg(proc.pid, signal.SIGTERM)
                    except ProcessLookupError:
                        pass
        for node in self.nodes:
            for proc in node.procs:
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=5)
        for ns in self._namespaces:  # sshd's sessions, orted, ranks: whatever is left in a namespace
            for _ in range(3):
                pids = self._namespace_pids(ns)
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.2)
        for ns in reversed(self._namespaces):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self._namespaces.clear()
        for p in reversed(self._created):
            try:
                p.rmdir() if p.is_dir() else p.unlink()
            except OSError:
                pass
        self._created.clear()
        shutil.rmtree(self.scratch, ignore_errors=True)


__all__ = ["Fabric", "Node", "SUBNET"]
