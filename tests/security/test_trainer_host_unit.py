"""The trainer's host (bird/learners/trainer_host.py) in the test process, against a scripted stand-in for the
trainer's WorkerProcess and a test clock: the requests it sends and their limits, each validation of the replies,
who is blamed for a failure, the overall time limit, the output budget, the compile step and its store.

The real framed protocol, the real layers and real trainer processes are test_trainer_host.py's (about 25 s a pass);
these tests are its fast twin, run in milliseconds, so that mutation testing (tools/mutate.py trainer_host) can run
them for every mutant. The stand-in fails the way WorkerProcess does (the same Failure kinds and texts)."""

from __future__ import annotations

import json
import logging
import os
import pickle
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from bird.learners import trainer_host
from bird.reward import trainer_wall
from bird.reward.jax_export import ExportedReward
from bird.reward.replies import RewardProgramError
from bird.reward.sandbox import BOOT, worker_paths
from bird.types import Failure, FailureKind

SETTINGS = {"steps_per_update": 64, "n_updates": 3}
TIMING = {"compile_s": 1.0, "executables_bytes": 0.0}
CHECKPOINT = {"score": 0.1, "quantity": 0.2, "own_return": 1.0, "reference_return": 2.0, "episode_length": 10.0,
              "components": {"a": 0.5}, "eval_own_return": float("nan"), "eval_reference_return": float("nan")}
DROPPED = [{"name": "unprivileged_user", "active": True, "detail": "uid 65534"}]


# -- the stand-in ------------------------------------------------------------------------------------------------
class Clock:
    """time.monotonic for the host; only the script moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@dataclass
class Later:
    """Reply with `step` after `seconds` of the test clock."""

    seconds: float
    step: Any


SILENT = "silent"  # no reply: the read's deadline passes (WorkerProcess._read)
CRASH = "crash"  # the process dies (WorkerProcess._dead)


class ScriptedTrainer:
    """Stands in for WorkerProcess: records each call (limits as seconds from the test clock's now) and answers each
    request or receive with the script's next step."""

    def __init__(self, script: list[Any], clock: Clock, args: tuple, kwargs: dict) -> None:
        self.script, self.clock, self.args, self.kwargs = list(script), clock, args, kwargs
        self.calls: list[tuple] = []
        self.closed = 0
        self.layers = [{"name": n, "active": n != "unprivileged_user", "detail": "deferred" if
                        n == "unprivileged_user" else ""} for n in kwargs["layer_names"]]

    def request(self, header: dict, payload: bytes, timeout: float, max_payload: int, what: str, limit: str):
        self.calls.append(("request", header, payload, timeout, max_payload, what, limit))
        return self._next(self.clock.now + timeout, max_payload, what, limit)

    def send(self, header: dict, payload: bytes, deadline: float, what: str, limit: str) -> None:
        self.calls.append(("send", header, payload, deadline - self.clock.now, what, limit))

    def receive(self, deadline: float, max_payload: int, what: str, limit: str):
        self.calls.append(("receive", deadline - self.clock.now, max_payload, what, limit))
        return self._next(deadline, max_payload, what, limit)

    def _next(self, deadline: float, max_payload: int, what: str, limit: str):
        assert self.script, "the host asked for more than the script holds"
        step = self.script.pop(0)
        while isinstance(step, Later):
            self.clock.now += step.seconds
            step = step.step
        if step == SILENT:
            self.clock.now = max(self.clock.now, deadline)
            self.close()
            raise RewardProgramError(Failure(FailureKind.TIMEOUT, f"{what} exceeded the {limit}"))
        if step == CRASH:
            self.close()
            raise RewardProgramError(Failure(FailureKind.RUNTIME_ERROR, "trainer crashed (SIGSEGV)"))
        header, payload = step if isinstance(step, tuple) else (step, b"")
        if len(payload) > max_payload:
            self.close()
            raise RewardProgramError(Failure(FailureKind.BAD_OUTPUT, f"trainer sent a reply payload of {len(payload)} "
                                                                     f"bytes (at most {max_payload} expected)"))
        return header, payload

    def close(self) -> None:
        self.closed += 1

    def sent(self) -> list[tuple]:
        """(op, payload) of each request and send."""
        return [(c[1]["op"], c[2]) for c in self.calls if c[0] in ("request", "send")]


# -- scripts -----------------------------------------------------------------------------------------------------
def setup_reply(**changes: Any) -> dict:
    return {"ok": True, "rows": 32, "settings": dict(SETTINGS), "timing": dict(TIMING), "layers": DROPPED,
            "devices": ["TFRT_CPU_0"], **changes}


def load_reply(n: int = 1, **changes: Any) -> dict:
    return {"ok": True, "failures": {}, "live": list(range(n)), **changes}


def checkpoint(update: int, job: int, **changes: Any) -> dict:
    return {"event": "checkpoint", "job": job,
            "checkpoint": {**CHECKPOINT, "env_steps": update * 64, "score": 0.1 * update + job, **changes}}


def training(jobs: list[int], failures: dict | None = None) -> list[Any]:
    """Three updates; checkpoints of `jobs` before updates 2 and 3; the trained frame (each job ships its last)."""
    frames: list[Any] = [{"event": "update", "update": 1}]
    for update in (2, 3):
        frames += [checkpoint(update, j) for j in jobs] + [{"event": "update", "update": update}]
    failures = failures or {}
    shipped = {str(j): 1 for j in jobs if str(j) not in failures}
    return frames + [{"event": "trained", "failures": failures, "updates": 3, "timing": {**TIMING, "train_s": 2.0},
                      "shipped": shipped}]


def outputs(jobs: list[int]) -> list[Any]:
    return [({"event": "output", "job": j, "policy": 8, "arrays": []}, b"POLICY!!") for j in jobs] + [{"event": "done"}]


def clean(n: int = 1) -> list[Any]:
    jobs = list(range(n))
    return [setup_reply(), load_reply(n), *training(jobs), *outputs(jobs)]


# -- the host under test -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def base_job(compose_cfg, tmp_path_factory):
    from bird.learners.job import make_job

    cfg = compose_cfg("env=brax/hopper", "train.learner=jax_ppo", "train.jax.update_timeout_s=3",
                      "budget.n_checkpoints=2")
    return make_job(cfg, "c0", None, 0, 192, tmp_path_factory.mktemp("unused"))


@pytest.fixture
def host(base_job, monkeypatch, tmp_path):
    """host.run(script, n=...) trains a group of n jobs against the script; host.trainer is the stand-in."""
    monkeypatch.setenv("BIRD_JAX_CACHE", "off")  # no compile step (its own tests below)
    monkeypatch.setattr(trainer_host, "_warned", set())
    clock = Clock()
    monkeypatch.setattr(trainer_host, "time", SimpleNamespace(monotonic=clock.monotonic))
    state = SimpleNamespace(clock=clock, trainer=None, made=0)

    def jobs(n: int = 1, **changes: Any) -> list:
        out = [replace(base_job, candidate_id=f"c{i}", seed=i, out_dir=str(tmp_path / f"job{i}"), save_policy=True,
                       program=ExportedReward(bytes([i + 1]) * (64 + i), ("a",), 11, 3, 32)) for i in range(n)]
        return [replace(j, **changes) for j in out]

    def worker(script: list[Any]):
        def make(*args: Any, **kwargs: Any) -> ScriptedTrainer:
            state.made += 1
            state.trainer = ScriptedTrainer(script, clock, args, kwargs)
            return state.trainer
        return make

    def run(script: list[Any], n: int = 1, progress=None, executables: bool = True, group: list | None = None,
            timeout_s: float = 0.0, **changes: Any):
        monkeypatch.setattr(trainer_host, "WorkerProcess", worker(script))
        group = [replace(j, train=replace(j.train, timeout_s=timeout_s)) for j in group or jobs(n, **changes)]
        return group, trainer_host.run_trainer(group, len(group), progress, executables)

    state.run, state.jobs, state.worker = run, jobs, worker
    return state


def test_a_well_formed_group_is_read_into_results_files_and_progress(host, tmp_path):
    seen = []
    script = clean(2)
    script[0], script[1] = Later(1.5, script[0]), Later(2.5, script[1])  # setup 1.5 s, load 2.5 s
    script[2] = Later(4.0, script[2])  # training 4 s
    script[-1] = Later(8.0, script[-1])  # outputs 8 s
    jobs, attempt = host.run(script, n=2, progress=lambda *a: seen.append(a))
    assert attempt.group is None and not attempt.blame and host.trainer.script == []
    assert [r.candidate_id for r in attempt.results] == ["c0", "c1"] and all(r.ok for r in attempt.results)
    first, second = attempt.results
    assert [c.env_steps for c in second.curve] == [128, 192] and [c.score for c in second.curve] == [1.2, 1.3]
    assert second.env_steps == 192 and second.wall_s == 16.0 and second.shipped == 1
    assert Path(first.policy_path).read_bytes() == b"POLICY!!" and first.policy_path.startswith(str(tmp_path / "job0"))
    assert seen == [("c0", 128, 192, 0.2), ("c1", 128, 192, 1.2), ("c0", 192, 192, 0.30000000000000004),
                    ("c1", 192, 192, 1.3)]
    record = json.loads((tmp_path / "job1" / "jax_ppo.json").read_text())
    assert record == {"settings": SETTINGS, "timing": {**TIMING, "train_s": 2.0}, "slots": 2, "devices": ["TFRT_CPU_0"],
                      "isolation": {name: True for name in trainer_host.TRAINER_LAYERS},
                      "program": jobs[1].program.digest}
    assert attempt.seconds == {"start_s": 0.0, "setup_s": 1.5, "load_s": 2.5, "train_s": 4.0, "outputs_s": 8.0}
    assert attempt.layers == host.trainer.layers and all(d["active"] for d in attempt.layers)
    assert host.trainer.closed >= 1 and host.made == 1


def test_the_trainer_is_started_with_the_trainers_wall_and_limits(host):
    jobs, _ = host.run(clean())
    cfg, env = trainer_host.trainer_isolation(jobs[0])
    assert host.trainer.args == (None, cfg.memory_mb, cfg.call_timeout_s)
    assert host.trainer.kwargs == {"module": trainer_wall.TRAINER_MODULE, "init": {"isolation": cfg.to_json()},
                                   "env": env, "startup_timeout_s": 120.0, "name": "trainer",
                                   "layer_names": trainer_host.TRAINER_LAYERS, "warn": False}


def test_each_request_carries_its_own_limit_and_what_it_waits_for(host):
    jobs, _ = host.run(clean(2), n=2)
    limit = jobs[0].train.jax.compile_timeout_s
    calls = host.trainer.calls
    assert calls[0][0] == "request" and calls[0][1] == {"op": "setup", "width": 2}
    assert calls[0][3:] == (limit, 0, "loading and compiling the training program",
                            f"train.jax.compile_timeout_s={limit:g}")
    sent_jobs, executables = pickle.loads(calls[0][2])  # noqa: S301 - written by the host in this test
    assert executables is None and [j.program for j in sent_jobs] == [None, None]
    assert [j.candidate_id for j in sent_jobs] == ["c0", "c1"] and jobs[0].program is not None
    assert calls[1][:2] == ("request", {"op": "load", "programs": [
        {"components": ["a"], "obs_dim": 11, "act_dim": 3, "rows": 32, "size": 64},
        {"components": ["a"], "obs_dim": 11, "act_dim": 3, "rows": 32, "size": 65}]})
    assert calls[1][2] == bytes([1]) * 64 + bytes([2]) * 65
    assert calls[1][3:] == (600.0, 0, "loading the reward programs", "load time limit (600 s)")
    assert calls[2] == ("send", {"op": "train"}, b"", 60.0, "starting training", "60 s")
    assert calls[3] == ("receive", 3.0, 0, "training update 1 (with its evaluation)",
                        "train.jax.update_timeout_s=3 (wall clock)")
    assert calls[4][3] == "training update 2 (with its evaluation)"
    out = calls.index(("send", {"op": "outputs"}, b"", 600.0, "policies and rollouts", "outputs time limit (600 s)"))
    budget = trainer_host.MAX_OUTPUT_BYTES
    assert [c[2] for c in calls[out + 1:]] == [budget, budget - 8, budget - 16]  # every job's outputs together
    assert [c[3:] for c in calls[out + 1:]] == [("policies and rollouts", "outputs time limit (600 s)")] * 3
    assert budget == 1 << 30


def test_the_outputs_of_a_group_share_one_byte_budget(host, monkeypatch):
    monkeypatch.setattr(trainer_host, "MAX_OUTPUT_BYTES", 12)
    _, attempt = host.run(clean(2), n=2)
    assert (attempt.group.kind, attempt.blame) == (FailureKind.BAD_OUTPUT, True)
    assert attempt.group.reason == "trainer sent a reply payload of 8 bytes (at most 4 expected)"


def test_a_reference_job_sends_no_program_and_a_group_trains_with_the_compile_steps_executables(host, monkeypatch):
    group = host.jobs(2)
    group[0] = replace(group[0], program=None)  # the reference reward
    monkeypatch.setattr(trainer_host, "ensure_compiled", lambda jobs, width, timeout_s: b"EXE")
    script = clean(2)
    script[3:9] = [{**f, "checkpoint": {**f["checkpoint"], "components": {}}} if f.get("job") == 0 else f
                   for f in script[3:9]]  # the reference reward has no components
    _, attempt = host.run(script, group=group)
    assert attempt.group is None, attempt.group
    (_, setup), (_, load) = host.trainer.sent()[:2]
    assert pickle.loads(setup)[1] == b"EXE" and load == bytes([2]) * 65  # noqa: S301 - the host's, in this test
    assert host.trainer.calls[1][1]["programs"][0] is None
    host.run(script, group=group, executables=False)  # the baseline: the trainer traces the program itself
    assert pickle.loads(host.trainer.sent()[0][1])[1] is None  # noqa: S301 - the host's, in this test


def test_the_texts_of_the_hosts_own_refusals_are_exact(host):
    for script, n, reason in [
            ([setup_reply(settings=[64, 3])], 1, "settings must be an object"),
            ([setup_reply(devices="TFRT_CPU_0")], 1, "devices must be a list of at most 16 strings"),
            ([setup_reply(), load_reply(live=[0, 0])], 1, "a list of live jobs that does not match the group"),
            ([setup_reply(), load_reply(), *training([0])[:-1], {**training([0])[-1], "shipped": {}}], 1,
             "shipped checkpoints that do not match the jobs that trained")]:
        _, attempt = host.run(script, n=n)
        assert attempt.group.reason == reason


@pytest.mark.parametrize("reply, words", [
    ({"ok": False, "kind": "timeout", "reason": "no such task"}, "no such task"),
    ({"ok": 1}, "unknown error"),  # only `true` is ok
    (setup_reply(rows=0), "rows must be an integer in [1, 16777216], got 0"),
    (setup_reply(rows=(1 << 24) + 1), "rows must be an integer in [1, 16777216], got 16777217"),
    (setup_reply(settings=[64, 3]), "settings must be an object"),
    (setup_reply(devices="TFRT_CPU_0"), "devices must be a list of at most 16 strings"),
    (setup_reply(settings={"n_updates": 3}), "steps_per_update must be an integer"),
    (setup_reply(settings={"steps_per_update": 0, "n_updates": 3}), "steps_per_update must be an integer in [1, "),
    (setup_reply(settings={"steps_per_update": (1 << 40) + 1, "n_updates": 3}), "in [1, 1099511627776]"),
    (setup_reply(settings={"steps_per_update": 64, "n_updates": 0}), "n_updates must be an integer in [1, "),
    (setup_reply(settings={"steps_per_update": 64, "n_updates": (1 << 40) + 1}), "in [1, 1099511627776]"),
    (setup_reply(devices="TFRT_CPU_0"), "devices"),
    (setup_reply(devices=[f"d{i}" for i in range(17)]), "devices"),
    (setup_reply(timing={"compile_s": -1.0}), "a timing"),
    (CRASH, "trainer crashed (SIGSEGV)"),
])
def test_a_setup_that_fails_is_the_groups_train_error_and_blames_no_program(host, reply, words):
    _, attempt = host.run([reply])
    assert attempt.results == [] and attempt.group.kind == FailureKind.TRAIN_ERROR and attempt.blame is False
    assert words in attempt.group.reason, attempt.group.reason
    assert [op for op, _ in host.trainer.sent()] == ["setup"] and host.trainer.closed >= 1
    assert set(attempt.seconds) == {"start_s"} and attempt.layers == host.trainer.layers


def test_a_setup_at_its_bounds_is_accepted(host):
    big = {"steps_per_update": 1 << 40, "n_updates": 1 << 40}
    devices = [f"{i:0100d}" for i in range(15)] + ["d" * 150]
    failures = {"0": {"kind": "rejected", "reason": "bad program 0"}}
    script = [setup_reply(rows=1 << 24, settings=big, devices=devices), load_reply(live=[], failures=failures)]
    _, attempt = host.run(script)
    assert attempt.group is None and attempt.results[0].failure.reason == "bad program 0", attempt
    record = json.loads(Path(host.jobs()[0].out_dir, "jax_ppo.json").read_text())
    assert record["settings"] == big and record["devices"][:15] == devices[:15]
    assert record["devices"][15] == "d" * 99 + "…"  # each name cut to 100 characters


def test_a_trainer_that_keeps_root_until_setup_reports_its_uid_drop_there(host, caplog):
    caplog.set_level(logging.WARNING, logger=trainer_host.__name__)
    _, attempt = host.run(clean())
    assert attempt.results[0].ok and all(d["active"] for d in host.trainer.layers) and caplog.records == []
    record = json.loads(Path(host.jobs()[0].out_dir, "jax_ppo.json").read_text())
    assert record["isolation"]["unprivileged_user"] is True
    _, attempt = host.run([setup_reply(layers=[]), *clean()[1:]])  # no drop reported: the layer stays inactive
    record = json.loads(Path(host.jobs()[0].out_dir, "jax_ppo.json").read_text())
    assert attempt.results[0].ok and record["isolation"]["unprivileged_user"] is False
    assert sum(d["active"] for d in host.trainer.layers) == len(trainer_host.TRAINER_LAYERS) - 1
    assert [r.getMessage() for r in caplog.records] == [
        "the JAX trainer runs without these OS layers: unprivileged_user (python -m bird.reward check --explain)"]
    host.run([setup_reply(layers=[{"name": "unprivileged_user", "active": False}]), *clean()[1:]])
    assert len(caplog.records) == 1  # once per process and set of inactive layers


def test_the_isolation_report_warns_once_for_each_set_of_inactive_layers(monkeypatch, caplog):
    caplog.set_level(logging.WARNING, logger=trainer_host.__name__)
    monkeypatch.setattr(trainer_host, "_warned", set())
    on, off = {"active": True, "detail": ""}, {"active": False, "detail": ""}
    trainer_host.isolation_report([{"name": "seccomp", **on}, {"name": "landlock", **on}])
    assert caplog.records == []
    trainer_host.isolation_report([{"name": "seccomp", **off}, {"name": "landlock", **off}])
    trainer_host.isolation_report([{"name": "seccomp", **off}, {"name": "landlock", **off}])
    trainer_host.isolation_report([{"name": "seccomp", **off}, {"name": "landlock", **on}])
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [
        "the JAX trainer runs without these OS layers: seccomp, landlock",
        "the JAX trainer runs without these OS layers: seccomp"]


@pytest.mark.parametrize("reply, kind, words", [
    (CRASH, FailureKind.RUNTIME_ERROR, "trainer crashed (SIGSEGV)"),  # the programs arrived: one may be the cause
    (SILENT, FailureKind.TIMEOUT, "loading the reward programs exceeded the load time limit (600 s)"),
    ({"ok": False, "kind": "non_finite", "reason": "NaN"}, FailureKind.NON_FINITE, "NaN"),
    ({"ok": False, "kind": "rejected", "reason": "a host callback"}, FailureKind.RUNTIME_ERROR, "a host callback"),
    (load_reply(live=[0, 7]), FailureKind.BAD_OUTPUT, "a list of live jobs that does not match the group"),
    (load_reply(live=[-1]), FailureKind.BAD_OUTPUT, "a list of live jobs that does not match the group"),
    (load_reply(live=[0, 0]), FailureKind.BAD_OUTPUT, "a list of live jobs that does not match the group"),
    (load_reply(live="0"), FailureKind.BAD_OUTPUT, "a list of live jobs that does not match the group"),
    (load_reply(live=None), FailureKind.BAD_OUTPUT, "a list of live jobs that does not match the group"),
    (load_reply(live=[0], failures={"0": {"kind": "rejected", "reason": "bad"}}), FailureKind.BAD_OUTPUT,
     "a list of live jobs that does not match the group"),
    (load_reply(live=[]), FailureKind.BAD_OUTPUT, "a list of live jobs that does not match the group"),  # neither
    (load_reply(failures={"7": {"kind": "rejected"}}), FailureKind.BAD_OUTPUT, "a failure for job '7', not in the "
                                                                               "group"),
])
def test_a_load_that_fails_is_blamed_on_the_programs(host, reply, kind, words):
    _, attempt = host.run([setup_reply(), reply])
    assert (attempt.group.kind, attempt.blame, attempt.results) == (kind, True, [])
    assert words in attempt.group.reason, attempt.group.reason
    assert set(attempt.seconds) == {"start_s", "setup_s"} and host.trainer.closed >= 1


def test_a_group_failure_keeps_the_trainers_detail(host):
    reply = {"ok": False, "kind": "non_finite", "reason": "NaN", "detail": "in slot 3\nat update 2"}
    _, attempt = host.run([setup_reply(), reply])
    assert (attempt.group.reason, attempt.group.detail) == ("NaN", "in slot 3\nat update 2")


def test_a_group_whose_every_program_failed_to_load_is_not_trained(host):
    failures = {str(i): {"kind": "rejected", "reason": f"bad program {i}"} for i in range(2)}
    _, attempt = host.run([setup_reply(), Later(2.0, load_reply(live=[], failures=failures))], n=2)
    assert attempt.group is None and [op for op, _ in host.trainer.sent()] == ["setup", "load"]
    assert [(r.failure.kind, r.failure.reason, r.env_steps, r.curve, r.wall_s) for r in attempt.results] == [
        (FailureKind.REJECTED, f"bad program {i}", 0, (), 2.0) for i in range(2)]
    assert host.trainer.closed >= 1 and set(attempt.seconds) == {"start_s", "setup_s", "load_s"}


def test_a_job_that_failed_to_load_keeps_its_failure_while_the_others_train(host):
    failures = {"0": {"kind": "rejected", "reason": "bad program 0"}}
    script = [setup_reply(), load_reply(live=[1], failures=failures), *training([1]), *outputs([1])]
    _, attempt = host.run(script, n=2)
    assert attempt.group is None and host.trainer.script == []
    failed, trained = attempt.results
    assert (failed.failure.kind, failed.env_steps, failed.curve, failed.policy_path) == (
        FailureKind.REJECTED, 0, (), None)
    assert trained.ok and trained.env_steps == 192 and len(trained.curve) == 2


def test_the_live_jobs_are_kept_in_the_groups_order(host):
    script = [setup_reply(), load_reply(live=[1, 0]), *training([0, 1]), *outputs([0, 1])]
    _, attempt = host.run(script, n=2)
    assert attempt.group is None and all(r.ok for r in attempt.results)


@pytest.mark.parametrize("frames, kind, words", [
    ([{"event": "update", "update": 2}], FailureKind.BAD_OUTPUT, "update must be an integer in [1, 1], got 2"),
    ([{"event": "update", "update": 1}, {"event": "update", "update": 1}], FailureKind.BAD_OUTPUT,
     "update must be an integer in [2, 2], got 1"),
    ([*[{"event": "update", "update": u} for u in (1, 2, 3)], {"event": "update", "update": 4}],
     FailureKind.BAD_OUTPUT, "update must be an integer in [4, 3], got 4"),
    ([checkpoint(1, 1)], FailureKind.BAD_OUTPUT, "job must be an integer in [0, 0], got 1"),
    ([checkpoint(1, -1)], FailureKind.BAD_OUTPUT, "job must be an integer in [0, 0], got -1"),
    ([checkpoint(2, 0)], FailureKind.BAD_OUTPUT, "env_steps must be an integer in [64, 64], got 128"),
    ([checkpoint(1, 0), checkpoint(1, 0), checkpoint(1, 0)], FailureKind.BAD_OUTPUT,
     "a checkpoint for job 0, which is not training or has all its checkpoints"),
    ([checkpoint(1, 0, score=float("inf"))], FailureKind.BAD_OUTPUT, "score=inf is not finite"),
    ([{"event": "error", "ok": False, "kind": "non_finite", "reason": "NaN in the shared step"}],
     FailureKind.NON_FINITE, "NaN in the shared step"),
    ([{"ok": False, "kind": "timeout", "reason": "its own update limit"}], FailureKind.TIMEOUT,
     "its own update limit"),
    ([{"event": "error", "reason": "out of memory"}], FailureKind.RUNTIME_ERROR, "out of memory"),
    ([{"event": "resized" + "x" * 60}], FailureKind.BAD_OUTPUT, "an unknown training frame 'resized"),
    ([CRASH], FailureKind.RUNTIME_ERROR, "trainer crashed (SIGSEGV)"),
    ([SILENT], FailureKind.TIMEOUT,
     "training update 1 (with its evaluation) exceeded the train.jax.update_timeout_s=3 (wall clock)"),
    ([{"event": "update", "update": 1}, SILENT], FailureKind.TIMEOUT, "training update 2 (with its evaluation)"),
])
def test_a_training_frame_that_is_wrong_fails_the_group_and_blames_the_programs(host, frames, kind, words):
    _, attempt = host.run([setup_reply(), load_reply(), *frames])
    assert (attempt.group.kind, attempt.blame, attempt.results) == (kind, True, [])
    assert words in attempt.group.reason, attempt.group.reason
    assert "outputs" not in [op for op, _ in host.trainer.sent()] and host.trainer.closed >= 1


def test_an_unknown_training_frames_name_is_cut_to_forty_characters(host):
    _, attempt = host.run([setup_reply(), load_reply(), {"event": "e" * 60}])
    assert attempt.group.reason == "an unknown training frame '" + "e" * 39 + "…'"


def test_a_checkpoint_of_a_job_that_failed_to_load_is_refused(host):
    failures = {"0": {"kind": "rejected", "reason": "bad program 0"}}
    _, attempt = host.run([setup_reply(), load_reply(live=[1], failures=failures), checkpoint(1, 0)], n=2)
    assert attempt.group.reason == "a checkpoint for job 0, which is not training or has all its checkpoints"


@pytest.mark.parametrize("trained, words", [
    ({"updates": 2}, "updates must be an integer in [3, 3], got 2"),
    ({"updates": 4}, "updates must be an integer in [3, 3], got 4"),
    ({"timing": {"train_s": "2"}}, "a timing"),
    ({"shipped": {"0": 1, "1": 1}}, "shipped checkpoints that do not match the jobs that trained"),
    ({"shipped": {}}, "shipped checkpoints that do not match the jobs that trained"),
    ({"shipped": [1]}, "shipped checkpoints that do not match the jobs that trained"),
    ({"shipped": {"0": 0}}, "job 0 shipped checkpoint 0; its rule picks 1"),
    ({"shipped": {"0": -2}}, "shipped must be an integer in [-1, 1048576], got -2"),
    ({"failures": {"0": {"kind": "non_finite", "reason": "NaN"}}},
     "shipped checkpoints that do not match the jobs that trained"),  # a failed job ships nothing
    ({"failures": {"1": {"kind": "non_finite"}}}, "a failure for job '1', not in the group"),
])
def test_a_trained_frame_must_match_what_the_host_saw(host, trained, words):
    frames = training([0])
    frames[-1] = {**frames[-1], **trained}
    _, attempt = host.run([setup_reply(), load_reply(), *frames])
    assert (attempt.group.kind, attempt.blame) == (FailureKind.BAD_OUTPUT, True)
    assert words in attempt.group.reason, attempt.group.reason


def test_a_job_that_failed_in_training_keeps_its_curve_and_failure_and_gets_no_outputs(host):
    failures = {"1": {"kind": "non_finite", "reason": "NaN in job 1"}}
    script = [setup_reply(), load_reply(2), *training([0, 1], failures), *outputs([0])]
    _, attempt = host.run(script, n=2)
    ok, failed = attempt.results
    assert attempt.group is None and ok.ok and ok.policy_path is not None and host.trainer.script == []
    assert (failed.failure.kind, failed.failure.reason, failed.policy_path) == (
        FailureKind.NON_FINITE, "NaN in job 1", None)
    assert [c.score for c in failed.curve] == [1.2, 1.3] and failed.env_steps == 192


def test_outputs_are_asked_only_of_jobs_that_trained_and_want_them(host):
    failures = {"1": {"kind": "non_finite", "reason": "NaN in job 1"}}
    group = host.jobs(2)
    group[0] = replace(group[0], save_policy=False)  # the one that trained wants nothing; the one that wants failed
    _, attempt = host.run([setup_reply(), load_reply(2), *training([0, 1], failures)], group=group)
    assert attempt.group is None and "outputs" not in [op for op, _ in host.trainer.sent()]
    assert "outputs_s" not in attempt.seconds and host.trainer.closed >= 1
    group = host.jobs(1, save_policy=False, collect_episodes=2)  # rollouts only: still asked
    _, attempt = host.run([setup_reply(), load_reply(1), *training([0]), SILENT], group=group)
    assert "outputs" in [op for op, _ in host.trainer.sent()]


@pytest.mark.parametrize("frames, kind, words", [
    ([{"ok": False, "kind": "runtime_error", "reason": "rollouts failed"}], FailureKind.RUNTIME_ERROR,
     "rollouts failed"),
    ([{"event": "policy", "job": 0}], FailureKind.RUNTIME_ERROR, "unknown error"),
    ([({"event": "output", "job": 1, "policy": 8, "arrays": []}, b"POLICY!!")], FailureKind.BAD_OUTPUT,
     "job must be an integer in [0, 0], got 1"),
    ([*outputs([0])[:1], *outputs([0])], FailureKind.BAD_OUTPUT,
     "outputs for job 0, which did not train or already has them"),
    ([({"event": "output", "job": 0, "policy": 0, "arrays": []}, b"")], FailureKind.BAD_OUTPUT,
     "a policy the job did not ask for"),
    ([SILENT], FailureKind.TIMEOUT, "policies and rollouts exceeded the outputs time limit (600 s)"),
])
def test_outputs_that_are_wrong_fail_the_group(host, frames, kind, words):
    _, attempt = host.run([setup_reply(), load_reply(), *training([0]), *frames])
    assert (attempt.group.kind, attempt.blame, attempt.results) == (kind, True, [])
    assert words in attempt.group.reason, attempt.group.reason


def test_a_jobs_rollouts_are_written_with_its_policy(host):
    rows = 2
    arrays = {"obs": np.arange(rows * 11, dtype="<f8").reshape(rows, 11), "actions": np.zeros((rows, 3)),
              "next_obs": np.ones((rows, 11)), "episode": np.zeros(rows, dtype="<i8"), "reward": np.full(rows, 0.5),
              "comp/a": np.full(rows, 0.25), "score": np.array([0.7]), "quantity": np.array([1.5]),
              "length": np.array([rows], dtype="<i8")}
    frame = {"event": "output", "job": 0, "policy": 8, "arrays": [[k, a.dtype.str, list(a.shape)]
                                                                   for k, a in arrays.items()]}
    data = b"POLICY!!" + b"".join(a.tobytes() for a in arrays.values())
    _, attempt = host.run([setup_reply(), load_reply(), *training([0]), (frame, data), {"event": "done"}],
                          collect_episodes=1)
    [result] = attempt.results
    assert attempt.group is None and Path(result.policy_path).read_bytes() == b"POLICY!!"
    with np.load(result.rollouts_path, allow_pickle=False) as saved:
        assert sorted(saved.files) == sorted(arrays)
        assert all(np.array_equal(saved[k], a) for k, a in arrays.items())


def test_outputs_for_a_job_that_failed_in_training_are_refused(host):
    failures = {"1": {"kind": "non_finite", "reason": "NaN in job 1"}}
    script = [setup_reply(), load_reply(2), *training([0, 1], failures), *outputs([0, 1])]
    _, attempt = host.run(script, n=2)
    assert attempt.group.reason == "outputs for job 1, which did not train or already has them"


def test_a_training_past_its_overall_limit_keeps_the_curve_so_far_and_times_out(host):
    """train.timeout_s=10 plus the 60 s grace: the host stops waiting at 70 s, not at the update limit after it."""
    frames = training([0])
    script = [setup_reply(), load_reply(), *frames[:2], Later(67.0, frames[2]), SILENT]  # one checkpoint in
    _, attempt = host.run(script, timeout_s=10.0)
    assert attempt.group is None and host.trainer.script == []
    [result] = attempt.results
    assert (result.failure.kind, result.failure.reason) == (FailureKind.TIMEOUT, "training exceeded train.timeout_s=10")
    assert [c.env_steps for c in result.curve] == [128] and result.env_steps == 128 and result.policy_path is None
    waits = [c[1] for c in host.trainer.calls if c[0] == "receive"]
    assert waits == [3.0, 3.0, 3.0, 3.0] and "outputs" not in [op for op, _ in host.trainer.sent()]
    assert host.clock.now == 1070.0 and host.trainer.closed >= 1 and "train_s" not in attempt.seconds


def test_the_overall_limit_cuts_the_wait_for_an_update_short(host):
    frames = training([0])
    script = [setup_reply(), load_reply(), frames[0], Later(68.5, frames[1]), SILENT]
    _, attempt = host.run(script, timeout_s=10.0)
    assert [c[1] for c in host.trainer.calls if c[0] == "receive"] == [3.0, 3.0, 1.5]
    assert attempt.results[0].failure.reason == "training exceeded train.timeout_s=10"
    assert attempt.results[0].env_steps == 64


def test_without_an_overall_limit_a_long_training_is_never_cut(host):
    frames = training([0])
    slow = [Later(100.0, f) for f in frames]  # each frame 100 s apart: the update limit is per frame
    _, attempt = host.run([setup_reply(), load_reply(), *slow, *outputs([0])], timeout_s=0.0)
    assert attempt.group is None and attempt.results[0].ok
    assert [c[1] for c in host.trainer.calls if c[0] == "receive"][:len(frames)] == [3.0] * len(frames)


def test_a_silent_trainer_before_the_overall_limit_is_the_update_limits_timeout(host):
    frames = training([0])
    _, attempt = host.run([setup_reply(), load_reply(), frames[0], Later(60.0, frames[1]), SILENT], timeout_s=10.0)
    assert (attempt.group.kind, attempt.blame) == (FailureKind.TIMEOUT, True)
    assert "train.jax.update_timeout_s=3" in attempt.group.reason and attempt.results == []


def test_a_failed_job_keeps_its_load_failure_when_the_overall_limit_passes(host, monkeypatch):
    monkeypatch.setattr(trainer_host, "TIMEOUT_GRACE_S", 0.0)
    failures = {"0": {"kind": "rejected", "reason": "bad program 0"}}
    _, attempt = host.run([setup_reply(), load_reply(live=[1], failures=failures), Later(1.0, SILENT)], n=2,
                          timeout_s=1.0)
    assert [(r.failure.kind, r.env_steps) for r in attempt.results] == [(FailureKind.REJECTED, 0),
                                                                        (FailureKind.TIMEOUT, 0)]


def test_a_host_failure_is_every_jobs_train_error_and_blames_no_program(host, monkeypatch):
    def refuse(*args: Any, **kwargs: Any):
        raise OSError("cannot fork " + "x" * 600)

    monkeypatch.setattr(trainer_host, "WorkerProcess", refuse)
    attempt = trainer_host.run_trainer(host.jobs(1), 1)
    assert (attempt.group.kind, attempt.blame, attempt.seconds, attempt.layers) == (
        FailureKind.TRAIN_ERROR, False, {}, [])
    assert attempt.group.reason == ("the trainer host failed: OSError: cannot fork " + "x" * 600)[:500]
    assert len(attempt.group.reason) == 500


def test_a_trainer_that_fails_to_start_is_a_train_error(host, monkeypatch):
    def start(*args: Any, **kwargs: Any):
        raise RewardProgramError(Failure(FailureKind.TIMEOUT, "trainer start-up exceeded the 120 s start-up limit"))

    monkeypatch.setattr(trainer_host, "WorkerProcess", start)
    attempt = trainer_host.run_trainer(host.jobs(1), 1)
    assert (attempt.group.kind, attempt.group.reason, attempt.blame, attempt.seconds) == (
        FailureKind.TRAIN_ERROR, "trainer start-up exceeded the 120 s start-up limit", False, {})


def test_a_host_failure_after_the_start_still_closes_the_trainer(host, monkeypatch):
    def broken(*args: Any, **kwargs: Any):
        raise OSError("disk full")

    monkeypatch.setattr(trainer_host, "write_result", broken)
    _, attempt = host.run(clean())
    assert (attempt.group.kind, attempt.group.reason) == (FailureKind.TRAIN_ERROR,
                                                          "the trainer host failed: OSError: disk full")
    assert host.trainer.closed >= 2  # after its outputs, and again on the way out


# -- the compile step --------------------------------------------------------------------------------------------
@pytest.fixture
def compile_step(monkeypatch, tmp_path, host):
    """BIRD_JAX_CACHE on, and subprocess.run recorded and answered by `compile_step.answer`."""
    monkeypatch.setenv("BIRD_JAX_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(trainer_host, "_COMPILED", {})
    state = SimpleNamespace(calls=[], answer=subprocess.CompletedProcess([], 0, b"EXECUTABLES", b""))

    def run(cmd: list[str], **kwargs: Any):
        state.calls.append((cmd, kwargs))
        if isinstance(state.answer, BaseException):
            raise state.answer
        return state.answer

    monkeypatch.setattr(trainer_host, "subprocess", SimpleNamespace(run=run, TimeoutExpired=subprocess.TimeoutExpired))
    return state


def test_the_compile_step_runs_the_trainers_compile_main_on_the_groups_jobs(host, compile_step):
    jobs = [replace(j, program=None) for j in host.jobs(2)]
    assert trainer_host.ensure_compiled(jobs, 2, 30.0) == b"EXECUTABLES"
    [(cmd, kwargs)] = compile_step.calls
    code = BOOT.replace("main(int(sys.argv[1]))", "compile_main(int(sys.argv[1]))")
    assert "compile_main(int(sys.argv[1]))" in code and code != BOOT
    assert cmd == [sys.executable, "-I", "-c", code, str(os.getpid()), json.dumps(worker_paths()),
                   trainer_wall.TRAINER_MODULE]
    _, env = trainer_host.trainer_isolation(jobs[0])
    assert kwargs == {"input": pickle.dumps((jobs, 2)), "capture_output": True, "timeout": 30.0,
                      "env": {"PATH": os.defpath, **env}}


def test_the_compile_steps_executables_are_kept_for_this_process_and_stored_for_others(host, compile_step):
    from bird.learners.jax_executables import StoredPrograms, store_dir

    jobs = [replace(j, program=None) for j in host.jobs(1)]
    assert trainer_host.ensure_compiled(jobs, 1, 30.0) == b"EXECUTABLES"
    key = trainer_host._compile_key(jobs, 1)
    assert {key: b"EXECUTABLES"} == trainer_host._COMPILED
    compile_step.answer = subprocess.CompletedProcess([], 0, b"OTHER", b"")
    assert trainer_host.ensure_compiled(jobs, 1, 30.0) == b"EXECUTABLES" and len(compile_step.calls) == 1
    trainer_host._COMPILED.clear()  # another process: read from the store, not compiled again
    assert trainer_host.ensure_compiled(jobs, 1, 30.0) == b"EXECUTABLES" and len(compile_step.calls) == 1
    assert {key: b"EXECUTABLES"} == trainer_host._COMPILED
    wall, env = trainer_host.trainer_isolation(jobs[0])
    assert StoredPrograms(store_dir(), {"PATH": os.defpath, **env}, wall.devices).get(key) == b"EXECUTABLES"
    assert trainer_host.ensure_compiled(jobs, 2, 30.0) == b"OTHER" and len(compile_step.calls) == 2  # another width


@pytest.mark.parametrize("answer, reason", [
    (subprocess.CompletedProcess([], 3, b"", b"compiling...\nValueError: no program\n"),
     "compiling the training program failed: ValueError: no program"),
    (subprocess.CompletedProcess([], 4, b"EXECUTABLES", b""), "compiling the training program failed: exit 4"),
    (subprocess.CompletedProcess([], 4, b"", b" \n\n "), "compiling the training program failed: exit 4"),
    (subprocess.CompletedProcess([], 1, b"", b"E: " + b"\xff" * 500),
     "compiling the training program failed: E: " + "\ufffd" * 397),
    (subprocess.TimeoutExpired(["python"], 2.5), "compiling the training program exceeded "
                                                 "train.jax.compile_timeout_s=2.5"),
])
def test_a_compile_step_that_fails_is_recorded_and_kept_nowhere(host, compile_step, answer, reason):
    from bird.learners.jax_executables import StoredPrograms, store_dir

    compile_step.answer = answer
    jobs = [replace(j, program=None) for j in host.jobs(1)]
    failure = trainer_host.ensure_compiled(jobs, 1, 2.5)
    kind = FailureKind.TIMEOUT if isinstance(answer, BaseException) else FailureKind.TRAIN_ERROR
    assert (failure.kind, failure.reason) == (kind, reason)
    assert trainer_host._COMPILED == {}
    wall, env = trainer_host.trainer_isolation(jobs[0])
    store = StoredPrograms(store_dir(), {"PATH": os.defpath, **env}, wall.devices)
    assert store.get(trainer_host._compile_key(jobs, 1)) is None


def test_a_group_whose_compile_step_failed_starts_no_trainer(host, compile_step):
    compile_step.answer = subprocess.CompletedProcess([], 3, b"", b"ValueError: no program")
    _, attempt = host.run(clean())
    assert (attempt.group.kind, attempt.blame, attempt.results) == (FailureKind.TRAIN_ERROR, False, [])
    assert host.made == 0
    [(cmd, kwargs)] = compile_step.calls
    sent_jobs, width = pickle.loads(kwargs["input"])  # noqa: S301 - written by the host in this test
    assert width == 1 and [j.program for j in sent_jobs] == [None]
    assert kwargs["timeout"] == host.jobs()[0].train.jax.compile_timeout_s


def test_a_group_trains_with_what_its_compile_step_made(host, compile_step):
    _, attempt = host.run(clean())
    assert attempt.group is None and pickle.loads(host.trainer.sent()[0][1])[1] == b"EXECUTABLES"  # noqa: S301


def test_by_default_the_trainer_gets_the_compile_steps_executables(host, compile_step, monkeypatch):
    monkeypatch.setattr(trainer_host, "WorkerProcess", host.worker(clean()))
    attempt = trainer_host.run_trainer(host.jobs(1), 1)
    assert attempt.group is None and pickle.loads(host.trainer.sent()[0][1])[1] == b"EXECUTABLES"  # noqa: S301


def test_a_program_compiled_for_one_accelerator_is_not_found_for_another(host, compile_step, monkeypatch):
    from bird.learners.jax_executables import StoredPrograms, store_dir

    real = trainer_host.trainer_isolation
    monkeypatch.setattr(trainer_host, "trainer_isolation",
                        lambda job: (replace(real(job)[0], devices=("/dev/nvidia0",)), real(job)[1]))
    jobs = [replace(j, program=None) for j in host.jobs(1)]
    assert trainer_host.ensure_compiled(jobs, 1, 30.0) == b"EXECUTABLES"
    key, env = trainer_host._compile_key(jobs, 1), {"PATH": os.defpath, **real(jobs[0])[1]}
    assert StoredPrograms(store_dir(), env, ("/dev/nvidia0",)).get(key) == b"EXECUTABLES"
    assert StoredPrograms(store_dir(), env, ()).get(key) is None


def test_without_the_cache_there_is_no_compile_step(host, compile_step, monkeypatch):
    monkeypatch.setenv("BIRD_JAX_CACHE", "off")
    trainer_host._COMPILED["anything"] = b"X"
    assert trainer_host.ensure_compiled([replace(j, program=None) for j in host.jobs(1)], 1, 30.0) is None
    assert compile_step.calls == []


def test_the_compile_key_is_the_program_not_the_trainers_limits(host):
    [job] = host.jobs(1)
    key = trainer_host._compile_key([job], 1)
    for limit in ({"trainer_memory_mb": 1}, {"compile_timeout_s": 2.0}, {"update_timeout_s": 5.0}):
        assert trainer_host._compile_key([replace(job, train=replace(job.train, jax=replace(job.train.jax, **limit)))],
                                         1) == key, limit
    assert trainer_host._compile_key([job, replace(job, env_steps=384)], 1) == key  # the group's first job decides
    changed = [replace(job, env_steps=384), replace(job, eval_episodes=job.eval_episodes + 1),
               replace(job, train=replace(job.train, normalize_reward=not job.train.normalize_reward)),
               replace(job, train=replace(job.train, jax=replace(job.train.jax, num_minibatches=7))),
               replace(job, env=replace(job.env, id="brax/ant"))]
    assert all(trainer_host._compile_key([j], 1) != key for j in changed)
    assert trainer_host._compile_key([job], 2) != key


def test_the_trainers_wall_has_the_jobs_memory_and_the_cache(host, monkeypatch, tmp_path):
    monkeypatch.setenv("BIRD_JAX_CACHE", str(tmp_path))
    [job] = host.jobs(1, train=replace(host.jobs(1)[0].train, jax=replace(host.jobs(1)[0].train.jax,
                                                                          trainer_memory_mb=1234)))
    cfg, env = trainer_host.trainer_isolation(job)
    assert cfg.cgroup_memory_mb == 1234 and env["BIRD_JAX_CACHE"] == str(tmp_path)
