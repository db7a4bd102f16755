"""The user config path (bird/config/searchpath.py): `method/`, `choice/`, `env/` and `sweep/` files in the folders of
BIRD_CONFIG_PATH (or a `hydra.searchpath` entry) are options like bird's own, in every command that composes a
config (`bird.fidelity`, `bird.ablate`, `bird.diff`, `bird.sweeps`); a config records every design choice its
method composes, not only `+choice=` flips."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bird import ablate, fidelity, sweeps
from bird.config.load import ConfigError
from bird.diff import method_diff

FILES = {
    "method/mine.yaml": """# @package _global_
# A user's method: Eureka with two of bird's design choices and one of the user's.
defaults:
  - /method/eureka
  - /choice/four_turn_history
  - /choice/longer_curves
  - _self_
method: mine
""",
    "choice/longer_curves.yaml": """# @package _global_
# A user's design choice (7): twice the points per curve in the feedback.
feedback:
  curve_points: 20
""",
    "env/mine/short_pendulum.yaml": """# @package env
id: mujoco/inverted_pendulum
description: "Keep the pole upright."
horizon: 100
""",
    "sweep/mine_grid.yaml": """# @package _global_
hydra:
  sweeper:
    params:
      method: mine,eureka
      seed: range(3)
""",
}


@pytest.fixture
def user_path(tmp_path, monkeypatch) -> Path:
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    monkeypatch.setenv("BIRD_CONFIG_PATH", f"{tmp_path}{':'}")  # an empty entry is skipped
    return tmp_path


def test_user_method_choice_and_env_files_compose_from_the_config_path(compose_cfg, user_path):
    cfg = compose_cfg("method=mine", "env=mine/short_pendulum")
    assert (cfg.method, cfg.generate.history_turns, cfg.feedback.curve_points) == ("mine", 2, 20)
    assert (cfg.env.id, cfg.env.horizon) == ("mujoco/inverted_pendulum", 100)
    assert compose_cfg("+choice=longer_curves").feedback.curve_points == 20


def test_a_hydra_searchpath_entry_still_adds_a_folder(compose_cfg, user_path, monkeypatch):
    monkeypatch.delenv("BIRD_CONFIG_PATH")
    with pytest.raises(Exception, match="mine"):
        compose_cfg("method=mine")
    assert compose_cfg("method=mine", f"hydra.searchpath=[file://{user_path}]").feedback.curve_points == 20


def test_a_config_path_entry_that_is_not_a_folder_is_a_config_error_naming_it(compose_cfg, tmp_path, monkeypatch):
    monkeypatch.setenv("BIRD_CONFIG_PATH", f"{tmp_path}:{tmp_path / 'missing'}")
    with pytest.raises(ConfigError, match=r"BIRD_CONFIG_PATH: '.*missing' is not a folder"):
        compose_cfg()
    proc = subprocess.run([sys.executable, "-m", "bird"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and "is not a folder" in proc.stderr


def test_the_config_records_the_choices_its_method_composes_then_the_flips(compose_cfg, user_path):
    assert compose_cfg("method=mine").choices == ["four_turn_history", "longer_curves"]
    assert compose_cfg("method=mine", "+choice=taper_schedule").choices == [
        "four_turn_history", "longer_curves", "taper_schedule"]
    assert compose_cfg("method=eureka").choices == []


def test_fidelity_reports_a_user_method_with_its_files_and_lists_it(user_path, capsys):
    assert "mine" in fidelity.known_methods() and "mine" not in fidelity.methods()
    assert fidelity.main(["mine", "env=mujoco/inverted_pendulum"]) == 0
    out = capsys.readouterr().out
    assert f"set by {user_path / 'method' / 'mine.yaml'} and the design choices it composes (no fidelity data)" in out
    assert f"feedback.curve_points = 20\n    [unrecorded] {user_path / 'choice' / 'longer_curves.yaml'}" in out
    assert "== set by conf/method/eureka.yaml (methods/eureka/fidelity.yaml)" in out
    with pytest.raises(SystemExit):
        fidelity.main(["not_a_method"])
    assert "'not_a_method' unknown; allowed: [" in capsys.readouterr().err


def test_ablate_takes_a_user_method_as_base_and_a_user_choice_as_a_flip(user_path, capsys):
    assert "longer_curves" in ablate.choices()
    [flip] = ablate.applicable("eureka", ["env=mujoco/inverted_pendulum"], names=["longer_curves"])
    assert flip.changes == {"feedback.curve_points": (10, 20)} and flip.number == 7
    assert ablate.main(["mine", "--envs", "mujoco/inverted_pendulum", "--seeds", "0", "--choices",
                        "taper_schedule"]) == 0
    out = capsys.readouterr().out
    assert f"BIRD_CONFIG_PATH={user_path}: python -m bird -m method=mine" in out  # as the commands find it
    [composed] = ablate.applicable("mine", ["env=mujoco/inverted_pendulum"], include_all=True, names=["longer_curves"])
    assert composed.reason is not None and "changes nothing" in composed.reason  # the method composes it already


def test_diff_compares_a_user_method_with_bird_s_own(user_path):
    assert method_diff("eureka", "mine") == {
        "method": ("eureka", "mine"), "choices": ([], ["four_turn_history", "longer_curves"]),
        "generate.history_turns": (1, 2), "feedback.curve_points": (10, 20)}
    with pytest.raises(ConfigError, match="method 'not_a_method' unknown; allowed: .*'mine'"):
        method_diff("eureka", "not_a_method")


def test_sweeps_lists_and_counts_a_user_sweep(user_path):
    assert "mine_grid" in sweeps.sweep_names()
    assert len(sweeps.cells("mine_grid")) == 6
