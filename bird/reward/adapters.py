"""The numpy language's runner (worker side): the four contracts as one batch call returning a float64 table.

`compute_reward` is called on the whole batch; GRACE's `Reward` class (one instance per env slot, re-created after
a done) and PRM4RL's (plan_list, Ψ, Φ) are called per row; BIRD's weighted components (a dict of components and
REWARD_WEIGHTS) on the whole batch, weighted here. Every value the program returns is converted to
float64 here, in the worker: the host only ever receives raw float64 bytes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bird.reward.fields import Fields

__all__ = ["NumpyRunner", "numpy_runner"]

MAX_COMPONENTS = 32


def _as_batch(name: str, value: Any, batch: int) -> np.ndarray:
    """One float64 value per transition. A single-number component is broadcast (a constant term, such as an alive
    bonus); a single-number reward is refused: it is almost always a sum over the whole batch, and broadcast it would
    give every transition the same reward without an error (docs/llm.md)."""
    arr = np.asarray(value, dtype=np.float64)
    if arr.size == 1 and batch > 1 and name != "reward":
        arr = np.full(batch, float(arr.reshape(-1)[0]))
    if arr.size == batch:
        arr = arr.reshape(batch)
    if arr.shape != (batch,):
        hint = (": one number for the whole batch; the program is called on a batch of transitions and must return "
                "one reward per transition (reduce over the last axis only, e.g. np.sum(x, axis=-1))"
                if name == "reward" and arr.size == 1 else "")
        raise ValueError(f"{name} has shape {arr.shape}, expected ({batch},){hint}")
    return arr


def _text(codes: np.ndarray) -> str:
    """A text field's code points (zero-padded) as a str."""
    return "".join(chr(int(c)) for c in codes if 0 < c < 0x110000)


def _column(x: np.ndarray, start: int, size: int, shape: list[int], kind: str) -> Any:
    """One field of a batch: (B,) for a scalar, (B, size) or (B, *shape) for an array, a (B,) str array for text."""
    cols = x[:, start : start + size]
    if kind == "text":
        return np.array([_text(row) for row in cols], dtype=object)
    if shape:
        return cols.reshape(len(x), *shape).copy()
    return x[:, start].copy() if size == 1 else cols.copy()


def _split(fields: list[list[Any]], x: np.ndarray) -> Fields:
    """Named fields of a batch; a field is [name, start, size] or [name, start, size, shape, kind]."""
    return Fields({f[0]: _column(x, f[1], f[2], list(f[3]) if len(f) > 3 else [], f[4] if len(f) > 4 else "")
                   for f in fields})


def _extra_info(fields: list[list[Any]], row: np.ndarray) -> str | None:
    """GRACE's `extra_info` (App. A.7 P0.2: the language goal): the first text field of the episode's first row."""
    text = next((f for f in fields if len(f) > 4 and f[4] == "text"), None)
    return None if text is None else _text(row[text[1] : text[1] + text[2]])


class _ClassAdapter:
    """GRACE's state-only `Reward` class as a batch program: one instance per env slot, carried across calls
    within an episode and re-created after a step whose done flag is set, with the task's text field (BabyAI's
    mission) as its extra_info, else None. reward_fn(next state) -> float."""

    def __init__(self, cls: Any) -> None:
        self.cls = cls
        self.instances: dict[int, Any] = {}
        self.debug: dict[str, str] = {}

    def __call__(self, fields, nxt, dones, n_envs, reset, debug_rows):
        if reset:
            self.instances = {}
        self.debug = {}
        cols = _split(fields, nxt)
        b = len(nxt)
        reward = np.empty(b)
        for row in range(b):
            env = row % n_envs
            inst = self.instances.get(env)
            if inst is None:
                inst = self.instances[env] = self.cls(_extra_info(fields, nxt[row]))
            state = Fields({n: v[row] for n, v in cols.items()})
            reward[row] = float(inst.reward_fn(state))
            if row in debug_rows:
                self.debug[str(row)] = str(inst.debug_fn(state))[:600] if hasattr(inst, "debug_fn") else ""
            if dones[row]:
                self.instances.pop(env, None)
        return reward, {}


class _ProgressAdapter:
    """PRM4RL's program as a batch call: per row, Ψ(s') must be an int in [0, K) and Φ(s), Φ(s') finite floats.
    The reward is the raw progress Φ(s'); the harness builds any shaping from the components (bird/reward/shaping.py)."""

    def __init__(self, ns: dict[str, Any]) -> None:
        plan = ns.get("plan_list", ns.get("PLAN_LIST"))
        if not isinstance(plan, (list, tuple)) or not plan or not all(isinstance(p, str) for p in plan):
            raise ValueError(f"plan_list must be a non-empty list of strings, got {str(type(plan).__name__)}")
        self.plan = [str(p) for p in plan]
        self.psi, self.phi = ns["determine_subtask"], ns["progress"]

    def subtask(self, state):
        k = self.psi(state)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"determine_subtask returned a {type(k).__name__}; expected an int")
        if not 0 <= int(k) < len(self.plan):
            raise IndexError(f"determine_subtask returned {int(k)}, outside [0, {len(self.plan)})")
        return int(k)

    def potential(self, state):
        v = float(self.phi(state))
        if not math.isfinite(v):
            raise FloatingPointError(f"progress returned {v}")
        return v

    def __call__(self, fields, obs, nxt):
        cur, new = _split(fields, obs), _split(fields, nxt)
        b = len(obs)
        out = np.empty((3, b))
        for row in range(b):
            s = Fields({n: v[row] for n, v in cur.items()})
            s2 = Fields({n: v[row] for n, v in new.items()})
            out[:, row] = (self.potential(s), self.potential(s2), self.subtask(s2))
        return out[1].copy(), {"potential_prev": out[0], "potential": out[1], "subtask": out[2]}


class _WeightedAdapter:
    """component_dict_plus_weights: compute_reward returns a dict of components (a (reward, dict) pair is read for its
    dict); the reward is sum(REWARD_WEIGHTS[k] * component k). Components are reported unweighted."""

    def __init__(self, fn: Any, ns: dict[str, Any]) -> None:
        weights = ns.get("REWARD_WEIGHTS")
        if type(weights) is not dict or not weights or len(weights) > MAX_COMPONENTS:
            raise ValueError(f"REWARD_WEIGHTS must be a dict of 1 to {MAX_COMPONENTS} {{component: weight}}, "
                             f"got a {type(weights).__name__}")
        if not all(type(k) is str for k in weights):
            raise ValueError("REWARD_WEIGHTS keys must be component names (strings)")
        self.weights = {k: float(v) for k, v in weights.items()}
        if not all(math.isfinite(v) for v in self.weights.values()):
            raise ValueError(f"REWARD_WEIGHTS has a non-finite weight: {self.weights}")
        self.fn = fn

    def __call__(self, fields, obs, act, nxt):
        out = self.fn(_split(fields, obs), act.copy(), _split(fields, nxt), {})
        comps = out[1] if type(out) is tuple and len(out) == 2 and type(out[1]) is dict else out
        if type(comps) is not dict:
            raise TypeError("compute_reward must return a dict of reward components")
        names = {k for k in comps if type(k) is str}
        if names != set(self.weights) or len(comps) != len(names):
            raise TypeError(f"components {sorted(map(str, comps))} and REWARD_WEIGHTS keys {sorted(self.weights)} must match")
        reward = np.zeros(len(obs))
        for k, v in comps.items():
            reward = reward + self.weights[k] * np.asarray(v, dtype=np.float64)
        return reward, comps


class NumpyRunner:
    """One call: header {batch, obs_dim, act_dim, n_envs, reset, has_dones, debug_rows} + float64 payload
    -> reply {ok, names[, debug]} + float64 (batch, 1 + len(names)) bytes."""

    def __init__(self, ns: dict[str, Any], contract: str, entry: str, fields: list[list[Any]]) -> None:
        self.fields, self.meta = fields, {}
        if contract == "reward_class":
            self.fn: Any = _ClassAdapter(ns[entry])
        elif contract == "progress_program":
            self.fn = _ProgressAdapter(ns)
            self.meta["plan_list"] = self.fn.plan
        elif contract == "weighted_components":
            self.fn = _WeightedAdapter(ns[entry], ns)
            self.meta["weights"] = self.fn.weights
        else:
            self.fn = ns[entry]

    def _outputs(self, header: dict[str, Any], payload: bytes) -> Any:
        b, d, a = int(header["batch"]), int(header["obs_dim"]), int(header["act_dim"])
        flat = np.frombuffer(payload, dtype=np.float64)
        obs = flat[: b * d].reshape(b, d)
        act = flat[b * d : b * d + b * a].reshape(b, a)
        nxt = flat[b * d + b * a : 2 * b * d + b * a].reshape(b, d)
        dones = flat[2 * b * d + b * a :] if header.get("has_dones") else np.zeros(b)
        if isinstance(self.fn, _ClassAdapter):
            return self.fn(self.fields, nxt, dones != 0, int(header.get("n_envs", 1)), bool(header.get("reset")),
                           {int(r) for r in header.get("debug_rows", [])})
        if isinstance(self.fn, _ProgressAdapter):
            return self.fn(self.fields, obs, nxt)
        if isinstance(self.fn, _WeightedAdapter):
            return self.fn(self.fields, obs, act, nxt)
        return self.fn(_split(self.fields, obs), act.copy(), _split(self.fields, nxt), {})

    def __call__(self, header: dict[str, Any], payload: bytes) -> tuple[dict[str, Any], bytes]:
        b = int(header["batch"])
        try:
            out = self._outputs(header, payload)
        except (TypeError, IndexError) as exc:
            if not isinstance(self.fn, _ProgressAdapter | _WeightedAdapter):
                raise
            return {"ok": False, "kind": "bad_output", "reason": str(exc)}, b""
        except FloatingPointError as exc:
            return {"ok": False, "kind": "non_finite", "reason": str(exc)}, b""
        if not (type(out) is tuple and len(out) == 2 and type(out[1]) is dict):
            return {"ok": False, "kind": "bad_output", "reason": "must return (reward, components_dict)"}, b""
        items = list(out[1].items())
        if len(items) > MAX_COMPONENTS:
            return {"ok": False, "kind": "bad_output", "reason": f"more than {MAX_COMPONENTS} components"}, b""
        if not all(type(k) is str for k, _ in items):
            return {"ok": False, "kind": "bad_output", "reason": "component names must be strings"}, b""
        names = [k for k, _ in items]
        try:
            reward = _as_batch("reward", out[0], b)
            comps = [_as_batch(f"component {k!r}", v, b) for k, v in items]
        except (ValueError, TypeError) as exc:
            return {"ok": False, "kind": "bad_output", "reason": str(exc)}, b""
        data = np.stack([reward, *comps], axis=1) if comps else reward[:, None]
        reply: dict[str, Any] = {"ok": True, "names": names}
        if isinstance(self.fn, _ClassAdapter):
            reply["debug"] = self.fn.debug
        return reply, np.ascontiguousarray(data, dtype=np.float64).tobytes()


def numpy_runner(ns: dict[str, Any], contract: str, entry: str, fields: list[list[Any]]) -> NumpyRunner:
    return NumpyRunner(ns, contract, entry, fields)
