"""JAX-path attack driver: plays the host of a train.learner=jax_ppo search and runs jax_attacks.py through the real
path, then looks for side effects on the host (driver.World: sentinel files, listeners, a decoy, processes left).

  1. programs: the smoke check (64 real transitions) on each attack program, then export_jobs at a training size
     (export, training-size dry run, inspection): each must be that program's recorded failure, in bounded time;
  2. a thread bomb under the jax worker's layers (escaped_payloads.thread_bomb with the jax language), and every
     escaped payload inside a trainer's wall (fake_workers/escaped_trainer.py: the trainer's profile and its
     deferred uid drop): what native code an artefact reached through an XLA bug could try;
  3. artefacts: a compromised reward worker's bytes (for the crafted jobs SandboxedReward.export is replaced and no
     worker is started) in one group with a clean program, through the executor's prepare and call_learner
     (inspection, the isolated trainer, its watchdog, the culprit search); the group that reaches the trainer is two
     wide, the program the JAX warm-up compiled (tests/background.py, "jax_programs");
  4. (--baseline) the clean program with a second one as a group of their own at the same width, for the curves'
     comparison.
--short leaves out step 1 and keeps a few artefacts in step 3 (the second user's run: the layers, the limits and the
trainer must work there too; the dry run and the inspector do not depend on the user).

    python jax_driver.py --out results.json [--site SITE_PACKAGES] [--baseline] [--short]
Run by tests/security/test_jax_path.py as root and as an unprivileged user, with a canary secret in its environment.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import site
import sys
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
UPDATE_TIMEOUT_S = 5  # the watchdog per PPO update of this tiny training (a clean one takes about 0.5 s under the suite)
# the dry run's budget here (30 s in a search; verify.call_timeout_s, 5 s, is its floor): the looping attacks would
# run for hours at this size
DRY_RUN_S = 5.0
BIG = ["train.jax.num_envs=1024", "train.jax.batch_size=512", "train.jax.num_minibatches=8",
       "train.jax.unroll_length=16"]  # rows per training slot: 4 rollouts × 16 decisions × 1024 envs = 65,536
_CRAFTED = "# crafted: "


def _cfg(extra: list[str]):
    sys.path.insert(0, str(HERE.parent / "jaxpath"))
    from jax_programs import TINY

    from bird.config.load import compose

    return compose(["budget=smoke", "run.progress=false", *TINY, f"train.jax.update_timeout_s={UPDATE_TIMEOUT_S}",
                    *extra])


def _failure(f: Any) -> dict[str, str] | None:
    return None if f is None else f.to_json()


def run_programs(out: Path) -> dict[str, Any]:
    """Each attack program: the smoke check's verdict, then export_jobs at 65,536 rows."""
    from jax_attacks import HEAD, PROGRAMS

    from bird.envs.registry import make_adapter
    from bird.learners.job import make_job
    from bird.learners.programs import export_jobs, training_rows
    from bird.reward import factory
    from bird.reward.checks import random_transitions, verify_code

    factory.BULK_TIMEOUT_S = DRY_RUN_S  # the least bulk-call limit, which the dry run takes when it is above 5 s
    cfg = _cfg(BIG)
    adapter = make_adapter(cfg.env)
    batch = random_transitions(adapter, cfg.verify.smoke_steps, cfg.seed)
    rec: dict[str, Any] = {}
    jobs = []
    for name, (body, _, _) in PROGRAMS.items():
        code = HEAD + body
        smoke = verify_code(code, cfg, batch, adapter.spec)
        jobs.append(make_job(cfg, name, code, 0, 10**8, out / name))
        rec[name] = {"smoke_valid": smoke.ok, "smoke_failure": _failure(smoke.failure),
                     "rows": training_rows(jobs[-1], adapter.task)}
    start = time.monotonic()
    _, failed = export_jobs(jobs)  # side by side, as a search exports an iteration's programs
    for i, job in enumerate(jobs):
        rec[job.candidate_id]["export_failure"] = _failure(failed.get(i))
    return {"programs": rec, "export_s": round(time.monotonic() - start, 1)}


def run_thread_bomb(world: Any) -> dict[str, Any]:
    from bird.reward import sandbox
    from bird.reward.languages import get_language

    worker = sandbox.WorkerProcess(get_language("jax"), 2048, 10.0, module="escaped_payloads",
                                   extra_paths=(str(HERE),))
    try:
        reply, _ = worker.request({"attempt": "thread_bomb", "targets": world.targets()}, b"", 120.0, 0, "payload",
                                  "120 s")
    finally:
        worker.close()
    return {k: reply.get(k) for k in ("outcome", "error", "text", "value")} | {"layers": worker.layers}


def run_escaped_trainer(world: Any) -> dict[str, Any]:
    """Each escaped payload in a fresh process behind the trainer's layers, side effects checked after each."""
    from escaped_payloads import ATTEMPTS

    from bird.reward import sandbox, trainer_wall

    cfg, env = trainer_wall.trainer_isolation(4096, None)
    rec: dict[str, Any] = {}
    for name in ATTEMPTS:
        worker = sandbox.WorkerProcess(None, cfg.memory_mb, 10.0, module="fake_workers.escaped_trainer",
                                       extra_paths=(str(HERE),), init={"isolation": cfg.to_json()}, env=env,
                                       name="trainer", warn=False)
        try:
            reply, _ = worker.request({"attempt": name, "targets": world.targets()}, b"", 30.0, 0, "payload", "30 s")
            rec[name] = {k: reply.get(k) for k in ("outcome", "error", "errno", "text")}
        except sandbox.RewardProgramError as exc:
            rec[name] = {"outcome": "host_rejected", "failure": exc.failure.to_json()}
        finally:
            worker.close()
        rec[name]["inactive"] = worker.inactive_layers
        rec[name]["effects"] = world.observe([worker.proc.pid])
    return rec


def _jobs(cfg: Any, out: Path, names: list[str]) -> list[Any]:
    sys.path.insert(0, str(HERE.parent / "jaxpath"))
    from jax_attacks import CLEAN, HEAD
    from jax_programs import FORWARD, UPRIGHT

    from bird.learners.job import make_job

    code = {"g1_forward": FORWARD, "g2_upright": UPRIGHT}
    seed = {"g1_forward": 0, "g2_upright": 1}  # a job's seed is its own, whatever group it is in
    return [make_job(cfg, n, code.get(n, f"{_CRAFTED}{n}\n{HEAD}{CLEAN}"), seed.get(n, 100 + i), 192, out / n)
            for i, n in enumerate(names)]


def _curve(r: Any) -> list[dict[str, Any]]:
    return [dataclasses.asdict(c) for c in r.curve]


SHORT = ("a01_lapack_ffi_lying_result_shapes", "a03_signature_differs_from_metadata", "a05_long_dimension_polynomial",
         "a08_fuzzed_bytecode_00")


def run_artefacts(out: Path, short: bool = False) -> dict[str, Any]:
    """The crafted artefacts (a few with --short) with one clean program, through prepare / call_learner / assemble."""
    from jax_attacks import LOOP, artefacts, loop_artefact

    from bird.envs.registry import make_adapter
    from bird.executors.jobs import assemble, call_learner, prepare
    from bird.learners import trainer_host
    from bird.learners.programs import training_rows
    from bird.reward import sandbox
    from bird.reward.jax_export import ExportedReward

    cfg = _cfg([])
    adapter = make_adapter(cfg.env)
    spec = adapter.spec
    names = ["g1_forward"]
    probe = _jobs(cfg, out, names)[0]
    rows = training_rows(probe, adapter.task)
    crafted = artefacts(rows, spec.obs_index.dim, spec.action_dim)
    crafted[LOOP] = (loop_artefact(rows, spec.obs_index.dim, spec.action_dim), ())
    if short:
        crafted = {n: v for n, v in crafted.items() if n in SHORT or n == LOOP}
    names = ["g1_forward", *sorted(crafted)]
    jobs = _jobs(cfg, out, names)
    real_export = sandbox.SandboxedReward.export

    real_init = sandbox.SandboxedReward.__init__

    def remembering(self: Any, code: str, *args: Any, **kw: Any) -> None:
        self.attack_marker = code.splitlines()[0] if code else ""
        if not self.attack_marker.startswith(_CRAFTED):  # a crafted artefact's worker is the attacker: only its bytes
            real_init(self, code, *args, **kw)  # reach the host, so no worker is started for it

    def compromised(self: Any, rows: int, dry_run_timeout_s: float) -> Any:  # the worker sends what it likes
        marker = self.attack_marker
        if marker.startswith(_CRAFTED):
            data, comps = crafted[marker.removeprefix(_CRAFTED)]
            return ExportedReward(data, comps, spec.obs_index.dim, spec.action_dim, rows)
        return real_export(self, rows, dry_run_timeout_s)

    sandbox.SandboxedReward.export = compromised  # type: ignore[method-assign]
    sandbox.SandboxedReward.__init__ = remembering  # type: ignore[method-assign]
    attempts: list[dict[str, Any]] = []
    real_run = trainer_host.run_trainer

    def recorded(group: list[Any], width: int, progress: Any = None) -> Any:
        start = time.monotonic()
        a = real_run(group, width, progress)
        attempts.append({"jobs": [j.candidate_id for j in group], "width": width, "group": _failure(a.group),
                         "blame": a.blame, "seconds": round(time.monotonic() - start, 1), "phases": {k: round(v, 1) for k, v in a.seconds.items()},
                         "layers": a.layers})
        return a

    from bird.learners import jax_isolated

    jax_isolated.run_trainer = recorded  # type: ignore[assignment] - recorded, then the real trainer
    try:
        start = time.monotonic()
        groups, failed = prepare("jax_ppo", jobs)
        prepared = time.monotonic() - start
        done = [r for g in groups for r in call_learner("jax_ppo", g, lambda *a: None)]
        results = assemble(jobs, failed, done)
    finally:
        sandbox.SandboxedReward.export = real_export  # type: ignore[method-assign]
        sandbox.SandboxedReward.__init__ = real_init  # type: ignore[method-assign]
        jax_isolated.run_trainer = real_run  # type: ignore[assignment]
    return {"rows": rows, "prepare_s": round(prepared, 1), "train_s": round(time.monotonic() - start - prepared, 1),
            "groups": [[j.candidate_id for j in g] for g in groups], "attempts": attempts,
            "results": {r.candidate_id: {"failure": _failure(r.failure), "curve": _curve(r)} for r in results}}


def run_baseline(out: Path, width: int) -> dict[str, Any]:
    """The clean program and a second one as a group of their own, at the width the attacked group had."""
    from bird.learners.jax_isolated import search_culprits
    from bird.learners.programs import export_jobs

    jobs, failed = export_jobs(_jobs(_cfg([]), out / "baseline", ["g1_forward", "g2_upright"]))
    assert not failed, failed
    found = search_culprits(jobs, width)
    return {r.candidate_id: {"failure": _failure(r.failure), "curve": _curve(r)} for r in found.values()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--site", help="site-packages to add (running under an interpreter outside the venv)")
    parser.add_argument("--baseline", action="store_true")
    parser.add_argument("--short", action="store_true")
    args = parser.parse_args()
    if args.site:  # as the venv sees packages: its own only, not those of the interpreter it was made from
        sys.path[:] = [p for p in sys.path if p not in site.getsitepackages()]
        site.addsitedir(args.site)
    sys.path.insert(0, str(HERE))
    from driver import World

    work = Path(args.out).parent / "jobs"
    world = World(os.environ["BIRD_TEST_CANARY"])
    rec: dict[str, Any] = {"uid": os.geteuid(), "effects": {}, "seconds": {}}
    phases = [] if args.short else [("programs", lambda: run_programs(work / "programs"))]
    phases += [("thread_bomb", lambda: run_thread_bomb(world)),
              ("escaped_trainer", lambda: run_escaped_trainer(world)),
              ("artefacts", lambda: run_artefacts(work / "artefacts", args.short))]
    if args.baseline:
        phases.append(("baseline", lambda: run_baseline(work, len(rec["artefacts"]["attempts"][0]["jobs"]))))
    try:
        for name, phase in phases:
            start = time.monotonic()
            try:
                rec[name] = phase()
            except Exception:  # noqa: BLE001 - the host must never crash on an attack; recorded, the test fails
                rec[name] = {"host_error": traceback.format_exc()}
            rec["seconds"][name] = round(time.monotonic() - start, 1)
            rec["effects"][name] = world.observe([])
    finally:
        world.close()
        Path(args.out).write_text(json.dumps(rec, indent=1, default=str))


if __name__ == "__main__":
    main()
