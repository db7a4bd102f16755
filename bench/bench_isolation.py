"""Start-up cost of the worker's namespace layers: a reward worker (numpy or jax language) started with every
layer, next to one started without the pid namespace, the task limit and the minimal mount tree (the stack before
issue 20), interleaved, medians of repeats. The difference is what those layers cost per worker (once per program
check or training, not per call); one call on a 1,024-row batch is timed on each as well.

    python bench/bench_isolation.py [--repeats 15] [--languages numpy jax]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bird.reward import sandbox
from bird.reward.languages import get_language

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import record  # noqa: E402
from isolation_baseline_worker import drops_uid  # noqa: E402


def start_once(language: str, without_new: bool) -> tuple[float, float, float, list[str]]:
    """(start-up seconds, one call's seconds, close seconds, inactive layers) of one worker."""
    module = "isolation_baseline_worker" if without_new else "bird.reward.worker"
    t = time.perf_counter()
    worker = sandbox.WorkerProcess(get_language(language), 8192, 30.0, module=module, extra_paths=(str(HERE),))
    start = time.perf_counter() - t
    inactive = sorted(worker.inactive_layers)
    try:
        code = "def compute_reward(obs, action, next_obs, info):\n    return next_obs['x'] * 2.0, {}\n"
        loaded, _ = worker.request({"code": code, "entry": "compute_reward", "fields": [["x", 0, 1]],
                                    "contract": "compute_reward"}, b"", 30.0, 0, "load", "30 s")
        if not loaded.get("ok"):
            raise RuntimeError(f"{language} worker ({module}) did not load the program: {loaded}")
        obs = np.zeros((1024, 1))
        header = {"batch": 1024, "obs_dim": 1, "act_dim": 1, "n_envs": 1, "reset": False, "has_dones": False,
                  "debug_rows": []}
        if language == "jax":
            worker.request({"op": "trace", "act_dim": 1}, b"", 120.0, 0, "trace", "120 s")
        payload = obs.tobytes() * 3
        worker.request(header, payload, 30.0, 1 << 20, "call", "30 s")  # the first call compiles (jax)
        t = time.perf_counter()
        worker.request(header, payload, 30.0, 1 << 20, "call", "30 s")
        call = time.perf_counter() - t
    finally:
        t = time.perf_counter()
        worker.close()
        close = time.perf_counter() - t
    return start, call, close, inactive


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--languages", nargs="+", default=["numpy", "jax"])
    args = parser.parse_args()
    load = os.getloadavg()[0]
    started = record.begin()
    print(f"{args.repeats} repeats per variant, interleaved; uid {os.geteuid()}; {os.cpu_count()} cores; "
          f"load average {load:.1f} before")
    if not drops_uid():
        print("the baseline keeps root's uid: the install lies under a directory other users cannot enter, where the "
              "stack without the mount tree cannot read it after dropping root")
    for language in args.languages:
        runs: dict[bool, list[tuple[float, float, float]]] = {False: [], True: []}
        missing: list[str] = []
        for _ in range(args.repeats):
            for without in (False, True):
                start, call, close, inactive = start_once(language, without)
                runs[without].append((start, call, close))
                if not without:
                    missing = inactive
        full = [statistics.median(x) for x in zip(*runs[False], strict=True)]
        base = [statistics.median(x) for x in zip(*runs[True], strict=True)]
        print(f"{language}: start-up median {full[0] * 1e3:.0f} ms with every layer, {base[0] * 1e3:.0f} ms without "
              f"pid_namespace/task_limit/mount_namespace: {(full[0] - base[0]) * 1e3:+.0f} ms per worker "
              f"(ratio {full[0] / base[0]:.2f}); close {full[2] * 1e3:.0f} ms vs {base[2] * 1e3:.0f} ms; one 1,024-row "
              f"call {full[1] * 1e3:.2f} ms vs {base[1] * 1e3:.2f} ms" + (f"; inactive here: {missing}" if missing else ""))
        record.append("isolation", {"language": language, "repeats": args.repeats, "startup_ms": full[0] * 1e3,
                                    "baseline_startup_ms": base[0] * 1e3, "ratio": full[0] / base[0],
                                    "call_ms": full[1] * 1e3, "baseline_call_ms": base[1] * 1e3,
                                    "close_ms": full[2] * 1e3, "inactive_layers": " ".join(missing)}, started)
    print(f"load average {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    sys.exit(main())
