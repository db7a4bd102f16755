"""train.learner=jax_ppo: all of an iteration's trainings (candidates × seeds) in one vmapped JAX program on Brax.

Jobs arrive with their reward programs already exported to StableHLO (bird/learners/programs.py); the learner
deserialises and checks them and never holds program source. It returns the SB3 learner's TrainResult per job:
the checkpoint curve (benchmark score, own and reference return, per-component means) and env steps."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bird.learners.checkpoints import CheckpointKeeper, needs_eval_own_return
from bird.learners.curves import write_curve
from bird.learners.job import EVAL_SEED_BASE, TrainJob
from bird.types import Checkpoint, Failure, FailureKind, TrainResult

__all__ = ["train_jax_ppo"]

Progress = Callable[[str, int, int, float | None], None]
_PROGRAMS: dict[tuple[str, int], Any] = {}  # PPOProgram per (task, backend, settings, horizon) and width K


def _group_key(job: TrainJob) -> str:
    """Jobs that can share one program: same task, backend, budget and evaluation."""
    return json.dumps([job.env.id, job.env.backend, job.env.horizon, job.env_steps, job.n_checkpoints,
                       job.eval_episodes, job.collect_episodes], default=str)


def _program(adapter: Any, settings: Any, k: int) -> tuple[Any, int]:
    """A compiled program for at least k trainings and its width: one already built for more slots is reused (the
    extra slots repeat a job and are ignored): padding costs compute, a compile costs minutes of wall time on a CPU."""
    from bird.learners.jax_core import PPOProgram

    shape = json.dumps([adapter.task, adapter.backend, {**settings.to_json(), "n_updates": None}, adapter.cfg.horizon],
                       default=str)
    widths = sorted(w for (s, w) in _PROGRAMS if s == shape and w >= k)
    if widths:
        return _PROGRAMS[(shape, widths[0])], widths[0]
    _PROGRAMS[(shape, k)] = PPOProgram(adapter.env, adapter.defn.score, settings, k, adapter.cfg.horizon)
    return _PROGRAMS[(shape, k)], k


def _load_programs(jobs: list[TrainJob]) -> tuple[list[Any], dict[int, Failure]]:
    """The deserialised program of each job (None = reference reward) and the jobs that cannot train."""
    from bird.reward.jax_export import ExportError, load

    slots: list[Any] = []
    failures: dict[int, Failure] = {}
    for i, job in enumerate(jobs):
        slots.append(None)
        if job.program is not None:
            try:
                slots[i] = load(job.program)
            except ExportError as exc:
                failures[i] = Failure(FailureKind(exc.kind), exc.reason[:500])
        elif job.code is not None:
            failures[i] = Failure(FailureKind.TRAIN_ERROR, "train.learner=jax_ppo trains exported programs only "
                                  "(reward.language=jax); this job carries Python source")
    return slots, failures


def _checkpoints(n_updates: int, n_checkpoints: int) -> list[int]:
    """Update counts after which the policy is evaluated (the last is the end of training)."""
    return sorted({max(1, -(-n_updates * k // n_checkpoints)) for k in range(1, n_checkpoints + 1)})


class _Run:
    """One group of jobs trained together; fills curves and failures checkpoint by checkpoint."""

    def __init__(self, jobs: list[TrainJob], progress: Progress | None) -> None:
        import jax

        from bird.envs.registry import make_adapter
        from bird.learners.jax_rewards import RewardStep
        from bird.learners.jax_settings import resolve_settings

        self.jobs, self.progress, self.start = jobs, progress, time.monotonic()
        self.adapter = make_adapter(jobs[0].env)
        if self.adapter.spec.suite != "brax":
            raise ValueError(f"train.learner=jax_ppo trains Brax tasks (env=brax/...), not {jobs[0].env.id}")
        first = jobs[0]
        self.settings = resolve_settings(first.train.jax, self.adapter.task, first.env_steps,
                                         first.train.normalize_reward)
        slots, self.failures = _load_programs(jobs)
        self.live = [i for i in range(len(jobs)) if i not in self.failures]
        self.curves: dict[int, list[Checkpoint]] = {i: [] for i in range(len(jobs))}
        self.keepers = {i: CheckpointKeeper(job.train) for i, job in enumerate(jobs)}  # train.checkpoint_selection
        self.shipped: dict[int, tuple[int, dict[str, Any]]] = {}
        self.label = any(needs_eval_own_return(job.train) for job in jobs)
        self.updates, self.slot_jobs = 0, []
        self.timing: dict[str, float] = {}
        if not self.live:
            return
        self.program, width = _program(self.adapter, self.settings, len(self.live))
        self.slot_jobs = self.live + [self.live[0]] * (width - len(self.live))  # job index of each training slot
        self.exported = [slots[i] for i in self.slot_jobs]
        self.rewards = RewardStep(self.exported)
        self.random_q, self.scale = self.adapter.score_normalisation()
        seeds = np.asarray([jobs[i].seed for i in self.slot_jobs])
        self.state = self.program.init(jax.vmap(jax.random.PRNGKey)(seeds))
        self.sums = self.rewards.init()
        eval_seeds = np.asarray([[EVAL_SEED_BASE + 1000 * jobs[i].seed + e for e in range(first.eval_episodes)]
                                 for i in self.slot_jobs])
        self.eval_keys = jax.vmap(jax.vmap(jax.random.PRNGKey))(eval_seeds)
        self.eval_key = jax.vmap(jax.random.PRNGKey)(seeds + 7)

    def _evaluate(self, update: int) -> None:
        q, length = (np.asarray(x, dtype=np.float64) for x in self.program.evaluate(
            self.state, self.eval_keys, self.eval_key))
        w = self.state.window
        own_sum, ref_sum, eps = (np.asarray(x, dtype=np.float64) for x in (w.own_sum, w.ref_sum, w.episodes))
        sums, steps, finite = np.asarray(self.sums.sums), float(self.sums.steps), np.asarray(self.sums.finite)
        steps_done = update * self.settings.steps_per_update
        eval_own = np.full(len(self.slot_jobs), np.nan)
        if self.label:  # the candidate's own return on the same greedy episodes
            from bird.learners.jax_rollouts import eval_own_returns

            eval_own = eval_own_returns(self.program, self.state, self.eval_keys, self.rewards, self.sums)
        for slot, i in enumerate(self.live):
            if i in self.failures:
                continue
            if not finite[slot]:
                self.failures[i] = Failure(FailureKind.NON_FINITE, "reward or a component was non-finite during "
                                           f"training (seen at the checkpoint after {steps_done:,} steps)")
                continue
            names = self.jobs[i].program.components if self.jobs[i].program is not None else ()
            with np.errstate(invalid="ignore", divide="ignore"):
                own, ref = own_sum[slot] / eps[slot], ref_sum[slot] / eps[slot]
            self.curves[i].append(Checkpoint(
                steps_done, float(np.mean((q[slot] - self.random_q) / self.scale)), float(q[slot].mean()),
                float(own), float(ref), float(length[slot].mean()),
                {n: float(sums[slot, c] / max(steps, 1.0)) for c, n in enumerate(names)}, float(eval_own[slot])))
            self.keepers[i].offer(self.curves[i][-1], lambda s=slot: self._policy(s))
            if self.progress:
                self.progress(self.jobs[i].candidate_id, steps_done, self.jobs[i].env_steps, self.curves[i][-1].score)
        self.state, self.sums = self.program.reset_window(self.state), self.rewards.reset(self.sums)

    def train(self) -> None:
        import jax

        timeout = self.jobs[0].train.timeout_s
        marks = set(_checkpoints(self.settings.n_updates, self.jobs[0].n_checkpoints))
        start = time.monotonic()
        for update in range(1, self.settings.n_updates + 1):
            self.updates = update
            self.state, roll = self.program.collect(self.state)
            reward, self.sums = self.rewards(roll, self.sums)
            self.state = self.program.update(self.state, roll, reward)
            if update == 1:  # the first update compiles (or loads from the persistent cache)
                jax.block_until_ready(self.state.key)
                self.timing["first_update_s"] = round(time.monotonic() - start, 2)
                steady = time.monotonic()
            if update in marks:
                self._evaluate(update)
            if timeout and time.monotonic() - self.start > timeout:
                for i in self.live:
                    self.failures.setdefault(i, Failure(FailureKind.TIMEOUT,
                                                        f"training exceeded train.timeout_s={timeout:g}"))
                return
        jax.block_until_ready(self.state.key)
        if self.settings.n_updates > 1:  # env steps per second of all slots after the first update, evaluation included
            rate = (self.settings.n_updates - 1) * self.settings.steps_per_update * len(self.slot_jobs)
            self.timing["steady_env_steps_per_s"] = round(rate / max(time.monotonic() - steady, 1e-9), 1)

    def _policy(self, slot: int) -> Any:
        """A host copy of one slot's greedy policy: (observation normaliser, policy network parameters)."""
        import jax

        return jax.device_get(jax.tree.map(lambda x: x[slot], (self.state.normalizer, self.state.params.policy)))

    def _restore(self, slot: int, policy: Any) -> None:
        import jax

        normalizer, params = jax.tree.map(lambda x, y: x.at[slot].set(y),
                                          (self.state.normalizer, self.state.params.policy), policy)
        self.state = self.state.replace(normalizer=normalizer, params=self.state.params.replace(policy=params))

    def _ship(self) -> None:
        """Put each trained job's chosen checkpoint back into its slot (train.checkpoint_selection)."""
        for slot, i in enumerate(self.live):
            if i not in self.failures:
                self.shipped[i] = self.keepers[i].ship(self.jobs[i].out_dir, lambda p, s=slot: self._restore(s, p))

    def _outputs(self) -> tuple[dict[int, str], dict[int, str]]:
        """rollouts.npz (train.collect_episodes) and policy.msgpack (run.save_policies) of the jobs that trained."""
        import flax.serialization
        import jax

        ok = [i for i in self.live if i not in self.failures]
        rollouts: dict[int, str] = {}
        if ok and self.jobs[0].collect_episodes:
            from bird.learners.jax_rollouts import collect_rollouts_jax

            rollouts = collect_rollouts_jax(self.program, self.state, self.slot_jobs, len(self.live), self.jobs,
                                            self.exported, self.random_q, self.scale)
            rollouts = {i: p for i, p in rollouts.items() if i in ok}
        policies = {}
        for slot, i in enumerate(self.live):
            if i in ok and self.jobs[i].save_policy:
                params = jax.tree.map(lambda x, s=slot: x[s], (self.state.normalizer, self.state.params.policy))
                policies[i] = str(Path(self.jobs[i].out_dir) / "policy.msgpack")
                Path(policies[i]).write_bytes(flax.serialization.to_bytes(params))
        return rollouts, policies

    def results(self) -> list[TrainResult]:
        for job in self.jobs:
            Path(job.out_dir).mkdir(parents=True, exist_ok=True)
        if self.live:
            self._ship()
        rollouts, policies = self._outputs() if self.live else ({}, {})
        wall = time.monotonic() - self.start
        out = []
        for i, job in enumerate(self.jobs):
            curve = self.curves[i]
            write_curve(Path(job.out_dir) / "curve.csv", curve)
            (Path(job.out_dir) / "jax_ppo.json").write_text(json.dumps(
                {"settings": self.settings.to_json(), "batch_size_k": len(self.live), "timing": self.timing,
                 "slots": len(self.slot_jobs), "program": job.program.digest if job.program is not None else None},
                indent=1) + "\n")
            steps = self.updates * self.settings.steps_per_update if i in self.live else 0
            shipped, choice = self.shipped.get(i, (-1, {}))
            out.append(TrainResult(job.candidate_id, job.seed, tuple(curve), steps, wall, self.failures.get(i),
                                   policies.get(i), rollouts.get(i), shipped, choice))
        return out


def train_jax_ppo(jobs: list[TrainJob], progress: Progress | None = None) -> list[TrainResult]:
    """Train every job; jobs that share a task and budget are trained together in one program."""
    from bird.jax_cache import enable_compilation_cache

    enable_compilation_cache()
    groups: dict[str, list[int]] = {}
    for i, job in enumerate(jobs):
        groups.setdefault(_group_key(job), []).append(i)
    results: list[TrainResult | None] = [None] * len(jobs)
    for idx in groups.values():
        group = [jobs[i] for i in idx]
        try:
            run = _Run(group, progress)
            if run.live:
                run.train()
            done = run.results()
        except Exception as exc:  # noqa: BLE001 - a learner crash is recorded for each job, the search goes on
            failure = Failure(FailureKind.TRAIN_ERROR, f"{type(exc).__name__}: {exc}"[:500])
            done = [TrainResult(j.candidate_id, j.seed, (), 0, 0.0, failure) for j in group]
        for i, res in zip(idx, done, strict=True):
            results[i] = res
    return [r for r in results if r is not None]
