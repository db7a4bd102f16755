"""Render every prompt kind a method sends, without training: the real setup (demos, goal identification,
decomposition, judge), generate, verify and feedback stages (judge scores, summaries, thought alignment), the subtask
list's co-evolution with the offline generator, a recorder in front of the
generator and the judge, and a stand-in for training (a uniform-random policy's rollouts labelled by the candidate's
reward, and a curve whose reference return is a sentinel that must never reach a prompt)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from bird.llm.base import Generator, Request, Response

REFERENCE_SENTINEL = 777.77  # the stand-in curve's reference-reward return: it must never appear in a prompt


class Recording(Generator):
    """Passes requests to `inner` and keeps (request, response text)."""

    def __init__(self, inner: Generator, log: list[tuple[Request, str]]) -> None:
        super().__init__(inner.model, 1)
        self.inner, self.log = inner, log
        self.provider, self.label = inner.provider, inner.label

    def complete(self, request: Request) -> Response:
        response = self.inner.complete(request)
        self.log.append((request, response.text))
        return response

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()


@dataclass
class Rehearsal:
    """What a method showed its generator and judge on one task."""

    calls: list[tuple[Request, str]] = field(default_factory=list)  # (request, answer) in order
    feedback: list[str] = field(default_factory=list)  # every feedback text rendered (trained and screened formats)
    authored: list[str] = field(default_factory=list)  # generator-authored text (answers, programs)
    spec: Any = None  # the task's TaskSpec

    def purposes(self) -> set[str]:
        return {r.purpose for r, _ in self.calls}


REHEARSAL_HORIZON = 50  # the leak audit's episodes (tests/test_leak_audit.py); the brax_envs job records them


@cache
def random_experience(env_id: str, horizon: int, episodes: int = 2) -> dict[str, np.ndarray]:
    """`episodes` uniform-random episodes of `env_id` (record_random_experience), made once per task per session: a
    file every xdist worker reads. A Brax task's come from the background job "brax_envs" (tracing Brax's step takes
    seconds per task)."""
    import background

    if env_id.startswith("brax/") and horizon == REHEARSAL_HORIZON:
        background.result("brax_envs")
    path = random_experience_path(env_id, horizon, episodes)
    if not path.exists():
        save_random_experience(env_id, horizon, episodes)
    with np.load(path) as saved:
        return dict(saved)


def random_experience_path(env_id: str, horizon: int, episodes: int) -> Path:
    import session_share

    return session_share.folder() / "random_experience" / f"{session_share.key(env_id, str(horizon), str(episodes))}.npz"


def save_random_experience(env_id: str, horizon: int, episodes: int = 2) -> None:
    """record_random_experience to its session file (written whole, then renamed into place)."""
    import os

    path = random_experience_path(env_id, horizon, episodes)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez(tmp, **record_random_experience(env_id, horizon, episodes))
    os.replace(tmp, path)


def record_random_experience(env_id: str, horizon: int, episodes: int = 2) -> dict[str, np.ndarray]:
    """`episodes` uniform-random episodes of `env_id` from one env (reset seeds 0, 1, ...), flattened episode-major
    as rollouts.npz holds them (no reward yet), plus `dones`. Shared by every method."""
    from bird.envs.demos import env_config, record_episode
    from bird.envs.registry import make_adapter

    cfg = env_config(env_id)
    cfg.horizon = min(cfg.horizon, horizon)
    env = make_adapter(cfg).make_env()
    eps = [record_episode(env, None, seed) for seed in range(episodes)]
    env.close()
    lengths = np.array([len(e["obs"]) for e in eps])
    out = {k: np.concatenate([np.asarray(e[src], dtype=np.float64) for e in eps])
           for k, src in (("obs", "obs"), ("actions", "action"), ("next_obs", "next_obs"))}
    out["episode"] = np.repeat(np.arange(episodes), lengths)
    out["dones"] = (np.arange(len(out["episode"])) + 1 == np.cumsum(lengths).repeat(lengths)).astype(np.float64)
    out["length"] = lengths
    out["score"] = np.array([1.0 if k % 2 == 0 else 0.0 for k in range(episodes)])  # both classes for a TPE store
    out["quantity"] = np.zeros(episodes)
    return out


def _stand_in_training(cfg: Any, state: Any, cands: list, workdir: Path, data: dict) -> dict[str, Any]:
    """A TrainResult per live candidate: two checkpoints and the random episodes labelled by its reward."""
    from bird.learners.rollouts import save_rollouts
    from bird.reward.sandbox import SandboxedReward
    from bird.types import Checkpoint, TrainResult

    out = {}
    for cand in [c for c in cands if c.alive]:
        rollouts = {k: v for k, v in data.items() if k != "dones"}
        with SandboxedReward(cand.code, state.spec.obs_index, 30.0, cfg.verify.memory_mb,
                             contract=cfg.reward.contract) as program:
            reward, comps = program(data["obs"], data["actions"], data["next_obs"], dones=data["dones"], reset=True)
        rollouts["reward"] = reward
        rollouts.update({f"comp/{k}": v for k, v in comps.items()})
        path = workdir / f"{cand.id}.npz"
        save_rollouts(path, rollouts)
        means = {k: float(np.mean(v)) for k, v in comps.items()}
        curve = tuple(Checkpoint(s, 0.25 * i, 0.5, 12.5 + i, REFERENCE_SENTINEL, 50.0, means)
                      for i, s in enumerate((256, 512), start=1))
        out[cand.id] = TrainResult(cand.id, state.seed, curve, 512, 0.1, rollouts_path=str(path))
    return out


def rehearse(cfg: Any, workdir: Path) -> Rehearsal:
    """Run the method's prompts for `cfg.loop.iterations` (capped by the budget) without training a policy; the last
    iteration is generated and verified only (no later prompt would show its feedback)."""
    from bird.components.trajectories import add_rollouts
    from bird.envs.registry import make_adapter
    from bird.learners.job import learner_trains
    from bird.llm.factory import make_generator
    from bird.loop import _setup, make_plan
    from bird.registry import get
    from bird.rundir import RunDir
    from bird.stages.feedback import feedback
    from bird.stages.generate import generate
    from bird.stages.select import select
    from bird.stages.train import train
    from bird.stages.verify import verify
    from bird.state import SearchState

    adapter = make_adapter(cfg.env)
    out = Rehearsal(spec=adapter.spec)
    generator = make_generator(cfg.llm, cfg.budget, None)
    generator.inner = Recording(generator.inner, out.calls)
    data = random_experience(cfg.env.id, cfg.env.horizon)
    smoke = {k: data[k][: cfg.verify.smoke_steps] for k in ("obs", "actions", "next_obs", "dones")}
    state = SearchState(adapter.spec, make_plan(cfg), cfg.seed, smoke)
    _setup(cfg, state, generator, RunDir(workdir))
    if state.judge is not None:
        state.judge.inner = Recording(state.judge.inner, out.calls)
    for it in range(1, state.plan.iterations + 1):
        state.iteration = it
        cands = generate(cfg, state, generator)
        state.candidates.update({c.id: c for c in cands})
        verify(cfg, state, cands)
        if cfg.feedback.screened_format:  # the screened format on every screen verdict, passed or not
            fmt = get("feedback_format", cfg.feedback.screened_format)
            out.feedback += [fmt(cfg, state, c, None)[0] for c in cands if c.id in state.screens]
        if it == state.plan.iterations:  # no later prompt shows the last iteration's feedback
            break
        if learner_trains(cfg.train.learner):
            results = _stand_in_training(cfg, state, cands, workdir, data)
            for cid, res in results.items():
                add_rollouts(state, cid, res.rollouts_path, cfg.verify.tpe_success_score)
        else:
            results = train(cfg, state, cands, None, lambda cid: workdir / cid)
        state.results.update(results)
        reports = feedback(cfg, state, cands, results)
        state.reports.update(reports)
        out.feedback += [r.feedback for r in reports.values()]
        select(cfg, state, cands, reports)
        if cfg.decompose.co_evolve:  # the subtask list's revision from the feedback just shown
            from bird.components.subtasks import co_evolve_subtasks

            co_evolve_subtasks(cfg, state, generator, workdir)
    out.authored = [text for _, text in out.calls] + [c.code or "" for c in state.candidates.values()]
    if state.decomposition and state.decomposition.get("graph"):
        from bird.components.decompose import render_graph

        out.authored.append(render_graph(state.decomposition["graph"]))
    return out
