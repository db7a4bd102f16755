"""A config never carries a secret: an environment interpolation (`${oc.env:VAR}`) that would put a key, token or
password into the config is refused before anything is written, since the resolved config goes to config.yaml,
status.json, the journal, a replay report and the terminal (docs/llm.md, "Keys")."""

from __future__ import annotations

import os
import re
from typing import Any

from omegaconf import DictConfig, OmegaConf

__all__ = ["secret_problems", "string_leaves"]

_ENV = re.compile(r"\$\{\s*(?:oc\.env|env)\s*:\s*['\"]?([^,}'\"\s]+)")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)
_MIN_SECRET = 8  # shorter values are not searched for (too many false matches)


def string_leaves(node: Any, where: str = "") -> list[tuple[str, str]]:
    """(dotted path, text) of every string in a tree of plain dicts and lists (a config as data), in order."""
    if isinstance(node, dict):
        return [x for k, v in node.items() for x in string_leaves(v, f"{where}.{k}" if where else str(k))]
    if isinstance(node, list):
        return [x for i, v in enumerate(node) for x in string_leaves(v, f"{where}[{i}]")]
    return [(where, node)] if isinstance(node, str) else []


def _secret_names(cfg: DictConfig) -> set[str]:
    named = {OmegaConf.select(cfg, k, default=None, throw_on_resolution_failure=False)
             for k in ("llm.api_key_env", "judge.api_key_env")}
    return {n for n in os.environ if _SECRET_NAME.search(n)} | {n for n in named if isinstance(n, str)}


def secret_problems(cfg: DictConfig) -> list[str]:
    """Keys of `cfg` (unresolved) whose environment interpolation names a secret, or resolves to a secret's value
    (another variable holding the same key); never the value itself."""
    names = _secret_names(cfg)
    values = {os.environ[n] for n in names if len(os.environ.get(n, "")) >= _MIN_SECRET}
    raw = OmegaConf.to_container(cfg, resolve=False)
    problems = []
    for where, text in string_leaves(raw):
        for var in _ENV.findall(text):
            if var in names or _SECRET_NAME.search(var) or os.environ.get(var) in values:
                problems.append(f"{where}: an interpolation of the environment variable {var}, which holds a "
                                "secret, would write it into config.yaml, status.json, the journal and the terminal; "
                                "bird refuses it (name the variable with llm.api_key_env instead)")
    return problems
