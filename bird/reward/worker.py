"""Reward-program worker: runs untrusted code in its own process, restricted namespace, resource limits.

Started as `python -I worker.py` (no cwd on sys.path, no user site). It imports only the standard library
and numpy, and speaks a framed protocol (JSON headers + raw float64 payloads, never pickle) on stdin/stdout.
"""

import json
import math
import os
import resource
import struct
import sys
import traceback

import numpy as np

ALLOWED_MODULES = {"math": math, "numpy": np, "typing": __import__("typing")}
_SAFE_BUILTIN_NAMES = ["abs", "all", "any", "bool", "dict", "enumerate", "filter", "float", "int", "isinstance", "issubclass", "len", "list", "map", "max", "min", "pow", "range", "reversed", "round", "set", "sorted", "str", "sum", "tuple", "zip", "print", "hasattr", "slice", "frozenset", "divmod", "complex", "object", "staticmethod", "classmethod", "property", "super", "iter", "next", "callable", "Exception", "ValueError", "TypeError", "KeyError", "IndexError", "ZeroDivisionError", "ArithmeticError", "RuntimeError", "AssertionError", "NotImplementedError", "True", "False", "None"]


def _safe_import(name, globals=None, locals=None, fromlist=(), level=0):
    root = name.split(".")[0]
    if level != 0 or root not in ALLOWED_MODULES:
        raise ImportError(f"import of {name!r} is not allowed (allowed: {sorted(ALLOWED_MODULES)})")
    module = __import__(name, globals, locals, fromlist, level)
    return module


def _namespace():
    import builtins

    safe = {n: getattr(builtins, n) for n in _SAFE_BUILTIN_NAMES if hasattr(builtins, n)}
    safe["__import__"] = _safe_import
    safe["__build_class__"] = builtins.__build_class__
    return {"__builtins__": safe, "__name__": "reward_program", "np": np, "numpy": np, "math": math}


def _read_exact(stream, n):
    data = b""
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _read_msg(stream):
    (hlen,) = struct.unpack("<I", _read_exact(stream, 4))
    header = json.loads(_read_exact(stream, hlen))
    (plen,) = struct.unpack("<Q", _read_exact(stream, 8))
    return header, _read_exact(stream, plen) if plen else b""


def _write_msg(stream, header, payload=b""):
    h = json.dumps(header).encode()
    stream.write(struct.pack("<I", len(h)) + h + struct.pack("<Q", len(payload)) + payload)
    stream.flush()


def _limit_resources(memory_mb):
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 2**20, memory_mb * 2**20))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # no file may be written
    try:
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))  # no new processes (not enforced for root)
    except (ValueError, OSError):
        pass


def _error(kind, exc):
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    detail = "".join(line for line in tb if "worker.py" not in line)[-4000:]
    return {"ok": False, "kind": kind, "reason": f"{type(exc).__name__}: {exc}"[:500], "detail": detail}


def _as_batch(name, value, batch):
    arr = np.asarray(value, dtype=np.float64)
    if arr.size == 1 and batch > 1 and name != "reward":
        arr = np.full(batch, float(arr.reshape(-1)[0]))
    if arr.size == batch:
        arr = arr.reshape(batch)
    if arr.shape != (batch,):
        raise ValueError(f"{name} has shape {arr.shape}, expected ({batch},)")
    return arr


def _split(fields, x):
    return {n: (x[:, s].copy() if k == 1 else x[:, s : s + k].copy()) for n, s, k in fields}


class _ClassAdapter:
    """GRACE's state-only `Reward` class as a batch program: one instance per env slot, carried across calls
    within an episode and re-created after a step whose done flag is set. reward_fn(next state) -> float."""

    def __init__(self, cls):
        self.cls = cls
        self.instances = {}
        self.debug = {}

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
                inst = self.instances[env] = self.cls(None)
            state = {n: v[row] for n, v in cols.items()}
            reward[row] = float(inst.reward_fn(state))
            if row in debug_rows:
                self.debug[str(row)] = str(inst.debug_fn(state))[:600] if hasattr(inst, "debug_fn") else ""
            if dones[row]:
                self.instances.pop(env, None)
        return reward, {}


class _ProgressAdapter:
    """PRM4RL's program as a batch call: per row, Ψ(s') must be an int in [0, K) and Φ(s), Φ(s') finite floats.
    The reward is the raw progress Φ(s'); the harness builds any shaping from the components (bird/reward/shaping.py)."""

    def __init__(self, ns):
        plan = ns.get("plan_list", ns.get("PLAN_LIST"))
        if not isinstance(plan, (list, tuple)) or not plan or not all(isinstance(p, str) for p in plan):
            raise ValueError(f"plan_list must be a non-empty list of strings, got {plan!r:.200}")
        self.plan = [str(p) for p in plan]
        self.psi, self.phi = ns["determine_subtask"], ns["progress"]

    def subtask(self, state):
        k = self.psi(state)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"determine_subtask returned {k!r} of type {type(k).__name__}; expected an int")
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
            s = {n: v[row] for n, v in cur.items()}
            s2 = {n: v[row] for n, v in new.items()}
            out[:, row] = (self.potential(s), self.potential(s2), self.subtask(s2))
        return out[1].copy(), {"potential_prev": out[0], "potential": out[1], "subtask": out[2]}


class _WeightedAdapter:
    """component_dict_plus_weights: compute_reward returns a dict of components (a (reward, dict) pair is read for its
    dict); the reward is sum(REWARD_WEIGHTS[k] * component k). Components are reported unweighted."""

    def __init__(self, fn, ns):
        weights = ns.get("REWARD_WEIGHTS")
        if not isinstance(weights, dict) or not weights:
            raise ValueError(f"REWARD_WEIGHTS must be a non-empty dict {{component: weight}}, got {weights!r:.200}")
        self.weights = {str(k): float(v) for k, v in weights.items()}
        if not all(math.isfinite(v) for v in self.weights.values()):
            raise ValueError(f"REWARD_WEIGHTS has a non-finite weight: {self.weights}")
        self.fn = fn

    def __call__(self, fields, obs, act, nxt):
        out = self.fn(_split(fields, obs), act.copy(), _split(fields, nxt), {})
        comps = out[1] if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict) else out
        if not isinstance(comps, dict):
            raise TypeError("compute_reward must return a dict of reward components")
        names = {str(k) for k in comps}
        if names != set(self.weights):
            raise TypeError(f"components {sorted(names)} and REWARD_WEIGHTS keys {sorted(self.weights)} must match")
        reward = np.zeros(len(obs))
        for k, v in comps.items():
            reward = reward + self.weights[str(k)] * np.asarray(v, dtype=np.float64)
        return reward, comps


def _call(fn, fields, header, payload):
    b, d, a = header["batch"], header["obs_dim"], header["act_dim"]
    flat = np.frombuffer(payload, dtype=np.float64)
    obs = flat[: b * d].reshape(b, d)
    act = flat[b * d : b * d + b * a].reshape(b, a)
    nxt = flat[b * d + b * a : 2 * b * d + b * a].reshape(b, d)
    dones = flat[2 * b * d + b * a :] if header.get("has_dones") else np.zeros(b)
    if isinstance(fn, _ClassAdapter):
        out = fn(fields, nxt, dones != 0, int(header.get("n_envs", 1)), bool(header.get("reset")),
                 set(header.get("debug_rows", [])))
    elif isinstance(fn, _WeightedAdapter):
        try:
            out = fn(fields, obs, act, nxt)
        except TypeError as exc:
            return {"ok": False, "kind": "bad_output", "reason": str(exc)[:500]}, b""
    elif isinstance(fn, _ProgressAdapter):
        try:
            out = fn(fields, obs, nxt)
        except (TypeError, IndexError) as exc:
            return {"ok": False, "kind": "bad_output", "reason": str(exc)[:500]}, b""
        except FloatingPointError as exc:
            return {"ok": False, "kind": "non_finite", "reason": str(exc)[:500]}, b""
    else:
        out = fn(_split(fields, obs), act.copy(), _split(fields, nxt), {})
    if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict)):
        return {"ok": False, "kind": "bad_output", "reason": "must return (reward, components_dict)"}, b""
    try:
        reward = _as_batch("reward", out[0], b)
        names = [str(k) for k in out[1]]
        comps = [_as_batch(f"component {k!r}", v, b) for k, v in out[1].items()]
    except (ValueError, TypeError) as exc:
        return {"ok": False, "kind": "bad_output", "reason": str(exc)[:500]}, b""
    data = np.stack([reward, *comps], axis=1) if comps else reward[:, None]
    reply = {"ok": True, "names": names, "batch": b}
    if isinstance(fn, _ClassAdapter):
        reply["debug"] = fn.debug
    return reply, np.ascontiguousarray(data).tobytes()


def main():
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # print() in a program must not corrupt the protocol
    header, _ = _read_msg(stdin)
    _limit_resources(int(header["memory_mb"]))
    fields = header["fields"]
    ns = _namespace()
    try:
        exec(compile(header["code"], "<reward>", "exec"), ns)
        fn = ns[header["entry"]]
        meta = {}
        if header.get("contract") == "reward_class":
            fn = _ClassAdapter(fn)
        elif header.get("contract") == "progress_program":
            fn = _ProgressAdapter(ns)
            meta["plan_list"] = fn.plan
        elif header.get("contract") == "weighted_components":
            fn = _WeightedAdapter(fn, ns)
            meta["weights"] = fn.weights
    except Exception as exc:  # noqa: BLE001 - every failure is reported to the parent
        _write_msg(stdout, _error("runtime_error", exc))
        return
    _write_msg(stdout, {"ok": True, **meta})
    while True:
        try:
            header, payload = _read_msg(stdin)
        except EOFError:
            return
        try:
            reply, data = _call(fn, fields, header, payload)
        except MemoryError as exc:
            reply, data = _error("runtime_error", exc), b""
        except Exception as exc:  # noqa: BLE001
            reply, data = _error("runtime_error", exc), b""
        _write_msg(stdout, reply, data)


if __name__ == "__main__":
    os.umask(0o777)
    main()
