"""bird/learners/jax_executables.py's store in the test process, at the inputs where a wrong store and the right one
answer differently: where the store lives, what a stored executable's name depends on, what a store that cannot be
written does, and what decides a stored program's name (the environment, the devices, the interpreter, the libraries)."""

from __future__ import annotations

import os
import stat
import sys

import numpy as np
import pytest
from test_jax_executables import WANT, X, Y, _lowered, _without_persistent_cache

from bird.learners import jax_executables
from bird.learners.jax_executables import Executables, StoredPrograms, _digest, store_dir


def test_the_store_is_under_the_jax_cache_by_host_cpu_and_absent_when_the_cache_is_off(tmp_path, monkeypatch):
    from bird.jax_cache import host_cpu_key

    monkeypatch.setenv("BIRD_JAX_CACHE", str(tmp_path / "cache"))
    assert store_dir() == tmp_path / "cache" / host_cpu_key() / "executables"
    monkeypatch.setenv("BIRD_JAX_CACHE", "off")
    assert store_dir() is None


def test_an_executables_name_is_its_program_and_its_compilers_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    plain = _digest(_lowered(3.0))
    assert len(plain) == 64 and int(plain, 16) >= 0
    assert _digest(_lowered(3.0)) == plain and _digest(_lowered(4.0)) != plain
    monkeypatch.setenv("XLA_FLAGS", "")
    assert _digest(_lowered(3.0)) == plain  # an empty XLA_FLAGS is no flag
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    assert _digest(_lowered(3.0)) != plain


def test_an_executables_name_changes_with_jax_jaxlib_the_backend_and_the_devices(monkeypatch):
    import jax
    import jaxlib

    plain = _digest(_lowered(3.0))
    monkeypatch.setattr(jax, "__version__", jax.__version__ + ".post1")
    assert _digest(_lowered(3.0)) != plain
    monkeypatch.undo()
    monkeypatch.setattr(jaxlib, "__version__", jaxlib.__version__ + ".post1")
    assert _digest(_lowered(3.0)) != plain
    monkeypatch.undo()

    class Device:
        device_kind = "a gpu"

    monkeypatch.setattr(jax, "devices", lambda: [Device()])
    assert _digest(_lowered(3.0)) != plain


@pytest.mark.parametrize("field", ["platform", "platform_version"])
def test_an_executables_name_changes_with_the_backends_platform_and_its_version(monkeypatch, field):
    import types

    import jax

    real = jax.extend.backend.get_backend()
    plain = _digest(_lowered(3.0))
    other = types.SimpleNamespace(platform=real.platform, platform_version=real.platform_version)
    setattr(other, field, getattr(real, field) + "-other")
    monkeypatch.setattr(jax.extend.backend, "get_backend", lambda: other)
    assert _digest(_lowered(3.0)) != plain


def test_a_store_file_copied_under_another_programs_name_is_not_loaded(tmp_path, monkeypatch):
    """A file is sealed to its name (the digest of its program): moved under another program's name it does not
    unseal, so that program is compiled, never run from the other one's executable."""
    with _without_persistent_cache():
        Executables(tmp_path).compile("f", _lowered(3.0))
        (f_file,) = tmp_path.glob("*.bin")
        g_file = tmp_path / f"{_digest(_lowered(4.0))}.bin"
        g_file.write_bytes(f_file.read_bytes())
        np.testing.assert_allclose(Executables(tmp_path).compile("g", _lowered(4.0))(X, Y),
                                   (X * 4.0 - Y[::-1]).sum(axis=0))
    assert g_file.read_bytes() != f_file.read_bytes()  # compiled again and replaced


def test_without_a_store_a_function_is_compiled_and_kept_serialized_but_written_nowhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with _without_persistent_cache():
        ex = Executables(None)
        assert (ex.store, ex.write, ex.serialized) == (None, True, {})
        np.testing.assert_allclose(ex.compile("f", _lowered(3.0))(X, Y), WANT)
    assert list(ex.serialized) == ["f"] and isinstance(ex.serialized["f"][0], bytes)
    assert list(tmp_path.iterdir()) == []
    reader = Executables(None, write=False)
    np.testing.assert_allclose(reader.compile("f", _lowered(3.0))(X, Y), WANT)  # JAX's cache on: a reader may
    assert reader.serialized == {}


def test_a_store_file_is_readable_by_whoever_shares_the_cache_and_named_by_the_programs_digest(tmp_path):
    with _without_persistent_cache():
        Executables(tmp_path / "deep" / "store").compile("f", _lowered(3.0))
    (path,) = (tmp_path / "deep" / "store").glob("*.bin")
    assert path.name == f"{_digest(_lowered(3.0))}.bin"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_store_that_cannot_be_written_still_gives_the_executable(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    with _without_persistent_cache():
        ex = Executables(tmp_path / "file" / "store")
        np.testing.assert_allclose(ex.compile("f", _lowered(3.0))(X, Y), WANT)
    assert list(ex.serialized) == ["f"]
    assert (tmp_path / "file").read_text() == "not a folder"


def test_a_store_without_a_usable_key_is_not_written(tmp_path, monkeypatch):
    from bird import sealed

    monkeypatch.setattr(sealed, "_key", lambda root, create: None)
    with _without_persistent_cache():
        ex = Executables(tmp_path)
        np.testing.assert_allclose(ex.compile("f", _lowered(3.0))(X, Y), WANT)
    assert list(ex.serialized) == ["f"] and list(tmp_path.glob("*.bin")) == []


def test_a_store_file_that_is_no_regular_file_is_compiled_over(tmp_path):
    with _without_persistent_cache():
        Executables(tmp_path).compile("f", _lowered(3.0))
        (path,) = tmp_path.glob("*.bin")
        path.unlink()
        path.mkdir()  # read_bytes refuses a folder (an OSError): the program is compiled, the store left as it is
        np.testing.assert_allclose(Executables(tmp_path).compile("f", _lowered(3.0))(X, Y), WANT)
    assert path.is_dir()


# -- StoredPrograms: what decides a stored program's name ---------------------------------------------------------
def test_a_program_is_stored_and_found_by_key_under_a_sealed_file_named_by_digest(tmp_path):
    stored = StoredPrograms(tmp_path, {"A": "1"})
    assert (stored.store, stored.env, stored.devices) == (tmp_path, {"A": "1"}, ())
    stored.put("k", b"program")
    path = stored.path("k")
    assert path.parent == tmp_path and path.suffix == ".program" and len(path.stem) == 64
    assert path.read_bytes().endswith(b"program") and path.read_bytes() != b"program"  # sealed: a tag in front
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert StoredPrograms(tmp_path, {"A": "1"}).get("k") == b"program"
    assert StoredPrograms(None, {}).path("k") is None
    StoredPrograms(None, {}).put("k", b"x")  # no store: nothing written, nothing raised


def test_the_fingerprint_is_computed_once_per_store_object(tmp_path, monkeypatch):
    stored = StoredPrograms(tmp_path, {})
    first = stored.fingerprint()
    assert len(first) == 64
    monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    assert stored.fingerprint() == first  # kept
    assert StoredPrograms(tmp_path, {}).fingerprint() != first  # another interpreter: another program


def test_the_order_of_the_environment_and_of_the_devices_does_not_matter(tmp_path):
    a = StoredPrograms(tmp_path, {"A": "1", "B": "2"}, ("/dev/nvidia0", "/dev/nvidiactl"))
    b = StoredPrograms(tmp_path, {"B": "2", "A": "1"}, ("/dev/nvidiactl", "/dev/nvidia0"))
    assert a.fingerprint() == b.fingerprint()
    assert StoredPrograms(tmp_path, {"A": "1", "B": "3"}).fingerprint() != StoredPrograms(tmp_path, {
        "A": "1", "B": "2"}).fingerprint()
    assert StoredPrograms(tmp_path, {"A": "1", "BIRD_JAX_CACHE": "x"}).fingerprint() == StoredPrograms(
        tmp_path, {"A": "1"}).fingerprint()


@pytest.mark.parametrize("library", ["jax", "brax", "numpy", "jax-cuda12-plugin"])
def test_another_version_of_a_library_building_the_program_is_another_program(tmp_path, monkeypatch, library):
    from importlib import metadata

    plain = StoredPrograms(tmp_path, {}).fingerprint()
    real = metadata.version

    def version(name: str) -> str:
        if name == library:
            return "99.0"
        return real(name)

    monkeypatch.setattr(metadata, "version", version)
    assert StoredPrograms(tmp_path, {}).fingerprint() != plain


def test_a_library_absent_here_is_recorded_as_absent(tmp_path, monkeypatch):
    from importlib import metadata

    real = metadata.version

    def without(missing: str):
        def version(name: str) -> str:
            if name == missing:
                raise metadata.PackageNotFoundError(name)
            return real(name)
        return version

    monkeypatch.setattr(metadata, "version", without("numpy"))
    a = StoredPrograms(tmp_path, {}).fingerprint()
    monkeypatch.setattr(metadata, "version", without("optax"))
    assert StoredPrograms(tmp_path, {}).fingerprint() != a  # which one is absent matters
    monkeypatch.setattr(metadata, "version", lambda name: "1.0")
    assert StoredPrograms(tmp_path, {}).fingerprint() != a


def test_the_libraries_named_are_those_that_build_the_program():
    assert set(StoredPrograms.LIBRARIES) >= {"jax", "jaxlib", "brax", "mujoco", "mujoco-mjx", "flax", "optax", "numpy"}
    assert StoredPrograms.KEEP == 32


def test_a_program_used_again_is_kept_even_when_its_file_cannot_be_touched(tmp_path, monkeypatch):
    stored = StoredPrograms(tmp_path, {})
    stored.put("k", b"program")

    def refuse(*args, **kwargs):
        raise PermissionError("read-only store")

    monkeypatch.setattr(os, "utime", refuse)
    assert stored.get("k") == b"program"


def test_the_store_keeps_the_newest_and_survives_a_file_removed_by_another_process(tmp_path, monkeypatch):
    monkeypatch.setattr(StoredPrograms, "KEEP", 1)
    stored = StoredPrograms(tmp_path, {})
    stored.put("a", b"a")
    os.utime(stored.path("a"), (1000, 1000))
    (tmp_path / "other.bin").write_bytes(b"an executable")  # not a program: never removed
    stored.put("b", b"b")
    assert [stored.get("a"), stored.get("b")] == [None, b"b"] and (tmp_path / "other.bin").exists()

    real_unlink = type(tmp_path).unlink

    def raced(self, missing_ok=False):
        real_unlink(self)
        raise FileNotFoundError(self)

    monkeypatch.setattr(type(tmp_path), "unlink", raced)
    stored.put("c", b"c")  # another process removed "b" first: no error
    assert stored.get("c") == b"c"


def test_load_all_makes_each_serialized_function_callable(tmp_path):
    with _without_persistent_cache():
        ex = Executables(tmp_path)
        ex.compile("f", _lowered(3.0))
        ex.compile("g", _lowered(4.0))
    loaded = jax_executables.load_all(ex.serialized)
    assert sorted(loaded) == ["f", "g"]
    np.testing.assert_allclose(loaded["f"](X, Y), WANT)
    np.testing.assert_allclose(loaded["g"](X, Y), (X * 4.0 - Y[::-1]).sum(axis=0))


def test_store_files_are_readable_by_others_sharing_the_cache_whatever_the_umask(tmp_path, monkeypatch):
    import bird.files

    monkeypatch.setattr(bird.files, "_umask", lambda: 0o077)  # a private umask: still 0644, as JAX's cache files
    StoredPrograms(tmp_path / "programs", {}).put("k", b"program")
    with _without_persistent_cache():
        Executables(tmp_path / "executables").compile("f", _lowered(3.0))
    [program] = (tmp_path / "programs").glob("*.program")
    [executable] = (tmp_path / "executables").glob("*.bin")
    assert stat.S_IMODE(program.stat().st_mode) == stat.S_IMODE(executable.stat().st_mode) == 0o644


def test_the_compile_steps_refusal_says_why_in_full(tmp_path):
    import jax

    assert jax.config.jax_compilation_cache_dir and jax.config.jax_enable_compilation_cache  # the session's cache
    with pytest.raises(RuntimeError) as err:
        Executables(tmp_path).compile("f", _lowered(3.0))
    assert str(err.value) == "Executables.compile needs a process without JAX's persistent cache (module docstring)"
    assert list(tmp_path.iterdir()) == []
