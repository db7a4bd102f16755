"""Plugins (bird/plugins.py): a config's `plugins` and installed `bird.plugins` entry points are imported after bird's
own modules wherever a config loads and in every training worker; one that cannot be imported is a config error
naming it; a run records each with its version or file hash; resume and replay name a missing one before any work."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from bird import plugins, registry
from bird.config.load import ConfigError

ROOT = Path(__file__).resolve().parents[1]

# A plugin: a select rule and a learner that trains nothing (what a worker can only run if it imported the plugin).
PLUGIN = '''
from bird.learners import Learner
from bird.registry import register
from bird.types import TrainResult


@register("select", "{name}_rule")
def rule(cfg, state, cands, reports):
    """The last ranked candidate."""
    ranked = [c.id for c in cands if c.id in reports and reports[c.id].fitness is not None]
    return ranked[-1] if ranked else None


def _learn(job, progress=None):
    """Trains nothing; reports where it ran."""
    import os
    return TrainResult(job.candidate_id, os.getpid(), (), 0, 0.0)


register("learner", "{name}_learner")(Learner(_learn))
'''


def _plugin(folder: Path, name: str) -> str:
    (folder / f"{name}.py").write_text(PLUGIN.format(name=name))
    return name


def test_a_configs_plugin_is_imported_and_its_component_is_a_valid_value(compose_cfg, tmp_path, monkeypatch):
    _plugin(tmp_path, "plug_valid")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"select.rule='plug_valid_rule'"):
        compose_cfg("select.rule=plug_valid_rule")  # without the plugin: not a registered select rule
    cfg = compose_cfg("plugins=[plug_valid]", "select.rule=plug_valid_rule")
    assert cfg.plugins == ["plug_valid"] and "plug_valid_rule" in registry.names("select")


@pytest.mark.parametrize(("name", "says"), [
    ("no_such_plugin_module", "plugins: no module 'no_such_plugin_module' on the Python path; a plugin is a module"),
    ("./my_plugin.py", "plugins: './my_plugin.py' is not a module name"),
    ("plug_broken", "plugins: importing 'plug_broken' failed: ZeroDivisionError: division by zero"),
    ("plug_needs_missing", "plugins: importing 'plug_needs_missing' failed: ModuleNotFoundError: No module named "
                           "'not_installed_dependency'"),
])
def test_a_plugin_that_cannot_be_imported_is_a_config_error_naming_it(compose_cfg, tmp_path, monkeypatch, name, says):
    (tmp_path / "plug_broken.py").write_text("1 / 0\n")
    (tmp_path / "plug_needs_missing.py").write_text("import not_installed_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as err:
        compose_cfg(f"plugins=[{name!r}]")
    assert says in str(err.value)


def test_the_cli_refuses_a_missing_plugin_before_any_work(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "bird", "plugins=[no_such_plugin_module]", f"hydra.run.dir={run}"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "plugins: no module 'no_such_plugin_module' on the Python path" in proc.stderr
    assert not (run / "status.json").exists() and not (run / "config.yaml").exists()


def test_a_configs_plugins_are_part_of_its_hash(compose_cfg, tmp_path, monkeypatch):
    from bird.config.load import config_hash

    monkeypatch.syspath_prepend(str(tmp_path))
    assert config_hash(compose_cfg()) != config_hash(compose_cfg(f"plugins=[{_plugin(tmp_path, 'plug_hash')}]"))


@pytest.mark.parametrize("start_method", ["forkserver", "spawn"])
def test_training_workers_import_the_configs_plugins(compose_cfg, tmp_path, monkeypatch, start_method):
    from bird.executors import make_executor
    from bird.learners.job import make_job

    monkeypatch.syspath_prepend(str(tmp_path))  # a new sys.path: the pool starts new workers, which get it
    name = _plugin(tmp_path, f"plug_worker_{start_method}")
    cfg = compose_cfg("env=mujoco/inverted_pendulum", f"plugins=[{name}]", f"train.start_method={start_method}")
    executor = make_executor(cfg, 2)
    try:
        results = executor.run(f"{name}_learner", [make_job(cfg, f"c{i}", None, i, 512, tmp_path / str(i))
                                                    for i in range(2)])
    finally:
        executor.close()
    assert all(r.failure is None for r in results), [r.failure for r in results]
    assert os.getpid() not in {r.seed for r in results}  # trained in the workers (the learner reports its pid)


def test_the_record_names_each_plugin_with_its_file_hash_and_an_edit_changes_it(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    pkg = tmp_path / "plug_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import rules\n")
    (pkg / "rules.py").write_text("X = 1\n")
    first = plugins.describe(["plug_pkg"])
    assert [{k: p[k] for k in ("module", "source", "distribution", "version")} for p in first] == [
        {"module": "plug_pkg", "source": "config", "distribution": None, "version": None}]
    (pkg / "rules.py").write_text("X = 2\n")  # a package is hashed over all its files
    second = plugins.describe(["plug_pkg"])
    assert len(first[0]["sha256"]) == 64 and first[0]["sha256"] != second[0]["sha256"]
    (tmp_path / "plug_file.py").write_text("Y = 1\n")  # a module file: its sha256, as sha256sum prints it
    assert plugins.describe(["plug_file"])[0]["sha256"] == hashlib.sha256(b"Y = 1\n").hexdigest()


ENTRY_POINT_CHECK = """
import json, sys
from bird.config.load import ConfigError, compose
from bird.plugins import describe
try:
    cfg = compose(["select.rule=ep_plugin_rule"])
except ConfigError as exc:
    print(exc, file=sys.stderr)
    sys.exit(2)
print(json.dumps(describe(cfg.plugins)))
"""


def _installed(site: Path, module: str, body: str) -> None:
    """A distribution `fake-bird-plugin` 0.3 with a bird.plugins entry point naming `module`, installed in `site`."""
    info = site / "fake_bird_plugin-0.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-bird-plugin\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text(f"[bird.plugins]\nrules = {module}\n")
    (info / "top_level.txt").write_text(f"{module}\n")
    (site / f"{module}.py").write_text(body)


def _run_check(site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", ENTRY_POINT_CHECK], capture_output=True, text=True, env=env,
                          cwd=site, timeout=300)


def test_an_installed_entry_point_is_imported_and_recorded_with_its_version(tmp_path):
    _installed(tmp_path, "ep_plugin", textwrap.dedent(PLUGIN.format(name="ep_plugin")))
    proc = _run_check(tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [record] = json.loads(proc.stdout)
    assert {k: record[k] for k in ("module", "source", "distribution", "version")} == {
        "module": "ep_plugin", "source": "entry point", "distribution": "fake-bird-plugin", "version": "0.3"}


def test_an_entry_point_that_fails_to_import_is_a_config_error_naming_it_and_its_package(tmp_path):
    _installed(tmp_path, "ep_plugin", "raise RuntimeError('broken on import')\n")
    proc = _run_check(tmp_path)
    assert proc.returncode == 2
    assert ("entry point bird.plugins of fake-bird-plugin: importing 'ep_plugin' failed: RuntimeError: broken on "
            "import") in proc.stderr


def test_resume_names_a_plugin_that_is_not_importable_before_any_work(compose_cfg, tmp_path, capsys):
    from bird.resume import main as resume_main

    data = OmegaConf.to_container(OmegaConf.structured(compose_cfg()))
    data["plugins"] = ["plug_left_behind"]  # importable where the run started, not here
    (tmp_path / "config.yaml").write_text(OmegaConf.to_yaml(data))
    assert resume_main([str(tmp_path)]) == 2  # a saved config's plugins are imported only when the user names them
    assert "imports code: plugins=['plug_left_behind']" in capsys.readouterr().err
    assert resume_main([str(tmp_path), "plugins=[plug_left_behind]"]) == 2
    assert "plugins: no module 'plug_left_behind' on the Python path" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml"]
