"""One YAML document from a user's file, safely: every file we read (Certifications, simulated clusters, threshold
profiles, baselines) goes through here, so an unsafe tag is refused the same way everywhere and a syntax error
names its line and column."""

from __future__ import annotations

from typing import Any

import yaml

from nvcre_hera.errors import InputError


def parse_yaml(text: str, source: str) -> Any:
    """Safe YAML only: an unsafe tag (`!!python/…`) is an error, never executed."""
    try:
        docs = list(yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}: line {mark.line + 1}, column {mark.column + 1}" if mark else source
        problem = exc.problem or exc.context or "invalid YAML"
        if "constructor" in problem:
            problem = f"unsafe or unknown YAML tag ({problem})"
        raise InputError(problem, where) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", source) from None
    docs = [d for d in docs if d is not None]
    if len(docs) != 1:
        raise InputError(f"expected exactly one YAML document, found {len(docs)}", source)
    return docs[0]


__all__ = ["parse_yaml"]
