"""The two things the kubelet does to a container's command that the launch test must do too: the environment
(the image's, then the container's `env` in order, a later entry winning) and `$(VAR)` expansion in command and
args (Kubernetes docs "Define a Command and Arguments for a Container": `$(VAR)` is replaced by the container's
env var, `$$` escapes it, an undefined reference stays as written). No shell is involved, in Kubernetes or here.
"""

from __future__ import annotations

import re

_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(arg: str, env: dict[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)
    return _REF.sub(sub, arg)


def container_env(image_env: dict[str, str], env: list[tuple[str, str]]) -> dict[str, str]:
    out = dict(image_env)
    for name, value in env:
        out[name] = value
    return out


def command(argv: list[str], env: dict[str, str]) -> list[str]:
    return [expand(a, env) for a in argv]


__all__ = ["command", "container_env", "expand"]
