"""What a search ran on (packages, bird, simulators, CPU/GPU) and what in it is not bit-reproducible.

`describe_environment()` is written to the run directory's environment.json (one entry per session: a resumed
search adds one); `determinism(cfg, env)` is result.json's `determinism` record (docs/bundles.md, "Determinism").
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from bird.config.schema import BirdConfig

__all__ = ["PACKAGES", "SIMULATORS", "describe_environment", "determinism", "record_environment", "same_machine"]

SIMULATORS = ("mujoco", "gymnasium", "metaworld", "brax", "mujoco-mjx")
PACKAGES = ("bird-ird", "numpy", "scipy", "torch", "stable-baselines3", "jax", "jaxlib", "flax", "optax",
            "hydra-core", "omegaconf", "openai", "anthropic", "ray", "pandas", "pyarrow", *SIMULATORS)
_JAX_GPU_PLUGINS = ("jax-cuda12-plugin", "jax-cuda13-plugin", "jax-rocm60-plugin")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    """The commit of the bird checkout when bird runs from one (None for an installed wheel)."""
    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _cpu() -> dict[str, Any]:
    """Model name and a hash of the feature flags (same model and flags: the same floating-point code paths)."""
    model, flags = platform.processor() or platform.machine(), ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model in ("", platform.machine(), platform.processor()):
                model = value.strip()
            elif key.strip() in ("flags", "Features") and not flags:
                flags = " ".join(sorted(value.split()))
    except OSError:
        pass
    return {"model": model, "machine": platform.machine(), "count": os.cpu_count(),
            "flags_sha256": hashlib.sha256(flags.encode()).hexdigest()[:16] if flags else None}


def _gpus() -> list[str]:
    """NVIDIA GPUs the driver lists (no CUDA initialisation, no subprocess)."""
    out = []
    for info in sorted(Path("/proc/driver/nvidia/gpus").glob("*/information")):
        try:
            line = next((ln for ln in info.read_text().splitlines() if ln.startswith("Model:")), "Model: ?")
        except OSError:
            continue
        out.append(line.partition(":")[2].strip())
    return out


def describe_environment(plugins: Sequence[str] = ()) -> dict[str, Any]:
    """Python, bird (version and commit), package and simulator versions, the plugins (installed entry points and
    `plugins`, a config's: bird.plugins.describe), CPU and GPU of this process's host."""
    from bird.plugins import describe

    return {
        "python": platform.python_version(), "implementation": sys.implementation.name,
        "platform": platform.platform(), "host": platform.node(),
        "bird": {"version": _version("bird-ird"), "commit": _git_commit()},
        "packages": {name: _version(name) for name in PACKAGES if name != "bird-ird"},
        "simulators": {name: _version(name) for name in SIMULATORS},
        "plugins": describe(plugins),
        "cpu": _cpu(), "gpus": _gpus(),
        "jax_gpu_plugin": next((p for p in _JAX_GPU_PLUGINS if _version(p)), None),
        "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS",
                                                      "JAX_PLATFORMS", "CUDA_VISIBLE_DEVICES")},
    }


def _jax_on_gpu(env: dict[str, Any]) -> bool:
    platforms = (env["threads"].get("JAX_PLATFORMS") or "").lower()
    return bool(env["gpus"]) and bool(env.get("jax_gpu_plugin")) and platforms in ("", "cuda", "gpu", "rocm")


def determinism(cfg: BirdConfig, env: dict[str, Any], sampled_llm: bool) -> dict[str, Any]:
    """result.json's `determinism`: whether the learners' arithmetic is bit-reproducible here (`learner`), the
    sources of run-to-run differences that remain (`sources`), and where the LLM's answers come from (`llm`;
    `sampled_llm`: the generator or judge is a model behind the response cache)."""
    learners = sorted({cfg.train.learner, cfg.final.learner or cfg.train.learner} - {"none"})
    sources = []
    if "jax_ppo" in learners and _jax_on_gpu(env):
        flags = env["threads"].get("XLA_FLAGS") or ""
        if "--xla_gpu_deterministic_ops=true" not in flags:
            sources.append("jax_ppo on GPU: XLA's GPU reductions and scatters run in no fixed order (set "
                           "XLA_FLAGS=--xla_gpu_deterministic_ops=true for bit-reproducible, slower training)")
    if cfg.train.executor == "ray" and cfg.ray.address:
        sources.append("train.executor=ray on a cluster: trainings may land on hosts with another CPU or other "
                       "packages, whose floating-point results can differ in the last bits")
    if cfg.train.timeout_s:
        sources.append(f"train.timeout_s={cfg.train.timeout_s}: a training near the wall-clock limit may finish in "
                       "one run and time out in another")
    limits = {"verify.call_timeout_s": cfg.verify.call_timeout_s}
    # not the cache mode: a recorded and a replayed run write the same result.json (bird/llm/cache.py)
    llm = ("sampled from a model: a re-run draws new answers; replay the transcript to reproduce them"
           if sampled_llm else "a deterministic program (same request, same answer)")
    return {"learner": not sources, "learners": learners, "device": "gpu" if "jax_ppo" in learners and
            _jax_on_gpu(env) else "cpu", "torch_threads_per_training": 1 if "sb3_ppo" in learners else None,
            "sources": sources, "wall_clock_limits": limits, "llm": llm}


def same_machine(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What differs between two environments in ways that can change floating-point results (empty: nothing)."""
    out = []
    for key in ("model", "flags_sha256"):
        if a.get("cpu", {}).get(key) != b.get("cpu", {}).get(key):
            out.append(f"cpu.{key}: {a.get('cpu', {}).get(key)} vs {b.get('cpu', {}).get(key)}")
    for group in ("packages", "simulators"):
        for name in sorted(set(a.get(group, {})) | set(b.get(group, {}))):
            va, vb = a.get(group, {}).get(name), b.get(group, {}).get(name)
            if va != vb:
                out.append(f"{name}: {va} vs {vb}")
    if a.get("gpus") != b.get("gpus"):
        out.append(f"gpus: {a.get('gpus')} vs {b.get('gpus')}")
    return list(dict.fromkeys(out))


def record_environment(root: Path, plugins: Sequence[str] = ()) -> dict[str, Any]:
    """Append this session's environment (with the config's `plugins`) to `root/environment.json`
    (`{"sessions": [...]}`; a resumed search adds one); returns it."""
    from bird.files import read_json, write_json

    path = root / "environment.json"
    env = describe_environment(plugins)
    try:
        sessions = list(read_json(path, "record", root)["sessions"])
    except (OSError, ValueError, KeyError, TypeError):
        sessions = []
    write_json(path, {"sessions": [*sessions, env]})
    return env
