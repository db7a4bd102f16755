"""bird/plugins.py in the test process: installed entry points (real dist-info folders on sys.path) are listed in name
order, imported once, recorded with their package's version; a package plugin's hash covers each file's path and
bytes. tests/test_plugins.py runs the same paths end to end (in subprocesses, a config, a worker)."""

from __future__ import annotations

import hashlib
import sys
from importlib import metadata
from pathlib import Path

import pytest

from bird import plugins


def _dist(site: Path, folder: str, name: str, points: list[tuple[str, str]], modules: dict[str, str]) -> None:
    """A distribution `name` 0.3 installed in `site` (its dist-info folder named `folder`), with `points` (entry point
    name, module) in bird.plugins, one entry point of another group, and `modules` (name: source) beside it."""
    info = site / f"{folder}-0.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.3\n")
    lines = [f"{n} = {m}" for n, m in points]
    (info / "entry_points.txt").write_text("[bird.plugins]\n" + "\n".join(lines) + "\n\n[console_scripts]\n"
                                           "not_a_plugin = os:getcwd\n")
    (info / "top_level.txt").write_text("".join(f"{m}\n" for m in modules))
    for module, body in modules.items():
        (site / f"{module}.py").write_text(body)


@pytest.fixture
def site(tmp_path, monkeypatch):
    """Two folders on sys.path (the first searched first), imported plugin modules forgotten after the test and the
    entry points not yet loaded."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    monkeypatch.setattr(plugins, "_entry_points_loaded", False)
    before = set(sys.modules)
    yield first, second
    for name in set(sys.modules) - before:
        if name.startswith("ep_"):
            del sys.modules[name]


def test_entry_points_are_listed_by_name_in_their_group_only_with_their_package(site):
    first, second = site
    _dist(first, "pkg_one", "pkg-one", [("zz", "ep_zz"), ("same", "ep_z_same")], {})
    _dist(second, "pkg_two", "pkg-two", [("aa", "ep_aa"), ("same", "ep_a_same")], {})
    # by name, and among equal names in the order the packages are found (not by module)
    assert plugins.entry_point_modules() == [("ep_aa", "pkg-two"), ("ep_z_same", "pkg-one"),
                                             ("ep_a_same", "pkg-two"), ("ep_zz", "pkg-one")]


def test_an_entry_point_without_a_package_is_listed_with_a_question_mark(monkeypatch):
    point = metadata.EntryPoint(name="rules", value="ep_orphan", group=plugins.ENTRY_POINT_GROUP)
    monkeypatch.setattr(plugins.metadata, "entry_points", lambda group: [point] if group == "bird.plugins" else [])
    assert plugins.entry_point_modules() == [("ep_orphan", "?")]


def test_entry_points_are_imported_once_by_load(site):
    first, _ = site
    _dist(first, "pkg_once", "pkg-once", [("rules", "ep_once")], {"ep_once": "X = 1\n"})
    plugins.load()
    assert "ep_once" in sys.modules and plugins._entry_points_loaded is True
    del sys.modules["ep_once"]
    plugins.load()
    assert "ep_once" not in sys.modules  # not imported again


def test_an_entry_point_that_fails_to_import_names_its_group_and_package(site):
    first, _ = site
    _dist(first, "pkg_broken", "pkg-broken", [("rules", "ep_broken")], {"ep_broken": "1 / 0\n"})
    with pytest.raises(plugins.PluginError) as err:
        plugins.load()
    assert str(err.value) == ("entry point bird.plugins of pkg-broken: importing 'ep_broken' failed: "
                              "ZeroDivisionError: division by zero")


def test_a_missing_package_of_a_dotted_plugin_is_named_as_not_on_the_path():
    with pytest.raises(plugins.PluginError, match=r"^plugins: no module 'ep_no_such_pkg\.rules' on the Python path"):
        plugins.load(["ep_no_such_pkg.rules"])


def test_describe_records_entry_points_then_config_modules_with_their_package_versions(site):
    first, second = site
    _dist(first, "pkg_ep", "pkg-ep", [("rules", "ep_from_point")], {"ep_from_point": "A = 1\n"})
    _dist(second, "pkg_cfg", "pkg-cfg", [], {"ep_from_config": "B = 1\n"})
    records = plugins.describe(["ep_from_config"])
    assert [{k: r[k] for k in ("module", "source", "distribution", "version")} for r in records] == [
        {"module": "ep_from_point", "source": "entry point", "distribution": "pkg-ep", "version": "0.3"},
        {"module": "ep_from_config", "source": "config", "distribution": "pkg-cfg", "version": "0.3"}]


def test_a_package_whose_metadata_cannot_be_found_by_its_name_is_recorded_without_one(site):
    first, _ = site
    # the dist-info folder's name differs from the Name in its METADATA: importlib finds no version for that Name
    _dist(first, "other_folder", "pkg-misnamed", [], {"ep_misnamed": "C = 1\n"})
    [record] = plugins.describe(["ep_misnamed"])
    assert (record["distribution"], record["version"]) == (None, None)


def test_a_module_without_a_file_has_no_hash():
    [record] = plugins.describe(["sys"])
    assert record["module"] == "sys" and record["sha256"] is None


def test_a_package_is_hashed_over_each_files_relative_path_and_bytes(tmp_path, monkeypatch):
    pkg = tmp_path / "ep_hashed"
    (pkg / "sub").mkdir(parents=True)
    files = {"__init__.py": b"", "rules.py": b"X = 1\n", "sub/deep.py": b"Y = 2\n"}
    for rel, body in files.items():
        (pkg / rel).write_bytes(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        [record] = plugins.describe(["ep_hashed"])
    finally:
        sys.modules.pop("ep_hashed", None)
    expected = hashlib.sha256()
    for rel in sorted(files):
        expected.update(rel.encode() + b"\0" + files[rel] + b"\0")
    assert record["sha256"] == expected.hexdigest()
