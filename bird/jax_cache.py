"""JAX's persistent compilation cache: compiled programs are reused across processes and runs."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["enable_compilation_cache"]

_DONE = False


def enable_compilation_cache() -> None:
    """Point JAX at ~/.cache/bird/jax (BIRD_JAX_CACHE overrides; BIRD_JAX_CACHE=off disables). Idempotent; call it
    before the process first imports jax."""
    global _DONE
    if _DONE:
        return
    _DONE = True
    # XLA:CPU logs an error per cached executable it loads (tuning flags it mistakes for missing CPU features)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    # the search process and the trainer may share one GPU: allocate on demand instead of grabbing 75% each
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    where = os.environ.get("BIRD_JAX_CACHE", str(Path.home() / ".cache" / "bird" / "jax"))
    if where == "off":
        return
    import logging

    import jax

    logging.getLogger("jax._src.xla_bridge").setLevel(logging.WARNING)  # "Unable to initialize backend 'tpu'"
    jax.config.update("jax_compilation_cache_dir", where)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
