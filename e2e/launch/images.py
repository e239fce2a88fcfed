"""What the launch test assumes of a workload image's ssh set-up, per image repository, with its source. The test
builds each namespace's /etc/ssh from this machine's Debian openssh packages plus these lines, the way the image's
Dockerfile edits its own; an image not listed gets the packages' stock configuration (and says so in the result).

Only ssh is modelled: whether an image holds the binaries a command names (sshd, mpirun, the benchmark) is outside
this test (the stand-ins are put where the command says).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ImageSSH:
    ssh_config: tuple[str, ...]   # client options added under `Host *`
    sshd_config: tuple[str, ...]  # server options added
    source: str


# coreweave/nccl-tests Dockerfile L288-291 (shared/reference/workload-images.md §1): StrictHostKeyChecking no,
# UserKnownHostsFile /dev/null in ssh_config, StrictModes no in sshd_config; the port is left at 22 on both sides.
_COREWEAVE = ImageSSH(("StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"), ("StrictModes no",),
                      "coreweave/nccl-tests Dockerfile L288-291 (docs/e2e.md, Launch)")
_STOCK = ImageSSH((), (), "no verified ssh configuration for this image: Debian openssh defaults")

_KNOWN = {"ghcr.io/coreweave/nccl-tests": _COREWEAVE}


def image_ssh(image: str) -> ImageSSH:
    repo = image.split("@", 1)[0].rsplit(":", 1)[0] if "/" in image else image
    return _KNOWN.get(repo, _STOCK)


__all__ = ["ImageSSH", "image_ssh"]
