"""Where the Argo Server is and how to authenticate to it, from the argo CLI's environment variables (ARGO_SERVER,
ARGO_SECURE, ARGO_INSECURE_SKIP_VERIFY, ARGO_TOKEN: https://argo-workflows.readthedocs.io/en/latest/cli/argo/).
Shared by `nvcre submit` and `nvcre report --workflow`."""

from __future__ import annotations

import os

from nvcre_hera.errors import InputError


def argo_connection(insecure: bool = False) -> tuple[str, str | None, bool]:
    """(host URL, token, verify TLS) from the argo CLI's environment variables."""
    server = os.environ.get("ARGO_SERVER", "").strip()
    if not server:
        raise InputError("ARGO_SERVER is not set (host:port of the Argo Server, as for the argo CLI)", "environment")
    if "://" not in server:
        secure = os.environ.get("ARGO_SECURE", "true").lower() != "false"
        server = ("https://" if secure else "http://") + server
    skip = insecure or os.environ.get("ARGO_INSECURE_SKIP_VERIFY", "").lower() == "true"
    return server.rstrip("/"), os.environ.get("ARGO_TOKEN") or None, not skip


__all__ = ["argo_connection"]
