"""The JAX training program's compiled functions as bytes: made by the host's compile step (trusted code and input
only), sent to the isolated trainer, which loads them in about a second instead of tracing Brax's step again.

The compile step keeps them in `<cache dir>/<host cpu key>/executables/`, one file per lowered function, named by a
digest of its StableHLO text and of the compiler (jax and jaxlib versions, backend, devices, `XLA_FLAGS`), so a
fresh host process skips the compile too. The compile step does not use JAX's own persistent cache: an executable
loaded from that cache serializes without some of its kernels ("Function wrapped_slice not found" when it runs).
A serialized executable is native code behind a pickle, so every store file is sealed with an HMAC under this user's
key (bird/sealed.py) and one that does not unseal is compiled again: a planted file runs nothing.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from bird.files import read_bytes, write_bytes
from bird.sealed import seal, unseal

__all__ = ["Executables", "store_dir", "load_all", "StoredPrograms"]

Serialized = tuple[bytes, Any, Any]  # jax.experimental.serialize_executable.serialize's (bytes, in tree, out tree)


def store_dir() -> Path | None:
    """Where the compile step keeps executables (None when BIRD_JAX_CACHE=off)."""
    from bird.jax_cache import cache_dir, host_cpu_key

    where = cache_dir()
    return None if where is None else Path(where) / host_cpu_key() / "executables"


def _digest(lowered: Any) -> str:
    import jax
    import jaxlib

    backend = jax.extend.backend.get_backend()
    compiler = [jax.__version__, jaxlib.__version__, backend.platform, backend.platform_version,
                sorted(d.device_kind for d in jax.devices()), os.environ.get("XLA_FLAGS", "")]
    text = f"{compiler!r}\n{lowered.as_text()}".encode()
    return hashlib.sha256(text).hexdigest()


class Executables:
    """Compiles lowered functions (from the store when it holds them) and keeps each one's serialized form.

    :param write: serialize what is compiled and add it to the store (the compile step); False only reads the store
        (a process that trains in itself, with JAX's persistent cache for what the store lacks).
    """

    def __init__(self, store: Path | None, write: bool = True) -> None:
        self.store, self.write = store, write
        self.serialized: dict[str, Serialized] = {}

    def compile(self, name: str, lowered: Any) -> Any:
        """`lowered.compile()`, or the stored executable of the same program and compiler."""
        import jax
        from jax.experimental.serialize_executable import deserialize_and_load, serialize

        if self.write and jax.config.jax_compilation_cache_dir and jax.config.jax_enable_compilation_cache:
            raise RuntimeError("Executables.compile needs a process without JAX's persistent cache (module docstring)")
        path = self.store / f"{_digest(lowered)}.bin" if self.store is not None else None
        data = _read_sealed(path) if path is not None else None
        if data is not None:
            try:  # the file holds the executable's bytes only: its trees are the lowered function's
                saved = (data, lowered.in_tree, lowered.out_tree)
                compiled = deserialize_and_load(*saved)
                self.serialized[name] = saved
                return compiled
            except Exception:  # noqa: BLE001 - a stale file (another jaxlib): compiled again and replaced
                pass
        compiled = lowered.compile()
        if not self.write:
            return compiled
        self.serialized[name] = serialize(compiled)
        if path is not None:
            _write(path, self.serialized[name][0])
        return compiled


def _read_sealed(path: Path) -> bytes | None:
    """The bytes sealed into the store file `path`, or None (absent, unreadable, torn, not sealed by this user, or
    not a regular file of the store within its cap: bird/files.py)."""
    try:
        return unseal(path.parent, path.name, read_bytes(path, "executable"))
    except OSError:
        return None


def _write(path: Path, data: bytes) -> None:
    """Seal `data` into `path`. Best effort (a store another user owns, a full disk, no usable key): the executables
    still go to the trainer."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        sealed = seal(path.parent, path.name, data)
        if sealed is None:
            return
        write_bytes(path, sealed, mode=0o644)  # as JAX's cache files: readable by whoever shares the cache directory
    except OSError:
        pass


class StoredPrograms:
    """The compile step's whole output (`GroupTraining.serialized_program`) in the store, `<digest>.program`, so that
    a fresh host process (a sweep's next cell, a resumed search, the next test) skips the compile step and its
    tracing. The digest covers the group's shape key, the compile step's environment, the accelerator device nodes,
    the interpreter, the versions of the libraries that build the program, and bird's own source; each file is
    sealed with an HMAC under this user's key (bird/sealed.py), and one that does not unseal is compiled again. The
    store keeps the `KEEP` most recently used (each holds every function's executable: megabytes). Only this user
    writes it (the trainer sees it read-only, reward workers not at all)."""

    LIBRARIES = ("jax", "jaxlib", "brax", "mujoco", "mujoco-mjx", "flax", "optax", "numpy", "ml_dtypes",
                 "jax-cuda12-plugin", "jax-cuda12-pjrt")
    KEEP = 32

    def __init__(self, store: Path | None, env: dict[str, str], devices: tuple[str, ...] = ()) -> None:
        self.store, self.env, self.devices = store, env, devices
        self._fingerprint: str | None = None

    def fingerprint(self) -> str:
        """Digest of what besides the shape key decides the compiled program (computed once)."""
        if self._fingerprint is None:
            import sys
            from importlib import metadata

            import bird
            import bird.envs

            env = sorted((k, v) for k, v in self.env.items() if k != "BIRD_JAX_CACHE")  # where, not what
            h = hashlib.sha256(repr((sys.version, env, sorted(self.devices))).encode())
            for name in self.LIBRARIES:
                try:
                    h.update(f"{name}=={metadata.version(name)}\n".encode())
                except metadata.PackageNotFoundError:
                    h.update(f"{name} absent\n".encode())
            for root in sorted({Path(bird.__file__).parent, Path(bird.envs.__file__).parent}):
                for path in sorted(root.rglob("*.py")):
                    h.update(f"{path.relative_to(root)}\n".encode() + path.read_bytes())
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def path(self, key: str) -> Path | None:
        """Where `key`'s output is kept (None without a store)."""
        if self.store is None:
            return None
        digest = hashlib.sha256(f"{self.fingerprint()}\n{key}".encode()).hexdigest()
        return self.store / f"{digest}.program"

    def get(self, key: str) -> bytes | None:
        """The stored output for `key`, or None (absent, unreadable, or not the bytes that were written)."""
        path = self.path(key)
        data = _read_sealed(path) if path is not None else None
        if data is None:
            return None
        try:
            os.utime(path)  # recently used: kept
        except OSError:
            pass
        return data

    def put(self, key: str, data: bytes) -> None:
        """Keep `data` for `key` (best effort), and only the KEEP most recently used outputs."""
        path = self.path(key)
        if path is None:
            return
        _write(path, data)
        try:
            kept = sorted(path.parent.glob("*.program"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in kept[self.KEEP:]:
                old.unlink()
        except OSError:  # another process removed one first
            pass


def load_all(saved: dict[str, Serialized]) -> dict[str, Any]:
    """{name: a callable executable} from `Executables.serialized`."""
    from jax.experimental.serialize_executable import deserialize_and_load

    return {name: deserialize_and_load(*triple) for name, triple in saved.items()}
