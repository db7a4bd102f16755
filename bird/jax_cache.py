"""JAX's persistent compilation cache: compiled programs are reused across processes and runs on the same CPU."""

from __future__ import annotations

import hashlib
import os
import platform
from pathlib import Path

__all__ = ["cache_dir", "enable_compilation_cache", "host_cpu_key", "without_persistent_cache"]

_DONE = False
_PERSISTENT = True
_CPUINFO = Path("/proc/cpuinfo")
# /proc/cpuinfo keys that describe the instruction set and micro-architecture XLA:CPU compiles for (x86, then Arm);
# per-core and varying ones (processor, MHz, bogomips, microcode) are left out
_CPU_KEYS = ("vendor_id", "cpu family", "model", "model name", "flags", "cpu implementer", "cpu architecture",
             "cpu variant", "cpu part", "features", "isa", "uarch")


def host_cpu_key(cpuinfo: str | None = None) -> str:
    """`<machine>-<12 hex>`: a digest of the host CPU's model and feature flags (/proc/cpuinfo, or `cpuinfo` text).

    Two hosts share a key only when their CPUs report the same model and features, so an executable compiled for
    one (e.g. with AVX-512) is never loaded on another that lacks them (XLA warns "+prefer-no-gather ... SIGILL").
    Without /proc/cpuinfo (macOS, Windows) it falls back to platform.processor().
    """
    if cpuinfo is None:
        try:
            cpuinfo = _CPUINFO.read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    lines = set()
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in _CPU_KEYS:
            lines.add(f"{key.strip().lower()}={' '.join(sorted(value.split()))}")
    described = "\n".join(sorted(lines)) or f"processor={platform.processor()}"
    digest = hashlib.sha256(f"{platform.machine()}\n{described}".encode()).hexdigest()[:12]
    return f"{platform.machine() or 'unknown'}-{digest}"


def cache_dir() -> str | None:
    """The persistent cache's directory (BIRD_JAX_CACHE, else ~/.cache/bird/jax); None when BIRD_JAX_CACHE=off."""
    where = os.environ.get("BIRD_JAX_CACHE") or str(Path.home() / ".cache" / "bird" / "jax")
    return None if where == "off" else where


def without_persistent_cache() -> None:
    """This process compiles without JAX's persistent cache: enable_compilation_cache then leaves JAX's cache off
    (the host's compile step, bird/learners/jax_executables.py). Call it before the first enable."""
    global _PERSISTENT
    _PERSISTENT = False


def enable_compilation_cache() -> None:
    """Point JAX at ~/.cache/bird/jax/<host_cpu_key()> (BIRD_JAX_CACHE replaces ~/.cache/bird/jax; BIRD_JAX_CACHE=off
    disables). Idempotent; call it before the process first imports jax."""
    global _DONE
    if _DONE:
        return
    _DONE = True
    # XLA:CPU logs an error per cached executable it loads (tuning flags it mistakes for missing CPU features)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    # the search process and the trainer may share one GPU: allocate on demand instead of grabbing 75% each
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    where = cache_dir() if _PERSISTENT else None
    if where is None:
        return
    import logging

    import jax

    logging.getLogger("jax._src.xla_bridge").setLevel(logging.WARNING)  # "Unable to initialize backend 'tpu'"
    jax.config.update("jax_compilation_cache_dir", str(Path(where) / host_cpu_key()))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
