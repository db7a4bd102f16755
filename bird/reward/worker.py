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


def _call(fn, fields, header, payload):
    b, d, a = header["batch"], header["obs_dim"], header["act_dim"]
    flat = np.frombuffer(payload, dtype=np.float64)
    obs = flat[: b * d].reshape(b, d)
    act = flat[b * d : b * d + b * a].reshape(b, a)
    nxt = flat[b * d + b * a :].reshape(b, d)

    def split(x):
        return {n: (x[:, s].copy() if k == 1 else x[:, s : s + k].copy()) for n, s, k in fields}

    out = fn(split(obs), act.copy(), split(nxt), {})
    if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict)):
        return {"ok": False, "kind": "bad_output", "reason": "must return (reward, components_dict)"}, b""
    try:
        reward = _as_batch("reward", out[0], b)
        names = [str(k) for k in out[1]]
        comps = [_as_batch(f"component {k!r}", v, b) for k, v in out[1].items()]
    except (ValueError, TypeError) as exc:
        return {"ok": False, "kind": "bad_output", "reason": str(exc)[:500]}, b""
    data = np.stack([reward, *comps], axis=1) if comps else reward[:, None]
    return {"ok": True, "names": names, "batch": b}, np.ascontiguousarray(data).tobytes()


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
    except Exception as exc:  # noqa: BLE001 - every failure is reported to the parent
        _write_msg(stdout, _error("runtime_error", exc))
        return
    _write_msg(stdout, {"ok": True})
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
