"""train.learner=jax_ppo: all of an iteration's trainings (candidates × seeds) in one vmapped JAX program on Brax.

`GroupTraining` is one group's training in the phases the isolated trainer runs them (bird/learners/trainer.py):
construction (trusted input only: the task, the settings and the compiled training program), `load` (the exported
reward programs, checked and compiled one by one, so a program that does not compile fails alone), `train`
(checkpoint curves: benchmark score, own and reference return, per-component means) and `outputs` (policies,
rollouts). The learner never holds program source. `train_jax_ppo` runs the phases in this process, with no wall:
for tests and benchmarks of the numerics; the registered learner runs them in the isolated trainer
(bird/learners/trainer_host.py).
"""

from __future__ import annotations

import json
import logging
import pickle
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from bird.learners.checkpoints import CheckpointKeeper, needs_eval_own_return
from bird.learners.jax_executables import Executables, load_all, store_dir
from bird.learners.job import EVAL_SEED_BASE, TrainJob
from bird.types import Checkpoint, Failure, FailureKind, TrainResult

__all__ = ["GroupTraining", "GroupError", "group_key", "train_jax_ppo"]

log = logging.getLogger(__name__)
Progress = Callable[[str, int, int, float | None], None]
_COMPILED: dict[str, tuple[Any, dict[str, float]]] = {}  # compiled PPOProgram and its compile time, per shape


class GroupError(RuntimeError):
    """The group's shared step failed after its programs were loaded: the culprit is not known here."""


def group_key(job: TrainJob) -> str:
    """Jobs that can share one program: same task, backend, budget and evaluation."""
    return json.dumps([job.env.id, job.env.backend, job.env.horizon, job.env_steps, job.n_checkpoints,
                       job.eval_episodes, job.collect_episodes], default=str)


def _checkpoints(n_updates: int, n_checkpoints: int) -> list[int]:
    """Update counts after which the policy is evaluated (the last is the end of training)."""
    return sorted({max(1, -(-n_updates * k // n_checkpoints)) for k in range(1, n_checkpoints + 1)})


def _compile(program: Any, width: int, eval_episodes: int, keep: Executables | None = None) -> dict[str, float]:
    """Compile the program's functions for `width` slots now (ahead of time, from shapes only) and use the compiled
    executables from here on; returns the seconds taken. Trusted code and input only: no reward program yet.
    `keep` compiles them through its store (bird/learners/jax_executables.py)."""
    import jax
    import jax.numpy as jnp

    def compiled(name: str, lowered: Any) -> Any:
        return keep.compile(name, lowered) if keep is not None else lowered.compile()

    start = time.monotonic()
    keys = jax.ShapeDtypeStruct((width, 2), jnp.uint32)
    lowered = program.init.lower(keys)  # each function is traced once: its lowering gives the next one's shapes
    state, program.init = lowered.out_info, compiled("init", lowered)
    lowered = program.collect.lower(state)
    roll, program.collect = lowered.out_info[1], compiled("collect", lowered)
    reward = jax.ShapeDtypeStruct(roll.ref_reward.shape, jnp.float32)
    eval_keys = jax.ShapeDtypeStruct((width, eval_episodes, 2), jnp.uint32)
    program.update = compiled("update", program.update.lower(state, roll, reward))
    program.evaluate = compiled("evaluate", program.evaluate.lower(state, eval_keys, keys))
    program.reset_window = compiled("reset_window", program.reset_window.lower(state))
    program.shapes = (state, roll)
    return {"compile_s": round(time.monotonic() - start, 2)}


def _load(program: Any, data: bytes) -> dict[str, float]:
    """Use the executables of `GroupTraining.serialized_program` in place of tracing and compiling them again;
    returns the seconds taken."""
    start = time.monotonic()
    saved = pickle.loads(data)  # noqa: S301 - from the host's compile step (trusted code and input), never a program
    for name, fn in load_all(saved["functions"]).items():
        setattr(program, name, fn)
    program.shapes = saved["shapes"]
    return {"compile_s": 0.0, "load_executables_s": round(time.monotonic() - start, 2)}


class GroupTraining:
    """One group of jobs trained together; see the module docstring for the phases.

    :param jobs: the group (same `group_key`); their programs, if any, arrive in `load`.
    :param width: training slots of the compiled program (>= len(jobs)); extra slots repeat a job and are ignored.
        A group retrained without a culprit keeps its width: the same compiled program, the same numbers.
    :param executables: `serialized_program` bytes of this group's program from the host's compile step, loaded
        in place of tracing and compiling it (seconds to minutes); without them the program is compiled here.
    :param keep: the host's compile step: compile through its store and keep the serialized executables.
    """

    def __init__(self, jobs: list[TrainJob], width: int, executables: bytes | None = None,
                 keep: Executables | None = None) -> None:
        from bird.envs.registry import make_adapter
        from bird.learners.jax_core import PPOProgram
        from bird.learners.jax_settings import resolve_settings

        self.jobs, self.width, self.start = list(jobs), max(width, len(jobs)), time.monotonic()
        self.adapter = make_adapter(jobs[0].env)
        if self.adapter.spec.suite != "brax":
            raise ValueError(f"train.learner=jax_ppo trains Brax tasks (env=brax/...), not {jobs[0].env.id}")
        first = jobs[0]
        self.settings = resolve_settings(first.train.jax, self.adapter.task, first.env_steps,
                                         first.train.normalize_reward)
        key = json.dumps([self.adapter.task, self.adapter.backend, {**self.settings.to_json(), "n_updates": None},
                          self.adapter.cfg.horizon, self.width, first.eval_episodes], default=str)
        if key not in _COMPILED:  # a process that trains several groups (the tests) compiles each shape once
            program = PPOProgram(self.adapter.env, self.adapter.defn.score, self.settings, self.width,
                                 self.adapter.cfg.horizon)
            _COMPILED[key] = (program, self._build(program, executables, keep))
        self.program, timing = _COMPILED[key]
        self.timing: dict[str, float] = dict(timing)
        self.random_q, self.scale = self.adapter.score_normalisation()
        self.failures: dict[int, Failure] = {}
        self.curves: dict[int, list[Checkpoint]] = {i: [] for i in range(len(jobs))}
        self.keepers = {i: CheckpointKeeper(job.train) for i, job in enumerate(jobs)}  # train.checkpoint_selection
        self.label = any(needs_eval_own_return(job.train) for job in jobs)
        self.live: list[int] = []
        self.updates = 0

    def _build(self, program: Any, executables: bytes | None, keep: Executables | None) -> dict[str, float]:
        if executables:
            try:
                return _load(program, executables)
            except Exception as exc:  # noqa: BLE001 - e.g. another device or jaxlib than the compile step's
                log.warning("the compile step's executables do not load here (%s: %s); compiling them again",
                            type(exc).__name__, str(exc)[:200])
        return _compile(program, self.width, self.jobs[0].eval_episodes, keep or Executables(store_dir(), write=False))

    def serialized_program(self, keep: Executables) -> bytes:
        """The executables `keep` compiled for this group, as `executables` for a GroupTraining of its shape."""
        return pickle.dumps({"functions": keep.serialized, "shapes": self.program.shapes})

    @property
    def rows(self) -> int:
        """Rows of one slot's rollout: what every reward artefact of this group must be exported for."""
        return self.settings.decisions_per_update * self.settings.num_envs

    # -- load -------------------------------------------------------------------------------------------------
    def load(self, programs: list[Any]) -> dict[int, Failure]:
        """Check, deserialise and compile each job's ExportedReward (None = the reference reward) for this
        group's rollout; a program that fails any of it fails alone. Raises GroupError when the programs compile
        one by one but not together. Returns the failures."""
        import jax

        from bird.learners.jax_rewards import RewardStep
        from bird.reward.jax_export import ExportError, load

        loaded: dict[int, Any] = {}
        for i, (job, prog) in enumerate(zip(self.jobs, programs, strict=True)):
            if prog is None and job.code is not None:
                self.failures[i] = Failure(FailureKind.TRAIN_ERROR, "train.learner=jax_ppo trains exported programs "
                                           "only (reward.language=jax); this job carries Python source")
            elif prog is not None and prog.rows != self.rows:
                self.failures[i] = Failure(FailureKind.BAD_OUTPUT, f"exported for {prog.rows:,} rows; this "
                                           f"training's rollout has {self.rows:,} per slot")
            elif prog is not None:
                try:
                    loaded[i] = load(prog)
                    self.jobs[i] = replace(job, program=prog)
                except ExportError as exc:
                    self.failures[i] = Failure(FailureKind(exc.kind), exc.reason[:500])
        _, roll = self.program.shapes
        one = jax.tree.map(lambda x: jax.ShapeDtypeStruct((1, *x.shape[1:]), x.dtype), roll)
        for i, exp in loaded.items():  # one by one first: a program that does not compile is that job's failure
            step = RewardStep([exp])
            try:
                step.compile(one, jax.eval_shape(step.init))
            except Exception as exc:  # noqa: BLE001 - XLA's errors for an untrusted program are its failure
                self.failures[i] = Failure(FailureKind.RUNTIME_ERROR, f"the exported program does not compile for "
                                           f"this training: {type(exc).__name__}: {str(exc)[:300]}")
        self.live = [i for i in range(len(self.jobs)) if i not in self.failures]
        if not self.live:
            return self.failures
        self.slot_jobs = self.live + [self.live[0]] * (self.width - len(self.live))  # job index of each slot
        self.exported = [loaded.get(i) for i in self.slot_jobs]
        self.rewards = RewardStep(self.exported)
        try:
            self.rewards.compile(roll, jax.eval_shape(self.rewards.init))
        except Exception as exc:  # noqa: BLE001 - every program compiled alone: the culprit is not known here
            raise GroupError(f"the group's reward step does not compile: {type(exc).__name__}: {str(exc)[:300]}") \
                from None
        self._init_state()
        return self.failures

    def _init_state(self) -> None:
        import jax

        jobs, first = self.jobs, self.jobs[0]
        seeds = np.asarray([jobs[i].seed for i in self.slot_jobs])
        self.state = self.program.init(jax.vmap(jax.random.PRNGKey)(seeds))
        self.sums = self.rewards.init()
        eval_seeds = np.asarray([[EVAL_SEED_BASE + 1000 * jobs[i].seed + e for e in range(first.eval_episodes)]
                                 for i in self.slot_jobs])
        self.eval_keys = jax.vmap(jax.vmap(jax.random.PRNGKey))(eval_seeds)
        self.eval_key = jax.vmap(jax.random.PRNGKey)(seeds + 7)

    # -- train ------------------------------------------------------------------------------------------------
    def _evaluate(self, update: int, on_checkpoint: Callable[[int, Checkpoint], None]) -> None:
        q, length = (np.asarray(x, dtype=np.float64) for x in self.program.evaluate(
            self.state, self.eval_keys, self.eval_key))
        w = self.state.window
        own_sum, ref_sum, eps = (np.asarray(x, dtype=np.float64) for x in (w.own_sum, w.ref_sum, w.episodes))
        sums, steps, finite = np.asarray(self.sums.sums), float(self.sums.steps), np.asarray(self.sums.finite)
        steps_done = update * self.settings.steps_per_update
        eval_own = np.full(len(self.slot_jobs), np.nan)
        if self.label:  # the candidate's own return on the same greedy episodes
            from bird.learners.jax_rollouts import eval_own_returns

            eval_own = eval_own_returns(self.program, self.state, self.eval_keys, self.exported, self.rows)
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
            self.keepers[i].offer(self.curves[i][-1], lambda s=slot: self._params(s))
            on_checkpoint(i, self.curves[i][-1])
        self.state, self.sums = self.program.reset_window(self.state), self.rewards.reset(self.sums)

    def train(self, on_update: Callable[[int], None] = lambda u: None,
              on_checkpoint: Callable[[int, Checkpoint], None] = lambda i, c: None) -> None:
        """Every update; `on_update(u)` after each (and its evaluation), `on_checkpoint(job, checkpoint)` at each
        checkpoint. Exceptions of the shared step are GroupError."""
        import jax

        if not self.live:
            return
        timeout = self.jobs[0].train.timeout_s
        marks = set(_checkpoints(self.settings.n_updates, self.jobs[0].n_checkpoints))
        start = steady = time.monotonic()
        for update in range(1, self.settings.n_updates + 1):
            self.updates = update
            try:
                self.state, roll = self.program.collect(self.state)
                reward, self.sums = self.rewards(roll, self.sums)
                self.state = self.program.update(self.state, roll, reward)
                if update == 1:
                    jax.block_until_ready(self.state.key)
                    self.timing["first_update_s"] = round(time.monotonic() - start, 2)
                    steady = time.monotonic()
                if update in marks:
                    self._evaluate(update, on_checkpoint)
            except Exception as exc:  # noqa: BLE001 - which program made the shared step fail is not known here
                raise GroupError(f"training update {update} failed: {type(exc).__name__}: {str(exc)[:300]}") \
                    from None
            on_update(update)
            if timeout and time.monotonic() - self.start > timeout:
                for i in self.live:
                    self.failures.setdefault(i, Failure(FailureKind.TIMEOUT,
                                                        f"training exceeded train.timeout_s={timeout:g}"))
                return
        jax.block_until_ready(self.state.key)
        self.timing["train_s"] = round(time.monotonic() - start, 2)
        if self.settings.n_updates > 1:  # env steps per second of all slots after the first update, evaluation included
            rate = (self.settings.n_updates - 1) * self.settings.steps_per_update * len(self.slot_jobs)
            self.timing["steady_env_steps_per_s"] = round(rate / max(time.monotonic() - steady, 1e-9), 1)

    # -- outputs ----------------------------------------------------------------------------------------------
    def trained(self) -> list[int]:
        return [i for i in self.live if i not in self.failures]

    def _params(self, slot: int) -> Any:
        """A host copy of one slot's greedy policy: (observation normaliser, policy network parameters)."""
        import jax

        return jax.device_get(jax.tree.map(lambda x: x[slot], (self.state.normalizer, self.state.params.policy)))

    def _restore(self, slot: int, params: Any) -> None:
        import jax

        normalizer, policy = jax.tree.map(lambda x, y: x.at[slot].set(y),
                                          (self.state.normalizer, self.state.params.policy), params)
        self.state = self.state.replace(normalizer=normalizer, params=self.state.params.replace(policy=policy))

    def ship(self) -> dict[int, int]:
        """Put each trained job's chosen checkpoint back into its slot (train.checkpoint_selection), before its
        policy and rollouts are taken; {job: index of the shipped checkpoint}. The record (checkpoint.json) is the
        host's to write: it recomputes the choice from the curve it validated (bird/learners/jax_outputs.py)."""
        shipped = {}
        for slot, i in enumerate(self.live):
            if i not in self.failures:
                index, params, _ = self.keepers[i].choose()
                if params is not None:
                    self._restore(slot, params)
                shipped[i] = index
        return shipped

    def policy(self, i: int) -> bytes:
        """The shipped parameters (observation normaliser, policy network) of job i, flax msgpack bytes."""
        import flax.serialization

        return flax.serialization.to_bytes(self._params(self.live.index(i)))

    def rollouts(self) -> dict[int, dict[str, np.ndarray]]:
        """rollouts.npz arrays of the jobs that trained (train.collect_episodes)."""
        from bird.learners.jax_rollouts import record_rollouts_jax

        ok = self.trained()
        if not ok or not self.jobs[0].collect_episodes:
            return {}
        out = record_rollouts_jax(self.program, self.state, self.slot_jobs, len(self.live), self.jobs,
                                  self.exported, self.random_q, self.scale)
        return {i: d for i, d in out.items() if i in ok}

    def summary(self) -> dict[str, Any]:
        """What jax_ppo.json records besides the program digest (bird/learners/jax_outputs.py)."""
        return {"settings": self.settings.to_json(), "batch_size_k": len(self.live), "timing": self.timing,
                "slots": self.width}


def train_jax_ppo(jobs: list[TrainJob], progress: Progress | None = None) -> list[TrainResult]:
    """Train every job in this process (no wall: tests and benchmarks); jobs that share a task and budget are
    trained together in one program."""
    from bird.jax_cache import enable_compilation_cache
    from bird.learners.jax_outputs import write_result

    enable_compilation_cache()
    groups: dict[str, list[int]] = {}
    for i, job in enumerate(jobs):
        groups.setdefault(group_key(job), []).append(i)
    results: list[TrainResult | None] = [None] * len(jobs)
    for idx in groups.values():
        group = [jobs[i] for i in idx]
        try:
            run = GroupTraining([replace(j, program=None) for j in group], len(group))
            run.load([j.program for j in group])

            def checkpoint(i: int, c: Checkpoint, run: GroupTraining = run) -> None:
                if progress:
                    progress(run.jobs[i].candidate_id, c.env_steps, run.jobs[i].env_steps, c.score)

            run.train(on_checkpoint=checkpoint)
            run.ship()  # the same choice write_result records in checkpoint.json
            rollouts = run.rollouts()
            wall = time.monotonic() - run.start
            done = [write_result(job, run.curves[k], run.updates * run.settings.steps_per_update
                                 if k in run.live else 0, wall, run.failures.get(k), run.summary(),
                                 run.policy(k) if job.save_policy and k in run.trained() else None,
                                 rollouts.get(k))
                    for k, job in enumerate(group)]
        except Exception as exc:  # noqa: BLE001 - a learner crash is recorded for each job, the search goes on
            failure = Failure(FailureKind.TRAIN_ERROR, f"{type(exc).__name__}: {exc}"[:500])
            done = [TrainResult(j.candidate_id, j.seed, (), 0, 0.0, failure) for j in group]
        for i, res in zip(idx, done, strict=True):
            results[i] = res
    return [r for r in results if r is not None]
