"""The JAX path against jax_attacks.py, through the real path (jax_driver.py), as root and as an unprivileged user:
every attack program fails alone at the training-size dry run, every crafted artefact is refused before a trainer
loads it, a valid artefact that hangs the shared step is killed by the watchdog and found by the culprit search
while the clean candidate trains, a thread bomb stops at the worker's task limit, every trainer layer is active,
no side effect reaches the host and the canary never shows."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from jax_attacks import LOOP, PROGRAMS  # noqa: E402
from jax_driver import UPDATE_TIMEOUT_S  # noqa: E402
from test_corpus import NAMESPACED  # noqa: E402
from users import as_user, ensure_user, user_python  # noqa: E402

# the attacked group is two wide: the JAX warm-up compiled that program (tests/background.py, "jax_programs")
pytestmark = [pytest.mark.slow, pytest.mark.background("jax_programs")]
# as test_corpus.py: refused, absent, or not there in the trainer's namespaces (ENOENT in its tree, ESRCH)
STOPPED = {"PermissionError", "OSError", "BlockingIOError", "RuntimeError", "ValueError", "FileNotFoundError",
           "ProcessLookupError"}
HERE = Path(__file__).resolve().parent
DRIVER_TIMEOUT_S = 3600
CLEAN = "g1_forward"  # the clean program in the attacked group
MATE = "g2_upright"  # the clean program's groupmate in the baseline


def _start_driver(prefix: list[str], python: str, site_dir: str | None, canary: str, out_dir: Path, cache: str,
                  extra: list[str]) -> tuple[subprocess.Popen, Path]:
    out = out_dir / "results.json"
    cmd = [*prefix, python, "-I", str(HERE / "jax_driver.py"), "--out", str(out), *extra]
    if site_dir:
        cmd += ["--site", site_dir]
    env = {"PATH": os.defpath, "BIRD_TEST_CANARY": canary, "OPENAI_API_KEY": canary, "BIRD_JAX_CACHE": cache,
           "OMP_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3", "MUJOCO_GL": "disable",  # no OpenGL probe
           "XLA_FLAGS": os.environ.get("XLA_FLAGS", "")}  # the suite's (tests/conftest.py)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=out_dir,
                            start_new_session=True)
    return proc, out


def _finish(proc: subprocess.Popen, out: Path) -> dict:
    try:
        stdout, stderr = proc.communicate(timeout=DRIVER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        stdout, stderr = proc.communicate()
    raw = out.read_text() if out.exists() else ""
    return {"returncode": proc.returncode, "stdout": stdout, "stderr": stderr, "raw": raw,
            "results": json.loads(raw) if raw else {}}


def _add_warm_programs(cache: str) -> None:
    """The executables and the compile step's output (StoredPrograms) that the JAX warm-up put into the session's
    cache, copied into the drivers' cache (readable by the second user) once the warm-up has finished; without them
    each driver runs a compile step that traces and compiles the program again."""
    import background

    from bird.learners.jax_executables import store_dir

    background.result("jax_programs")
    warm = store_dir()  # the session's (BIRD_JAX_CACHE, tests/conftest.py)
    if warm is None or not warm.is_dir():
        return
    into = Path(cache) / warm.relative_to(warm.parents[1])
    into.mkdir(parents=True, exist_ok=True)
    for folder in (into.parent, into):
        os.chmod(folder, 0o777)
    for path in [*warm.glob("*.bin"), *warm.glob("*.program")]:
        shutil.copyfile(path, into / path.name)
        os.chmod(into / path.name, 0o644)


@pytest.fixture(scope="session")
def jax_runs(canary, tmp_path_factory):
    """The driver as this user (with the baseline group) and as the test user, side by side; one JAX cache both can
    read, holding the warm-up's programs before either driver starts (neither compiles the training program)."""
    cache = tempfile.mkdtemp(prefix="bird-jax-sec-cache-")
    os.chmod(cache, 0o777)  # the second user's compile step finds the first one's program
    _add_warm_programs(cache)
    started, runs = {}, {}
    me = "root" if os.geteuid() == 0 else "unprivileged"
    started[me] = _start_driver([], sys.executable, None, canary, tmp_path_factory.mktemp("jax-driver"), cache,
                                ["--baseline"])
    made = ensure_user()
    found = user_python(*made) if not isinstance(made, str) else made
    user_dir = None
    if isinstance(found, str):
        runs["unprivileged"] = found
    else:
        user_dir = Path(tempfile.mkdtemp(prefix="bird-jax-sec-user-"))
        os.chown(user_dir, *made)
        started.setdefault("unprivileged", _start_driver(as_user(*made), found[0], found[1], canary, user_dir, cache,
                                                         ["--short"]))
    runs.update({user: _finish(*pair) for user, pair in started.items()})
    if user_dir is not None:
        shutil.rmtree(user_dir, ignore_errors=True)
    runs.setdefault("root", "the tests do not run as root")
    yield runs
    shutil.rmtree(cache, ignore_errors=True)


@pytest.fixture(params=["root", "unprivileged"])
def run(request, jax_runs) -> dict:
    got = jax_runs[request.param]
    if isinstance(got, str):
        pytest.skip(f"{request.param}: {got}")
    return got


def test_driver_finished_without_a_host_error(run):
    assert run["returncode"] == 0, run["stderr"][-3000:]
    for phase in ("programs", "thread_bomb", "escaped_trainer", "artefacts"):
        if phase in run["results"]:  # the second user's run leaves out the programs
            assert "host_error" not in run["results"][phase], run["results"][phase]["host_error"]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_attack_program_passes_the_smoke_check_and_fails_alone_at_training_size(jax_runs, name):
    """Run once, as the first user (the dry run and the inspector do not depend on the user)."""
    run = jax_runs["root" if os.geteuid() == 0 else "unprivileged"]
    rec = run["results"]["programs"]["programs"][name]
    assert rec["smoke_valid"], rec["smoke_failure"]  # what `python -m bird.reward check` would accept
    failure = rec["export_failure"]
    _, kinds, words = PROGRAMS[name]
    assert failure is not None and failure["kind"] in kinds and words in failure["reason"], rec
    assert run["results"]["programs"]["export_s"] < 300  # bounded: the driver's dry-run budget is 5 s a program


def test_a_thread_bomb_stops_at_the_jax_workers_task_limit(run):
    rec = run["results"]["thread_bomb"]
    assert rec["outcome"] == "raised" and rec["error"] == "RuntimeError", rec
    from bird.reward.isolation import thread_task_limit

    started = int(rec["text"].split()[0])
    assert started < thread_task_limit(), rec  # its own limit (cgroup pids.max, RLIMIT_NPROC of its own uid)


# what the trainer's profile allows on purpose: threads (within its task limit) and no CPU-time limit (the watchdog
# bounds its time), so raising a CPU limit it does not have changes nothing
TRAINER_ALLOWS = {"start_thread", "raise_cpu_limit"}


def test_every_escaped_payload_is_stopped_inside_the_trainers_wall(run):
    from escaped_payloads import ATTEMPTS

    rec = run["results"]["escaped_trainer"]
    assert set(rec) == set(ATTEMPTS)
    for name, r in rec.items():
        assert r["effects"] == [] and r["inactive"] == {}, (name, r)
        if name == "forge_result_frames":
            assert r["outcome"] == "host_rejected" and r["failure"]["kind"] == "bad_output", r
        elif name not in TRAINER_ALLOWS:
            assert r["outcome"] == "raised" and r["error"] in STOPPED, (name, r)
            if name in NAMESPACED:  # only the namespaces stop these: the tree and the pid namespace are the trainer's
                assert r["errno"] == NAMESPACED[name], (name, r)


def test_no_crafted_artefact_reaches_a_trainer(run):
    rec = run["results"]["artefacts"]
    crafted = [n for n in rec["results"] if n not in (CLEAN, LOOP)]
    assert len(crafted) >= (20 if "programs" in run["results"] else 4)  # the second user's run keeps a few
    assert rec["groups"] == [[CLEAN, LOOP]]  # the only jobs sent to the trainer
    for name in crafted:
        failure = rec["results"][name]["failure"]
        assert failure is not None and failure["kind"] in ("rejected", "bad_output", "runtime_error"), (name, failure)
        assert "artefact" in failure["reason"], (name, failure)  # the inspector's verdict, naming the artefact


def test_the_hanging_artefact_is_killed_by_the_watchdog_and_fails_alone(run):
    rec = run["results"]["artefacts"]
    loop = rec["results"][LOOP]["failure"]
    assert loop["kind"] == "timeout" and f"train.jax.update_timeout_s={UPDATE_TIMEOUT_S}" in loop["reason"], loop
    assert rec["results"][CLEAN]["failure"] is None and len(rec["results"][CLEAN]["curve"]) == 2
    hung = [a for a in rec["attempts"] if a["group"] is not None]
    assert all(LOOP in a["jobs"] and a["blame"] for a in hung) and [LOOP] in [a["jobs"] for a in hung]
    assert [CLEAN] in [a["jobs"] for a in rec["attempts"] if a["group"] is None]  # retrained without the culprit
    assert {a["width"] for a in rec["attempts"]} == {2}  # every retry keeps the group's width


def test_the_clean_program_trains_exactly_as_in_a_group_without_the_culprit(run):
    """The culprit search retrained the clean program without the culprit; the baseline trained it with another clean
    program, at the same width. Same seed, same compiled program: the same numbers, bit for bit."""
    if "baseline" not in run["results"]:
        pytest.skip("the baseline runs once, as the first user")
    base, got = run["results"]["baseline"], run["results"]["artefacts"]["results"]
    assert base[CLEAN]["failure"] is None and base[MATE]["failure"] is None
    assert len(got[CLEAN]["curve"]) == 2
    for a, b in zip(got[CLEAN]["curve"], base[CLEAN]["curve"], strict=True):
        assert a.keys() == b.keys()
        for key in a:
            same = a[key] == b[key] or (isinstance(a[key], float) and math.isnan(a[key]) and math.isnan(b[key]))
            assert same, (key, a[key], b[key])
    # the baseline's group held a different training: its groupmate's return is not the clean program's
    assert base[CLEAN]["curve"][0]["own_return"] != base[MATE]["curve"][0]["own_return"]


def test_every_trainer_layer_was_active(run):
    attempts = run["results"]["artefacts"]["attempts"]
    assert attempts
    for a in attempts:
        inactive = {d["name"]: d["detail"] for d in a["layers"] if not d["active"]}
        assert inactive == {}, inactive
        assert {d["name"] for d in a["layers"]} >= {"landlock", "seccomp", "network_namespace", "unprivileged_user"}


def test_no_side_effect_on_the_host_and_no_canary(run, canary):
    assert all(effects == [] for effects in run["results"]["effects"].values()), run["results"]["effects"]
    for what in ("stdout", "stderr", "raw"):
        assert canary not in run[what], what
