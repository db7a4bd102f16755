"""A pip-installed (non-editable) bird runs from any directory: conf/ and prompt templates ship as package data."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "bird", "conf", "methods", "envs", "analysis")


def _run(*cmd: object, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd, timeout=timeout)
    assert proc.returncode == 0, f"{cmd}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv holding the wheel built from a copy of the sources, layered on this venv's dependencies."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:  # a copy, so the build leaves nothing in the checkout
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, src / name)
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", tmp / "dist", src, cwd=tmp)
    [wheel] = (tmp / "dist").glob("bird_ird-*.whl")
    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp)
    python = venv / "bin" / "python"
    _run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", wheel, cwd=tmp)
    # dependencies (torch, mujoco, ...) come from this venv's site-packages, after the venv's own (as our .venv does)
    fresh_site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp).stdout.strip())
    layers = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    assert sysconfig.get_paths()["purelib"] in layers
    (fresh_site / "_bird_test_layers.pth").write_text("\n".join(layers) + "\n")
    return python


@pytest.mark.slow
def test_the_installed_wheel_prints_its_config_from_another_directory(installed, tmp_path):
    where = _run(installed, "-c", "import bird; print(bird.__file__)", cwd=tmp_path).stdout
    assert str(installed.parents[1]) in where  # the wheel's bird, not the checkout's
    job = _run(installed, "-m", "bird", "--cfg", "job", "method=card", "env=metaworld/reach", cwd=tmp_path).stdout
    assert "method: card" in job and "id: metaworld/reach" in job


@pytest.mark.slow
def test_the_installed_wheel_runs_a_smoke_search_from_another_directory(installed, tmp_path):
    run = tmp_path / "run"
    _run(installed, "-m", "bird", "budget=smoke", "budget.max_iterations=1", "budget.env_steps=1024",
         "budget.final_env_steps=1024", "env=mujoco/inverted_pendulum", "run.progress=false", "video.record=none",
         f"hydra.run.dir={run}",
         cwd=tmp_path)
    result = json.loads((run / "result.json").read_text())
    assert math.isfinite(result["returned_score"]) and not result["failures"]
    prompt = json.loads((run / "candidates" / "it1-c0" / "prompt.json").read_text())
    assert "reward" in prompt[0]["content"].lower()  # the eureka templates came from the wheel
