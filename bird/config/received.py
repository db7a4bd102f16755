"""A config someone else may have written (a run directory's config.yaml, a bundle's) is data, never authority.

It is read as plain YAML: an interpolation (`${...}`) in it is refused, never resolved. The keys that carry authority
(AUTHORITY: where bird connects and with which secret, where it writes outside the run directory, how loose its
sandbox and trainer limits are) come from this machine: the schema's default or the command line's override. A
received endpoint or path that differs is replaced by the local value and reported; a received limit looser than the
local one stops the command with the keys named, since the local value would change the result, and so does a task
section naming code or files (bird/config/received_task.py). `trust=True` (`--trust-config`) accepts every received
value, reported the same way. docs/security.md, "Trust boundary".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from bird.config.load import ConfigError
from bird.config.overrides import apply_overrides, override_data, override_keys
from bird.config.received_task import received_task
from bird.config.schema import BirdConfig
from bird.config.secrets import string_leaves
from bird.files import load_yaml, read_text

__all__ = ["AuthorityKey", "AUTHORITY", "add_authority_key", "load_received", "adopt"]

KINDS = ("endpoint", "path", "limit", "code")


@dataclass(frozen=True)
class AuthorityKey:
    """A config key whose value grants authority. `kind`: endpoint (a connection or a credential), path (outside the
    run directory), limit (larger = looser) or code (modules bird imports: only ones the user names run); `unlimited`: the limit's value that means none (the loosest);
    `inert`: (key, value) of the final config under which this key grants nothing and is kept as received (the LLM
    endpoint under llm.cache=replay, which builds no client and reads no key: the address stays part of the recorded
    answers' cache keys)."""

    key: str
    kind: str
    unlimited: float | None = None
    inert: tuple[str, Any] | None = None


_REPLAY = ("llm.cache", "replay")
AUTHORITY: list[AuthorityKey] = [
    *(AuthorityKey(k, "endpoint", inert=_REPLAY) for k in (
        "llm.base_url", "llm.api_key_env", "judge.base_url", "judge.api_key_env")),
    *(AuthorityKey(k, "endpoint") for k in (
        "train.executor", "ray.address", "ray.num_cpus", "ray.object_store_mb", "ray.include_dashboard",
        "tracker.backend", "tracker.uri", "tracker.mode")),
    *(AuthorityKey(k, "path") for k in ("llm.cache_dir", "tracker.dir")),
    AuthorityKey("plugins", "code"),
    AuthorityKey("verify.call_timeout_s", "limit"),
    AuthorityKey("verify.memory_mb", "limit"),
    AuthorityKey("train.timeout_s", "limit", unlimited=0),
    AuthorityKey("train.jax.trainer_memory_mb", "limit", unlimited=0),
    AuthorityKey("train.jax.compile_timeout_s", "limit"),
    AuthorityKey("train.jax.update_timeout_s", "limit"),
]


def add_authority_key(key: str, kind: str, unlimited: float | None = None,
                      inert: tuple[str, Any] | None = None) -> None:
    """Declare another key (a plugin's endpoint, a new limit) whose received value must not be taken on trust."""
    if kind not in KINDS:
        raise ValueError(f"authority kind {kind!r}; allowed: {list(KINDS)}")
    AUTHORITY.append(AuthorityKey(key, kind, unlimited, inert))


def _interpolations(data: dict[str, Any]) -> list[str]:
    return [where for where, text in string_leaves(data) if "${" in text]


def load_received(path: Path) -> dict[str, Any]:
    """A received config.yaml as plain data: a regular file of at most LIMITS["config"] bytes, parsed with bounds and
    without aliases (bird/files.py). Raises ConfigError when it cannot be read so, is not a YAML mapping or holds an
    interpolation (resolving one would run a resolver the file chose: `${oc.env:OPENAI_API_KEY}` reads a secret)."""
    try:
        data = load_yaml(read_text(Path(path), "config"))
    except (OSError, ValueError) as exc:  # UnsafeFileError, UnicodeDecodeError, BoundedParseError, not YAML
        raise ConfigError(f"{path}: not a readable YAML config ({type(exc).__name__}: {str(exc)[:200]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a config (a YAML mapping)")
    if found := _interpolations(data):
        raise ConfigError(f"{path}: {', '.join(found[:5])} hold an interpolation (${{...}}); a received config is "
                          "data and bird resolves nothing in it")
    return data


def _looser(received: Any, local: Any, unlimited: float | None) -> bool:
    def size(v: Any) -> float:
        return math.inf if v is None or (unlimited is not None and v == unlimited) else float(v)

    return size(received) > size(local)


def adopt(received: dict[str, Any], overrides: list[str], trust: bool = False) -> tuple[dict[str, Any], list[str]]:
    """`received` with its authority keys set from this machine; returns (config data, notes on what differed).

    The local value of a key is the schema default, or the override given for it (which is merged last anyway);
    overrides take Hydra's prefixes (bird/config/overrides.py).
    Raises ConfigError naming every received limit looser than the local one, every plugin and every code target or
    file of the task section (bird/config/received_task.py) the user has not vouched for, unless `trust`."""
    try:
        typed = OmegaConf.merge(OmegaConf.structured(BirdConfig), received)
        out = OmegaConf.create(received)
    except (OmegaConfBaseException, ValueError) as exc:
        raise ConfigError(f"received config: {exc}") from None
    final = typed.copy()
    apply_overrides(final, overrides)  # Hydra's rules, on the config the run will have
    try:  # this machine's values: the schema's, or those the overrides set (a section's too)
        local = OmegaConf.structured(BirdConfig)
        with open_dict(local):
            local.merge_with(override_data(overrides))
    except OmegaConfBaseException as exc:
        raise ConfigError(f"overrides: {exc}") from None
    mine = override_keys(overrides)
    notes, looser, code = [], [], []
    for ak in AUTHORITY:
        if ak.key in mine:
            continue
        theirs, ours = OmegaConf.select(typed, ak.key), OmegaConf.select(local, ak.key)
        if theirs == ours:
            continue
        if ak.inert is not None and OmegaConf.select(final, ak.inert[0]) == ak.inert[1]:
            notes.append(f"{ak.key}: the received {theirs!r} is kept, inert under {ak.inert[0]}={ak.inert[1]}")
        elif ak.kind == "limit" and not _looser(theirs, ours, ak.unlimited):
            notes.append(f"{ak.key}: the received {theirs!r} is kept (stricter than the local {ours!r})")
        elif trust:
            notes.append(f"{ak.key}: the received {theirs!r} is used instead of the local {ours!r} (--trust-config)")
        elif ak.kind == "limit":
            looser.append(f"{ak.key}={theirs!r} (local {ours!r})")
        elif ak.kind == "code":
            code.append(f"{ak.key}={_plain_value(theirs)!r}")
        else:
            OmegaConf.update(out, ak.key, ours, force_add=True)
            notes.append(f"{ak.key}: the received {theirs!r} is ignored; the local {ours!r} is used "
                         "(--trust-config takes the received value)")
    task_notes, task_refusal = received_task(received.get("env"), overrides, trust)
    refusals = [r for r in (task_refusal,) if r is not None]
    if code:
        refusals.append("the received config imports code: " + ", ".join(code) + ". bird imports only the modules "
                        "you name: give them yourself (e.g. " + code[0] + "; bundle replay: --plugin MODULE) or "
                        "pass --trust-config")
    if looser:
        refusals.append("the received config loosens bird's limits: " + ", ".join(looser) + ". Limits come from "
                        "this machine: give a value yourself (e.g. " + looser[0].split(" ")[0] + ") or pass "
                        "--trust-config to accept the received ones")
    if refusals:
        raise ConfigError("\n".join(refusals))
    return _plain(out), notes + task_notes


def _plain_value(value: Any) -> Any:
    return OmegaConf.to_container(value) if isinstance(value, DictConfig | ListConfig) else value


def _plain(cfg: DictConfig) -> dict[str, Any]:
    data = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(data, dict)
    return data  # type: ignore[return-value]
