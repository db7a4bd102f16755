"""What bird saved and reads back (the checkpoint, the JAX store, the response cache, SB3 policies, a received
config.yaml, the LLM journal, EPIC's inputs) is opened as bird/files.py opens a file someone else may have written:
a planted link, a FIFO, /dev/zero, an oversize file or bounded-parse breakers are refused with a clear error (a
cache: a miss), never followed, waited on or read whole; writes replace a planted link instead of following it.
Files that would exhaust memory are tried in a child process under a memory limit; a read that would wait forever
on a FIFO is interrupted by an alarm (the test then fails). Positive controls: each reader reads what bird wrote."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml

from bird import checkpoint, files
from bird.bundle.archive import BundleError
from bird.bundle.transcript import collect_transcript
from bird.config.load import ConfigError
from bird.config.received import load_received
from bird.learners.jax_executables import StoredPrograms
from bird.llm.cache import ResponseCache

ROOT = Path(__file__).resolve().parents[2]
ONE_RUN = ROOT / "tests" / "analysis" / "fixtures" / "smoke_runs" / "mujoco-inverted_pendulum" / "eureka-s0"
KEY = "ab" * 32
SECRET = "the victim's file: must stay as it is\n"
LIMITED = "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "


@contextlib.contextmanager
def _no_wait(seconds: int = 60) -> Iterator[None]:
    """Fail instead of hanging when the block waits on a FIFO (no writer ever comes)."""
    def fail(*_: object) -> None:
        raise AssertionError("the reader waited on a FIFO")

    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _victim(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "victim.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SECRET)
    return path


# --- the checkpoint -------------------------------------------------------------------------------------------
def _state():
    from bird.state import Plan, SearchState

    state = SearchState(spec=None, plan=Plan(2, 3, 10, 10, 1, 1), seed=0, smoke_batch={})  # type: ignore[arg-type]
    state.iteration = 1
    return state


@pytest.fixture(scope="module")
def cfg():
    from bird.config.load import compose

    return compose(["budget=smoke"])


def _saved_run(tmp_path: Path, cfg) -> Path:
    run = tmp_path / "run"
    run.mkdir(parents=True, exist_ok=True)
    checkpoint.save(run, cfg, _state(), {}, 0.0, [])
    return run


def test_ones_own_checkpoint_loads_and_leaves_no_temporary_file(tmp_path, cfg):
    run = _saved_run(tmp_path, cfg)
    assert checkpoint.load(run, cfg).state.iteration == 1
    assert [p.name for p in run.iterdir()] == [checkpoint.CHECKPOINT_NAME]


def test_a_checkpoint_link_leaving_the_run_fifo_oversize_or_huge_number_is_refused(tmp_path, cfg, monkeypatch):
    outside = _saved_run(tmp_path / "elsewhere", cfg) / checkpoint.CHECKPOINT_NAME  # a valid checkpoint elsewhere
    run = tmp_path / "run"
    run.mkdir()
    (run / checkpoint.CHECKPOINT_NAME).symlink_to(outside)
    with pytest.raises(checkpoint.CheckpointError, match="link that leaves"):
        checkpoint.load(run, cfg)
    _fifo(run / checkpoint.CHECKPOINT_NAME)
    with _no_wait(), pytest.raises(checkpoint.CheckpointError, match="not a regular file"):
        checkpoint.load(run, cfg)
    (run / checkpoint.CHECKPOINT_NAME).unlink()
    shutil.copy(outside, run / checkpoint.CHECKPOINT_NAME)
    monkeypatch.setitem(files.LIMITS, "checkpoint", 1000)
    with pytest.raises(checkpoint.CheckpointError, match="may hold at most 1000"):
        checkpoint.load(run, cfg)
    monkeypatch.undo()
    text = (run / checkpoint.CHECKPOINT_NAME).read_text()
    (run / checkpoint.CHECKPOINT_NAME).write_text(text.replace('"iteration":1', '"iteration":' + "9" * 400, 1))
    with pytest.raises(checkpoint.CheckpointError, match="integer of 400 digits"):
        checkpoint.load(run, cfg)


def test_saving_a_checkpoint_never_writes_through_a_link_planted_at_a_temporary_name(tmp_path, cfg):
    victim = _victim(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / f".{checkpoint.CHECKPOINT_NAME}.{os.getpid()}.tmp").symlink_to(victim)  # the name bird once used
    (run / checkpoint.CHECKPOINT_NAME).symlink_to(victim)
    checkpoint.save(run, cfg, _state(), {}, 0.0, [])
    assert victim.read_text() == SECRET
    assert not (run / checkpoint.CHECKPOINT_NAME).is_symlink() and checkpoint.load(run, cfg).state.iteration == 1


def test_rewinding_never_appends_lost_calls_through_a_planted_link(tmp_path):
    victim = _victim(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    kept = '{"iteration": 1}\n'
    (run / "llm_calls.jsonl").write_text(kept + '{"iteration": 2, "cost_usd": 0.25}\n')
    (run / "lost_llm_calls.jsonl").symlink_to(victim)
    saved = checkpoint.SavedSearch("h", _state(), {}, {"llm_calls.jsonl": len(kept)}, {}, 0.0)
    with pytest.raises(files.UnsafeFileError, match="lost_llm_calls.jsonl is a link"):
        checkpoint.rewind(run, saved)
    assert victim.read_text() == SECRET


# --- the JAX store and the response cache (a file that is not the store's own is a miss) -------------------------
def test_a_stored_program_that_is_a_fifo_is_a_miss_and_ones_own_is_found(tmp_path):
    store = StoredPrograms(tmp_path / "store", {})
    store.put("k", b"compiled")
    assert store.get("k") == b"compiled"
    assert (store.path("k").stat().st_mode & 0o777) == 0o644  # readable by whoever shares the cache, as JAX's
    _fifo(store.path("k"))
    with _no_wait():
        assert store.get("k") is None


def test_a_cache_entry_that_is_a_fifo_deep_json_or_a_link_leaving_the_cache_is_a_miss(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    cache.put(KEY, {"provider": "p", "model": "m", "request": {}, "response": {"text": "own"}})
    assert cache.get(KEY)["response"] == {"text": "own"}
    elsewhere = tmp_path / "elsewhere.json"
    shutil.copy(cache.path(KEY), elsewhere)
    cache.path(KEY).unlink()
    cache.path(KEY).symlink_to(elsewhere)
    assert cache.get(KEY) is None
    _fifo(cache.path(KEY))
    with _no_wait():
        assert cache.get(KEY) is None
    cache.path(KEY).unlink()
    cache.path(KEY).write_text('{"format": 1, "a": ' * 100_000 + "1" + "}" * 100_000)
    assert cache.get(KEY) is None


# --- a received config.yaml, the journal, a policy ----------------------------------------------------------------
@pytest.mark.parametrize(("plant", "why"), [
    (lambda p: _fifo(p), "not a regular file"),
    (lambda p: p.write_text("a: &x [1, 2]\nb: *x\n"), "alias"),
    (lambda p: p.write_text("a: " + "[" * 200 + "]" * 200 + "\n"), "nested deeper"),
    (lambda p: p.write_text("x: " + "y" * (4 << 20) + "\n"), "may hold at most"),
])
def test_a_received_config_that_is_a_fifo_an_alias_deep_or_oversize_is_refused(tmp_path, plant, why):
    path = tmp_path / "config.yaml"
    plant(path)
    with _no_wait(), pytest.raises(ConfigError, match=why):
        load_received(path)


def test_a_received_config_bird_wrote_reads_as_data():
    data = load_received(ONE_RUN / "config.yaml")
    assert data["method"] == "eureka" and data["budget"]["name"] == "smoke"


def _run_copy(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(ONE_RUN, run)
    return run


@pytest.mark.parametrize(("plant", "why"), [
    (lambda p: _fifo(p), "not a regular file"),
    (lambda p: p.write_text('{"key": ' + "[" * 100_000 + "]" * 100_000 + "}\n"), "line 1: JSON nested deeper"),
    (lambda p: p.write_text('{"key": null}\n[1]\n'), "not a JSON object"),
])
def test_a_journal_that_is_a_fifo_deep_or_not_objects_stops_pack_with_its_reason(tmp_path, plant, why):
    run = _run_copy(tmp_path)
    plant(run / "llm_calls.jsonl")
    with _no_wait(), pytest.raises(BundleError, match=why):
        collect_transcript(run, ResponseCache(tmp_path / "cache"))


def test_the_journal_of_a_real_run_is_collected(tmp_path):
    transcript = collect_transcript(ONE_RUN, ResponseCache(tmp_path / "cache"))
    assert transcript.deterministic_calls > 0 and not transcript.missing


def _npz(path: Path, **arrays: np.ndarray) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:  # np.savez_compressed, member by member
        for name, arr in arrays.items():
            buf = io.BytesIO()
            np.save(buf, arr)
            zf.writestr(f"{name}.npy", buf.getvalue())


def test_a_policy_that_is_a_fifo_or_expands_past_its_cap_is_refused(tmp_path, monkeypatch):
    from bird.learners.sb3_policy import load_policy

    path = tmp_path / "policy.npz"
    _npz(path, meta=np.frombuffer(b"{}", dtype=np.uint8), **{"params/w": np.zeros(1 << 18)})  # 2 MiB of zeros
    assert path.stat().st_size < 64 << 10
    monkeypatch.setitem(files.LIMITS, "arrays", 1 << 20)
    with pytest.raises(ValueError, match="uncompressed"):
        load_policy(path)
    _fifo(path)
    with _no_wait(), pytest.raises(files.UnsafeFileError, match="not a regular file"):
        load_policy(path)


def test_ones_own_policy_loads_and_acts(tmp_path):
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    from bird.learners.sb3_policy import load_policy, save_policy

    env = VecNormalize(make_vec_env("Pendulum-v1", n_envs=1))
    model = PPO("MlpPolicy", env, n_steps=64, device="cpu")
    save_policy(model, env, tmp_path / "policy.npz")
    act = load_policy(tmp_path / "policy.npz", deterministic=True)
    assert act(np.zeros((2, 3))).shape == (2, 1)


# --- /dev/zero behind each reader, in a child under a memory limit ------------------------------------------------
ZERO = """
import sys
from pathlib import Path
from bird import checkpoint
from bird.bundle.transcript import collect_transcript
from bird.config.load import compose, ConfigError
from bird.config.received import load_received
from bird.learners.jax_executables import StoredPrograms
from bird.learners.sb3_policy import load_policy
from bird.llm.cache import ResponseCache

root = Path(sys.argv[1])
store, cache = StoredPrograms(root / "store", {}), ResponseCache(root / "cache")
store.path("k").parent.mkdir(parents=True)
store.path("k").symlink_to("/dev/zero")
print("store", store.get("k"))
cache.path(sys.argv[2]).parent.mkdir(parents=True)
cache.path(sys.argv[2]).symlink_to("/dev/zero")
print("cache", cache.get(sys.argv[2]))
for name in ("search_state.json", "config.yaml", "llm_calls.jsonl", "policy.npz"):
    (root / name).symlink_to("/dev/zero")
for what, read in [("checkpoint", lambda: checkpoint.load(root, compose(["budget=smoke"]))),
                   ("config", lambda: load_received(root / "config.yaml")),
                   ("journal", lambda: collect_transcript(root, cache)),
                   ("policy", lambda: load_policy(root / "policy.npz"))]:
    try:
        read()
        print(what, "read")
    except (OSError, ValueError, checkpoint.CheckpointError) as exc:
        print(what, "refused:", "link that leaves" in str(exc))
"""


def test_a_link_to_dev_zero_behind_any_reader_is_refused_without_reading_it(tmp_path):
    proc = subprocess.run([sys.executable, "-c", LIMITED + ZERO, str(tmp_path), KEY], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ["store None", "cache None", "checkpoint refused: True",
                                        "config refused: True", "journal refused: True", "policy refused: True"]


# --- EPIC's inputs from a received run -----------------------------------------------------------------------------
def _epic_refs():
    from bird.analysis.epic_bench import TaskReference

    env = "mujoco/inverted_pendulum"
    return {env: TaskReference(env, None, canon=np.zeros(1), scale=1.0)}  # evaluation stops before the reference


def test_epic_reads_a_received_contract_as_data_and_never_resolves_it(tmp_path, monkeypatch):
    from bird.analysis.epic_bench import EpicSettings, evaluate_run

    monkeypatch.setenv("BIRD_TEST_SECRET", "sk-do-not-leak")
    run = _run_copy(tmp_path)
    data = yaml.safe_load((run / "config.yaml").read_text())
    data.setdefault("reward", {})["contract"] = "stateful"
    (run / "config.yaml").write_text(yaml.safe_dump(data))
    rows = evaluate_run(run, EpicSettings(), _epic_refs())  # positive control: the received contract is read
    assert "contract 'stateful'" in rows[0]["reason"]
    data["reward"]["contract"] = "${oc.env:BIRD_TEST_SECRET}"
    (run / "config.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="interpolation"):
        evaluate_run(run, EpicSettings(), _epic_refs())


def test_epic_skips_a_run_whose_result_or_reward_it_will_not_read_and_names_why(tmp_path, capsys, monkeypatch):
    from bird.analysis.__main__ import main
    from bird.analysis.epic_bench import EpicSettings, evaluate_run

    monkeypatch.setenv("BIRD_CACHE_DIR", str(tmp_path / "cache"))
    elsewhere = _run_copy(tmp_path / "elsewhere")
    run = _run_copy(tmp_path / "runs")
    (run / "result.json").unlink()
    (run / "result.json").symlink_to(elsewhere / "result.json")
    assert main(["epic", str(run)]) == 1
    assert "skipped" in capsys.readouterr().err and not (run / "epic.csv").exists()
    (run / "result.json").unlink()
    shutil.copy(elsewhere / "result.json", run / "result.json")
    reward = run / "candidates" / "it1-c1" / "reward.py"
    reward.unlink()
    reward.symlink_to(elsewhere / "candidates" / "it1-c1" / "reward.py")
    with pytest.raises(files.UnsafeFileError, match="link that leaves"):
        evaluate_run(run, EpicSettings(), _epic_refs())



# --- tracker.json ----------------------------------------------------------------------------------------------
def test_a_received_tracker_file_does_not_choose_where_tensorboard_writes(tmp_path):
    from bird.config.schema import TrackerConfig
    from bird.tracking.tb_backend import TensorBoardTracker

    elsewhere = tmp_path / "elsewhere"
    meta = {"method": "eureka", "env": "mujoco/hopper", "seed": 0, "config_hash": "h", "config": {},
            "resume": {"backend": "tensorboard", "dir": str(elsewhere)}}  # what a received tracker.json says
    tracker = TensorBoardTracker(TrackerConfig(backend="tensorboard"), tmp_path / "run", meta)
    tracker.close(True)
    assert not elsewhere.exists()
    assert tracker.dir == tmp_path / "run" / "tensorboard" and any(tracker.dir.glob("events.out.tfevents.*"))
