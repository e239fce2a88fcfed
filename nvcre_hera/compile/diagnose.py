"""testScale: diagnose — recursive templates that narrow a failing group down to suspect nodes."""

from __future__ import annotations

from nvcre_hera.errors import InputError


def require_diagnose_support(categories: list) -> None:
    keys = ", ".join(c.key for c in categories)
    raise InputError(f"testScale diagnose is not supported by this version yet ({keys}); use intra-node, "
                     "intra-rack or full-scale", "spec.testScale")
