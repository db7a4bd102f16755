"""The JAX trainer's wall: the reward worker's layers (isolation.py) with the trainer's profile, and its environment.

The trainer (bird/learners/trainer.py) runs compiled reward programs, so it is walled like the reward worker, with
what an accelerator needs: threads; no CPU-time limit (the host's wall-clock watchdog instead); a task limit (a
cgroup of its own where the machine offers one, else RLIMIT_NPROC); read-only Python and compile cache; on a GPU
machine the NVIDIA device nodes (read-write and ioctl, by Landlock) and the driver's ioctl requests (seccomp), and
no RLIMIT_AS (CUDA reserves far more address space than it uses; the cgroup memory limit is then its only memory
limit); and a root trainer keeps uid 0 inside every other layer until its trusted code is loaded, then drops to
nobody before it receives any reward program. It writes nothing: every output comes back on the result channel.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import sys
from typing import Any

from bird.reward import isolation

__all__ = ["trainer_isolation", "explain_trainer", "TRAINER_MODULE"]

TRAINER_MODULE = "bird.learners.trainer"
_ENV_PASSED = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "TF_CPP_MIN_LOG_LEVEL")
_ENV_PREFIXES = ("JAX_", "XLA_")  # the user's JAX/XLA settings: configuration, never secrets
_SYSCALLS = ("sched_getparam", "sched_getscheduler")  # XLA's threads read their scheduling parameters
# NVIDIA's driver: control and device ioctls are _IOWR('F', nr, size); nvidia-uvm's are small integers plus
# UVM_INITIALIZE/UVM_DEINITIALIZE. Landlock (ABI >= 5) keeps ioctls to the device nodes listed.
_NVIDIA_IOCTLS = ((0xFF00, 0x4600), (0xFFFFFF00, 0), (0xFFFFFFFF, 0x30000001), (0xFFFFFFFF, 0x30000002))
_GPU_READS = ("/proc/driver/nvidia", "/proc/devices", "/proc/modules", "/proc/meminfo", "/proc/self/maps",
              "/proc/self/status", "/sys/bus/pci", "/sys/devices", "/sys/module/nvidia", "/sys/module/nvidia_uvm")
_GPU_SYSCALLS = ("sched_setaffinity", "mlock", "munlock", "get_mempolicy", "mbind", "eventfd2", "epoll_create1",
                 "epoll_ctl", "epoll_wait", "epoll_pwait", "pipe2")  # unverified: no GPU where this was written


def gpu_nodes() -> list[str]:
    """The NVIDIA device nodes of this machine (empty without a GPU)."""
    return sorted(p for p in glob.glob("/dev/nvidia*") + glob.glob("/dev/nvidia-caps/*") if not os.path.isdir(p))


_PACKAGES = ("jax", "jaxlib", "jax_plugins", "brax", "flax", "optax", "chex", "mujoco", "numpy", "scipy", "ml_dtypes",
             "opt_einsum", "etils", "absl", "msgpack", "orbax", "typing_extensions", "yaml", "omegaconf", "hydra",
             "nvidia", "trimesh", "tensorstore", "jaxopt", "flatbuffers")  # found wherever they are installed
_BIRD = ("bird", "bird.envs", "bird.methods", "bird.conf")  # bird's packages (some map to other checkout folders)


def _python_tree() -> list[str]:
    """What the trainer may read of the Python installation besides the standard library and the system libraries
    (isolation adds those): the site-packages directories on sys.path, the directories of the packages it imports
    wherever they are installed, and of bird's checkout only its package folders (a checkout, or a script's
    directory, may hold `.env` files)."""
    paths = [p for p in sys.path if os.path.isabs(p) and os.path.isdir(p)
             and os.path.basename(p.rstrip("/")) in ("site-packages", "dist-packages")]
    for name in (*_PACKAGES, *_BIRD):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        for where in list(spec.submodule_search_locations or []) if spec else []:
            paths.append(where)
    return list(dict.fromkeys(paths))


def trainer_isolation(memory_mb: int, cache: str | None) -> tuple[isolation.IsolationConfig, dict[str, str]]:
    """The trainer's IsolationConfig and whole environment (besides PATH). `cache`: JAX's persistent cache
    directory (read-only for the trainer), None when off."""
    gpu = gpu_nodes()
    reads = _python_tree() + ["/dev/urandom", "/proc/cpuinfo"] + ([cache] if cache and os.path.isdir(cache) else [])
    cfg = isolation.IsolationConfig(
        memory_mb=0 if gpu else memory_mb, cgroup_memory_mb=memory_mb, call_timeout_s=1.0, host_pid=os.getpid(), threads=True,
        extra_read_paths=tuple(reads + (list(_GPU_READS) if gpu else [])),
        extra_syscalls=_SYSCALLS + (_GPU_SYSCALLS if gpu else ()), devices=tuple(gpu),
        ioctls=_NVIDIA_IOCTLS if gpu else (), max_files=1024, max_tasks=min(8192, 64 + 16 * (os.cpu_count() or 1)),
        defer_uid_drop=True, cpu_budget_s=0)
    env = {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3",
           "XLA_PYTHON_CLIENT_PREALLOCATE": "false", "CUDA_CACHE_DISABLE": "1", "BIRD_JAX_CACHE": cache or "off",
           "MUJOCO_GL": "disable"}  # no rendering: MuJoCo's OpenGL probe would start a process
    env.update({k: v for k, v in os.environ.items() if k in _ENV_PASSED or k.startswith(_ENV_PREFIXES)})
    return cfg, env


def explain_trainer(memory_mb: int = 16384, cache: str | None = None) -> list[dict[str, Any]]:
    """The layers a trainer gets on this machine: a trainer process is started with the trainer's profile, applies
    every layer (and its deferred uid drop), reports, and exits."""
    from bird.reward.sandbox import WorkerProcess

    cfg, env = trainer_isolation(memory_mb, cache)
    worker = WorkerProcess(None, cfg.memory_mb, cfg.call_timeout_s, module=TRAINER_MODULE,
                           init={"isolation": cfg.to_json()}, env=env, name="trainer", warn=False)
    try:
        reply, _ = worker.request({"op": "explain"}, b"", 60.0, 0, "trainer layer report", "60 s")
    finally:
        worker.close()
    from bird.reward.replies import layer_list

    dropped = layer_list(reply.get("layers"), ("unprivileged_user",))[0]
    return [dropped if d["name"] == "unprivileged_user" and dropped["active"] else d for d in worker.layers]
