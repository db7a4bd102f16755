"""The compiled-program store (StoredPrograms) finds a program only while every source file of bird that built it is
unchanged: one at the top of a package, and one deep inside a subpackage (where a stale program would otherwise be
reused). bird.envs stands in, pointed at a folder this test owns."""

from __future__ import annotations

import pytest

from bird.learners.jax_executables import StoredPrograms


@pytest.fixture
def source(tmp_path, monkeypatch):
    import bird.envs

    root = tmp_path / "envs"
    (root / "suite" / "tasks").mkdir(parents=True)
    for rel in ("__init__.py", "suite/__init__.py", "suite/tasks/__init__.py", "suite/tasks/hopper.py"):
        (root / rel).write_text("X = 1\n")
    monkeypatch.setattr(bird.envs, "__file__", str(root / "__init__.py"))
    return root


@pytest.mark.parametrize("rel", ["__init__.py", "suite/__init__.py", "suite/tasks/hopper.py"])
def test_a_stored_program_is_not_found_once_any_source_file_changed(source, tmp_path, rel):
    StoredPrograms(tmp_path / "store", {}).put("k", b"program bytes")
    assert StoredPrograms(tmp_path / "store", {}).get("k") == b"program bytes"  # unchanged: found
    (source / rel).write_text("X = 2\n")  # same size, other bytes
    assert StoredPrograms(tmp_path / "store", {}).get("k") is None


def test_a_new_source_file_in_a_subpackage_is_a_change(source, tmp_path):
    StoredPrograms(tmp_path / "store", {}).put("k", b"program bytes")
    (source / "suite" / "tasks" / "walker.py").write_text("X = 1\n")
    assert StoredPrograms(tmp_path / "store", {}).get("k") is None


def test_a_file_moved_into_a_subpackage_is_a_change(source, tmp_path):
    StoredPrograms(tmp_path / "store", {}).put("k", b"program bytes")
    (source / "suite" / "tasks" / "v2").mkdir()
    (source / "suite" / "tasks" / "hopper.py").rename(source / "suite" / "tasks" / "v2" / "hopper.py")
    assert StoredPrograms(tmp_path / "store", {}).get("k") is None  # the same bytes, in the same order, elsewhere
