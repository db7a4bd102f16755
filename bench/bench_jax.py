"""The JAX learner vs raw Brax PPO, side by side in one run: raw `brax.training.agents.ppo.train` trains one seed on
the reference reward; bird's jax_ppo trains K candidates (offline-synthesised jax programs, exported in the sandbox)
in one program. Same env, backend, env steps per training and PPO hyper-parameters (bird's resolved settings, with
train.normalize_reward=false so both scale the reward by Brax's reward_scaling). Wall times include compilation
(JAX's persistent cache is off for both).

    python bench/bench_jax.py [--task hopper] [--steps 200000] [--k 8] [--backend positional] [--quick] [--json F]

Prints env steps/s of each and the ratio bird (all K candidates) / raw (one training), for bird's learner in this
process and as the search runs it (the isolated trainer, bird/learners/trainer_host.py), with the isolation's cost:
the artefact inspection per program, the trainer's start-up (interpreter and layers; loading the task and compiling
the training program, as in this process) and the result channel's cost per PPO update.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import record

os.environ["BIRD_JAX_CACHE"] = "off"  # cold compiles for both sides

QUICK = ["train.jax.policy_hidden_layer_sizes=[16]", "train.jax.value_hidden_layer_sizes=[16]",
         "train.jax.num_envs=8", "train.jax.batch_size=8", "train.jax.num_minibatches=2",
         "train.jax.unroll_length=8", "train.jax.num_updates_per_batch=1", "train.jax.min_updates=1"]


def _config(args: argparse.Namespace):
    from bird.config.load import compose

    overrides = [f"env=brax/{args.task}", "train.learner=jax_ppo", "train.normalize_reward=false", "run.progress=false",
                 f"budget.env_steps={args.steps}", f"budget.n_checkpoints={args.checkpoints}",
                 f"budget.eval_episodes={args.eval_episodes}", f"env.horizon={args.horizon}",
                 *([f"env.backend={args.backend}"] if args.backend else []), *(QUICK if args.quick else []), *args.set]
    return compose(overrides)


def raw_brax(cfg, settings, adapter) -> dict:
    """brax.training.agents.ppo.train on the reference reward with bird's resolved settings; wall incl. compile."""
    import functools

    from brax.training.agents.ppo import networks as ppo_networks
    from brax.training.agents.ppo import train as ppo

    steps: list[int] = []
    sps: list[float] = []  # Brax's own training/sps per epoch (training only, evaluation excluded)
    start = time.perf_counter()
    ppo.train(
        environment=adapter.env, num_timesteps=cfg.budget.env_steps, episode_length=cfg.env.horizon,
        num_envs=settings.num_envs, batch_size=settings.batch_size, num_minibatches=settings.num_minibatches,
        unroll_length=settings.unroll_length, num_updates_per_batch=settings.num_updates_per_batch,
        learning_rate=settings.learning_rate, entropy_cost=settings.entropy_cost, discounting=settings.discounting,
        gae_lambda=settings.gae_lambda, clipping_epsilon=settings.clipping_epsilon,
        reward_scaling=settings.reward_scaling, normalize_observations=settings.normalize_observations,
        action_repeat=settings.action_repeat, max_grad_norm=settings.max_grad_norm,
        network_factory=functools.partial(ppo_networks.make_ppo_networks,
                                          policy_hidden_layer_sizes=settings.policy_hidden_layer_sizes,
                                          value_hidden_layer_sizes=settings.value_hidden_layer_sizes),
        num_evals=cfg.budget.n_checkpoints + 1, num_eval_envs=cfg.budget.eval_episodes, deterministic_eval=True,
        seed=0, progress_fn=lambda step, metrics: (steps.append(int(step)), sps.append(metrics.get("training/sps", 0))))
    wall = time.perf_counter() - start
    steady = [v for v in sps[2:] if v]  # the epochs after the first, which compiles
    return {"trainings": 1, "env_steps": max(steps), "wall_s": wall, "env_steps_per_s": max(steps) / wall,
            "steady_training_env_steps_per_s": sum(steady) / len(steady) if steady else None}


def bird_learner(cfg, k: int, out: Path) -> dict:
    """bird's jax_ppo numerics in this process on K offline-synthesised programs (prepared as the executors do;
    the export is timed apart)."""
    import random

    from bird.executors.jobs import prepare
    from bird.learners.jax_ppo import train_jax_ppo
    from bird.learners.job import make_job
    from bird.llm.offline.proposals import propose
    from bird.llm.offline.terms import render_program
    from bird.prompts import obs_fields_context

    spec = __import__("bird.envs.registry", fromlist=["make_adapter"]).make_adapter(cfg.env).spec
    ctx = {"obs_fields": obs_fields_context(spec), "task": spec.description}
    codes = [render_program(propose(ctx, random.Random(i)), "bench", "jax") for i in range(k)]
    jobs = [make_job(cfg, f"c{i}", code, i, cfg.budget.env_steps, out / f"c{i}") for i, code in enumerate(codes)]
    start = time.perf_counter()
    groups, failed = prepare(cfg.train.learner, jobs)  # as the executors do: export, dry run, inspection; one group
    exported = time.perf_counter() - start
    if failed or len(groups) != 1:
        raise RuntimeError(f"{len(groups)} groups, programs that did not export: {failed}")
    jobs = groups[0]
    start = time.perf_counter()
    results = train_jax_ppo(jobs)  # the numerics in this process, without the trainer's wall
    wall = time.perf_counter() - start
    bad = [r.failure for r in results if not r.ok]
    if bad:
        raise RuntimeError(f"bird's trainings failed: {bad}")
    timing = json.loads((out / "c0" / "jax_ppo.json").read_text())["timing"]
    total = sum(r.env_steps for r in results)
    return {"trainings": k, "env_steps": total, "wall_s": wall, "env_steps_per_s": total / wall, **timing,
            "final_scores": [round(r.curve[-1].score, 3) for r in results], "jobs": jobs,
            "export_s_per_program": exported / k}


def bird_isolated(jobs: list, inproc: dict) -> dict:
    """The same jobs through the isolated trainer, as a search runs them; the isolation's cost next to the
    in-process figures (both compile cold: the persistent cache is off for both)."""
    from bird.learners.trainer_host import run_trainer
    from bird.reward.inspector import inspect_artefact

    start = time.perf_counter()
    inspect_artefact(jobs[0].program)
    inspect_s = time.perf_counter() - start
    start = time.perf_counter()
    attempt = run_trainer(jobs, len(jobs))
    wall = time.perf_counter() - start
    assert attempt.group is None, attempt.group
    bad = [r.failure for r in attempt.results if not r.ok]
    assert not bad, bad
    total = sum(r.env_steps for r in attempt.results)
    sec = attempt.seconds
    n_updates = total // len(jobs) // max(1, int(inproc["steps_per_update"]))
    inproc_train = float(inproc.get("train_s", 0.0))  # the update loop in this process, evaluation included
    return {"wall_s": wall, "env_steps": total, "env_steps_per_s": total / wall, "seconds": sec,
            "inspect_s_per_program": inspect_s, "trainer_start_s": sec.get("start_s"),
            "setup_s": sec.get("setup_s"), "updates": n_updates,
            "channel_s_per_update": (sec.get("train_s", 0.0) - inproc_train) / max(n_updates, 1)}


def _machine() -> str:
    import jax

    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                   if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{jax.devices()[0].device_kind} ({jax.default_backend()}); host {cpu}, {os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="hopper")
    parser.add_argument("--backend", default=None, help="default: the task's default backend")
    parser.add_argument("--steps", type=int, default=200_000, help="env steps per training")
    parser.add_argument("--k", type=int, default=8, help="candidates bird trains at once")
    parser.add_argument("--checkpoints", type=int, default=4)
    parser.add_argument("--eval-episodes", type=int, default=4)
    parser.add_argument("--horizon", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="tiny networks and rollouts (a CPU dry run)")
    parser.add_argument("--set", nargs="*", default=[], help="extra config overrides, e.g. train.jax.num_envs=256")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()

    from bird.envs.registry import make_adapter
    from bird.jax_cache import enable_compilation_cache
    from bird.learners.jax_settings import resolve_settings

    started = record.begin()
    enable_compilation_cache()  # logging and allocation settings only (the cache itself is off)
    cfg = _config(args)
    adapter = make_adapter(cfg.env)
    settings = resolve_settings(cfg.train.jax, adapter.task, cfg.budget.env_steps, cfg.train.normalize_reward)
    print(f"bench_jax {dt.date.today()} on {_machine()}; load {os.getloadavg()[0]:.1f}")
    print(f"brax/{args.task} ({adapter.backend}), {cfg.budget.env_steps:,} steps per training, "
          f"{settings.num_envs} envs × unroll {settings.unroll_length}, {settings.n_updates} updates", flush=True)
    raw = raw_brax(cfg, settings, adapter)
    print(f"raw brax ppo.train   1 training : {raw['env_steps']:>11,} steps {raw['wall_s']:8.1f} s "
          f"{raw['env_steps_per_s']:>10,.0f} steps/s (steady training {raw['steady_training_env_steps_per_s']})",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_jax_") as out:
        bird = bird_learner(cfg, args.k, Path(out))
        print(f"bird jax_ppo   {args.k:>3} trainings: {bird['env_steps']:>11,} steps {bird['wall_s']:8.1f} s "
              f"{bird['env_steps_per_s']:>10,.0f} steps/s (compile {bird.get('compile_s')} s, first update "
              f"{bird.get('first_update_s')} s, then {bird.get('steady_env_steps_per_s')} steps/s incl. evaluation)")
        ratio = bird["env_steps_per_s"] / raw["env_steps_per_s"]
        print(f"ratio bird/raw (env steps/s, compile included): {ratio:.2f}", flush=True)
        iso = bird_isolated(bird.pop("jobs"), {**bird, "steps_per_update": settings.steps_per_update})
    iso_ratio = iso["env_steps_per_s"] / raw["env_steps_per_s"]
    print(f"bird jax_ppo isolated {args.k:>3} trainings: {iso['env_steps']:>11,} steps {iso['wall_s']:8.1f} s "
          f"{iso['env_steps_per_s']:>10,.0f} steps/s; ratio isolated/raw {iso_ratio:.2f}")
    print(f"isolation cost: inspection {iso['inspect_s_per_program']:.1f} s per program (export with its dry run "
          f"{bird['export_s_per_program']:.1f} s); trainer start-up {iso['trainer_start_s']:.1f} s (interpreter, "
          f"layers) + {iso['setup_s']:.1f} s loading the task and compiling (in this process: "
          f"{bird.get('compile_s', 0):.1f} s compiling); {1000 * iso['channel_s_per_update']:.1f} ms per update "
          f"on the result channel ({iso['updates']} updates); wall {iso['wall_s'] - bird['wall_s']:+.1f} s")
    row = {"task": args.task, "backend": adapter.backend, "steps_per_training": cfg.budget.env_steps, "k": args.k,
           "quick": args.quick, "device": _machine(), "raw_env_steps": raw["env_steps"], "raw_wall_s": raw["wall_s"],
           "raw_env_steps_per_s": raw["env_steps_per_s"], "bird_env_steps": bird["env_steps"],
           "bird_wall_s": bird["wall_s"], "bird_env_steps_per_s": bird["env_steps_per_s"],
           "isolated_wall_s": iso["wall_s"], "isolated_env_steps_per_s": iso["env_steps_per_s"], "ratio": ratio,
           "ratio_isolated": iso_ratio}
    print(f"row appended to {record.append('jax', row, started)}")
    if args.json:
        args.json.write_text(json.dumps({"date": str(dt.date.today()), "machine": _machine(), "args": vars(args) | {
            "json": str(args.json)}, "settings": settings.to_json(), "raw": raw, "bird": bird, "ratio": ratio,
            "isolated": iso, "ratio_isolated": iso_ratio}, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
