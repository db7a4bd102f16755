"""The compile step's executables (bird/learners/jax_executables.py): kept in a store keyed by the lowered program,
loaded instead of compiled, and what the isolated trainer runs in place of tracing the training program again; the
compile step's whole output, kept in the store for the next process (StoredPrograms)."""

from __future__ import annotations

import contextlib
import pickle
from pathlib import Path

import numpy as np
import pytest

from bird.learners.jax_executables import Executables, StoredPrograms, load_all
from bird.sealed import key_path


@contextlib.contextmanager
def _without_persistent_cache():
    """The compile step's process has no JAX cache; this test process has the session's (tests/jaxpath/conftest).
    JAX decides once per process whether its cache is used: reset_cache makes it look at the setting again, else a
    program this process compiled earlier (and JAX cached) would come from the cache here."""
    import jax
    from jax._src.compilation_cache import reset_cache

    before = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    reset_cache()
    try:
        yield
    finally:
        jax.config.update("jax_enable_compilation_cache", before)
        reset_cache()


def _lowered(scale: float):
    import jax
    import jax.numpy as jnp

    return jax.jit(lambda x, y: (x * scale - y[::-1]).sum(axis=0)).lower(
        jax.ShapeDtypeStruct((3, 2), jnp.float32), jax.ShapeDtypeStruct((3, 2), jnp.float32))


X = np.array([[1.0, 2.0], [3.0, 5.0], [7.0, 11.0]], np.float32)
Y = np.array([[0.5, 0.25], [2.0, 4.0], [8.0, 16.0]], np.float32)
WANT = (X * 3.0 - Y[::-1]).sum(axis=0)  # [11 - 10.5, 18 - 20.25]: asymmetric in both inputs


def test_a_compiled_function_is_stored_then_loaded_instead_of_compiled(tmp_path, monkeypatch):
    import jax

    with _without_persistent_cache():
        first = Executables(tmp_path)
        np.testing.assert_allclose(first.compile("f", _lowered(3.0))(X, Y), WANT)
        stored = list(tmp_path.glob("*.bin"))
        assert len(stored) == 1 and key_path(tmp_path).is_file()
        np.testing.assert_allclose(load_all(pickle.loads(pickle.dumps(first.serialized)))["f"](X, Y), WANT)

        def refuse(self):
            raise AssertionError("compiled again although the store holds this program")

        monkeypatch.setattr(jax.stages.Lowered, "compile", refuse)
        second = Executables(tmp_path)
        np.testing.assert_allclose(second.compile("f", _lowered(3.0))(X, Y), WANT)
        assert second.serialized["f"] == first.serialized["f"]  # the executable's bytes and its trees
        with pytest.raises(AssertionError, match="compiled again"):  # another program is not the stored one
            second.compile("g", _lowered(4.0))


def test_a_reader_loads_from_the_store_and_adds_nothing_to_it(tmp_path, monkeypatch):
    """A process that trains in itself (JAX's persistent cache on) reads the store the compile step wrote."""
    import jax

    reader = Executables(tmp_path, write=False)
    np.testing.assert_allclose(reader.compile("f", _lowered(3.0))(X, Y), WANT)  # a miss: compiled, not stored
    assert list(tmp_path.glob("*.bin")) == [] and reader.serialized == {}
    with _without_persistent_cache():
        Executables(tmp_path).compile("f", _lowered(3.0))

    def refuse(self):
        raise AssertionError("compiled again although the store holds this program")

    monkeypatch.setattr(jax.stages.Lowered, "compile", refuse)
    np.testing.assert_allclose(Executables(tmp_path, write=False).compile("f", _lowered(3.0))(X, Y), WANT)


def test_a_torn_store_file_is_compiled_again_and_replaced(tmp_path):
    with _without_persistent_cache():
        Executables(tmp_path).compile("f", _lowered(3.0))
        (path,) = tmp_path.glob("*.bin")
        path.write_bytes(path.read_bytes()[:100])
        np.testing.assert_allclose(Executables(tmp_path).compile("f", _lowered(3.0))(X, Y), WANT)
        assert len(path.read_bytes()) > 100


def test_a_planted_executable_is_compiled_again_not_loaded(tmp_path, monkeypatch):
    """A store file not sealed under this user's key (the bare executable bytes, as the store held them before) is
    never deserialized: serialized executables are native code behind a pickle."""
    from jax.experimental import serialize_executable

    with _without_persistent_cache():
        Executables(tmp_path).compile("f", _lowered(3.0))
        (path,) = tmp_path.glob("*.bin")
        planted = serialize_executable.serialize(_lowered(4.0).compile())[0]  # another program, unsealed
        path.write_bytes(planted)
        loaded = []
        real = serialize_executable.deserialize_and_load
        monkeypatch.setattr(serialize_executable, "deserialize_and_load",
                            lambda *a, **k: loaded.append(a[0]) or real(*a, **k))
        np.testing.assert_allclose(Executables(tmp_path).compile("f", _lowered(3.0))(X, Y), WANT)
        assert planted not in loaded and path.read_bytes() != planted  # compiled again, and replaced


def test_the_compile_step_refuses_to_run_with_jaxs_persistent_cache(tmp_path):
    """An executable JAX's cache loaded serializes without some of its kernels: it would fail in the trainer."""
    import jax

    assert jax.config.jax_compilation_cache_dir  # this process has the session's cache
    with pytest.raises(RuntimeError, match="without JAX's persistent cache"):
        Executables(tmp_path).compile("f", _lowered(3.0))


def test_the_isolated_trainer_loads_the_compile_steps_executables(jax_cfg, make_jobs, tmp_path):
    """Through the registered learner: the trainer's timing shows the executables loaded and nothing compiled."""
    import json

    from jax_programs import FORWARD

    from bird.learners.jax_isolated import train_isolated

    jobs = make_jobs([(FORWARD, 0)], 192)
    (result,) = train_isolated(jobs)
    assert result.ok, result.failure
    timing = json.loads((Path(jobs[0].out_dir) / "jax_ppo.json").read_text())["timing"]
    assert timing["compile_s"] == 0.0 and timing["load_executables_s"] < 60, timing


def test_a_stored_program_is_found_only_for_its_key_environment_and_bytes(tmp_path):
    stored = StoredPrograms(tmp_path, {"XLA_FLAGS": "--a"})
    stored.put("k", b"program bytes")
    assert stored.get("k") == b"program bytes" and stored.get("k2") is None
    assert StoredPrograms(tmp_path, {"XLA_FLAGS": "--b"}).get("k") is None  # another compile step environment
    assert StoredPrograms(tmp_path, {"XLA_FLAGS": "--a", "BIRD_JAX_CACHE": "/elsewhere"}).get("k") == b"program bytes"
    assert StoredPrograms(tmp_path, {"XLA_FLAGS": "--a"}, ("/dev/nvidia0",)).get("k") is None  # a GPU machine
    path = stored.path("k")
    data = path.read_bytes()
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # one bit flipped
    assert stored.get("k") is None
    path.write_bytes(data[:20])  # torn
    assert stored.get("k") is None
    assert StoredPrograms(None, {}).get("k") is None  # BIRD_JAX_CACHE=off: no store


def test_the_store_keeps_the_most_recently_used_programs(tmp_path, monkeypatch):
    import os

    monkeypatch.setattr(StoredPrograms, "KEEP", 2)
    stored = StoredPrograms(tmp_path, {})
    for i, key in enumerate(("a", "b")):
        stored.put(key, key.encode())
        os.utime(stored.path(key), (1000 + i, 1000 + i))  # "a" older than "b"
    assert stored.get("a") == b"a"  # used: now the newest
    stored.put("c", b"c")
    assert [stored.get(k) for k in "abc"] == [b"a", None, b"c"]


def test_a_stored_program_is_not_found_once_birds_source_changed(tmp_path, monkeypatch):
    import bird.envs

    source = tmp_path / "envs"
    source.mkdir()
    (source / "__init__.py").write_text("X = 1\n")
    monkeypatch.setattr(bird.envs, "__file__", str(source / "__init__.py"))
    StoredPrograms(tmp_path / "store", {}).put("k", b"program bytes")
    assert StoredPrograms(tmp_path / "store", {}).get("k") == b"program bytes"
    (source / "__init__.py").write_text("X = 2\n")
    assert StoredPrograms(tmp_path / "store", {}).get("k") is None


def test_a_fresh_process_gets_the_compile_steps_output_from_the_store(jax_cfg, make_jobs, monkeypatch):
    """What a compile step stored (in this process, or in the JAX warm-up's) is what a process that compiled nothing
    yet sends its trainer, without a compile step; the trainer's limits are not part of the program, its width is."""
    from dataclasses import replace

    from jax_programs import FORWARD

    from bird.learners import trainer_host

    jobs = make_jobs([(FORWARD, 0)], 192)
    first = trainer_host.ensure_compiled(jobs, 1, 1800.0)
    assert isinstance(first, bytes) and len(first) > 1000
    monkeypatch.setattr(trainer_host, "_COMPILED", {})  # a fresh process

    def compile_step(*args, **kwargs):
        raise AssertionError("a compile step ran")

    monkeypatch.setattr(trainer_host.subprocess, "run", compile_step)
    assert trainer_host.ensure_compiled(jobs, 1, 1800.0) == first
    monkeypatch.setattr(trainer_host, "_COMPILED", {})
    limits = replace(jobs[0].train.jax, update_timeout_s=7.0, compile_timeout_s=60.0, trainer_memory_mb=8192)
    assert trainer_host.ensure_compiled([replace(jobs[0], train=replace(jobs[0].train, jax=limits))], 1, 1800.0) == first
    with pytest.raises(AssertionError, match="a compile step ran"):
        trainer_host.ensure_compiled(jobs, 3, 1800.0)
