"""EPIC in the benchmark: distance of each iteration's best reward to the task's reference reward (BIRD Fig. 9).

For a run directory: read `result.json`'s `iterations[*].best_candidate`, run each best `reward.py` in the
sandbox on the task's cached competent-policy dataset (analysis/epic_data.py), canonicalise it with the
dataset's paired mean samples, and take the Pearson distance to the canonical reference reward. Writes
`epic.csv` (iteration,candidate,distance,random_median,reason). See docs/analysis.md for the definitions.
The run directory may be someone else's: its files are read as bird/files.py reads them (regular files inside the
run, within their caps, bounded parsing; config.yaml as received data, bird/config/received.py).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bird.files import read_json, read_text, write_json, write_text

from .epic import canonicalize_samples, pearson_distance
from .epic_data import Dataset, cache_dir, competent_dataset

__all__ = ["EpicSettings", "TaskReference", "candidate_reward", "evaluate_run", "random_rewards",
           "task_reference", "write_epic_csv"]

Reward = Callable[[Mapping[str, np.ndarray], np.ndarray, Mapping[str, np.ndarray]], np.ndarray]
CHUNK = 1 << 17  # reward evaluations per sandbox call
METAWORLD_REASON = ("no off-policy Meta-World reference reward: its reward reads live simulator state and "
                    "per-episode attributes (init positions, targets), not implemented")


@dataclass(frozen=True)
class EpicSettings:
    """Dataset and estimator settings; the same for every run of a task so distances are comparable."""

    policy_steps: int = 100_000
    n_transitions: int = 4096  # N_V
    n_mean: int = 1024  # N_M
    seed: int = 0
    discount: float = 0.99
    n_random: int = 32
    call_timeout_s: float = 120.0
    memory_mb: int = 4096


@dataclass
class TaskReference:
    """The dataset, the canonical reference reward and the random-reward distances of one task."""

    env_id: str
    dataset: Dataset | None
    canon: np.ndarray | None = None
    scale: float = 0.0
    random_distances: np.ndarray = field(default_factory=lambda: np.empty(0))
    reason: str = ""  # why distances are NaN (no reference reward, constant reference on the dataset)

    @property
    def random_median(self) -> float:
        d = self.random_distances[np.isfinite(self.random_distances)]
        return float(np.median(d)) if d.size else math.nan


def _canon(reward: Reward, ds: Dataset, discount: float) -> tuple[np.ndarray, float]:
    return canonicalize_samples(reward, ds.obs, ds.acts, ds.next_obs, ds.mean_obs, ds.mean_acts, discount,
                                chunk_size=CHUNK, return_scale=True)


def distance(reward: Reward, ref: TaskReference, discount: float) -> float:
    """EPIC distance of `reward` to the task's reference on its dataset (NaN when undefined)."""
    if ref.canon is None or ref.dataset is None:
        return math.nan
    canon, scale = _canon(reward, ref.dataset, discount)
    return pearson_distance(canon, ref.canon, x_scale=scale, y_scale=ref.scale)


def random_rewards(ds: Dataset, n: int, seed: int, hidden: int = 64) -> list[Reward]:
    """n random MLPs (2 x `hidden`, tanh, N(0, 1/fan_in) weights and N(0, 1) biases) on the standardised
    concat(obs, act, next_obs) of the default observation (the extra simulator fields are not inputs)."""
    x = np.concatenate([ds.obs["obs"], ds.acts.reshape(len(ds.acts), -1), ds.next_obs["obs"]], axis=1)
    mu, sd = x.mean(axis=0), x.std(axis=0)
    sd = np.where(sd > 1e-8, sd, 1.0)
    rng = np.random.default_rng(seed)
    sizes = [x.shape[1], hidden, hidden, 1]
    out: list[Reward] = []
    for _ in range(n):
        layers = [(rng.normal(0, 1 / math.sqrt(a), (a, b)).astype(np.float32), rng.normal(0, 1, b).astype(np.float32))
                  for a, b in zip(sizes[:-1], sizes[1:], strict=True)]

        def f(s: Mapping[str, np.ndarray], a: np.ndarray, s2: Mapping[str, np.ndarray],
              layers: list = layers) -> np.ndarray:
            h = ((np.concatenate([s["obs"], a.reshape(len(a), -1), s2["obs"]], axis=1) - mu) / sd).astype(np.float32)
            for k, (w, b) in enumerate(layers):
                h = h @ w + b
                if k < len(layers) - 1:
                    h = np.tanh(h)
            return h[:, 0].astype(np.float64)

        out.append(f)
    return out


@contextmanager
def candidate_reward(code: str, obs_index, settings: EpicSettings) -> Iterator[Reward]:
    """A sandboxed reward program as f(state, act, next_state) on the "obs" field of stored states."""
    from bird.reward.factory import open_program

    sandbox = open_program(code, obs_index, settings)
    try:
        yield lambda s, a, s2: sandbox(s["obs"], a, s2["obs"])[0]
    finally:
        sandbox.close()


def _random_cache(env_id: str, s: EpicSettings) -> Path:
    return (cache_dir() / env_id.replace("/", "__") / f"ppo_steps{s.policy_steps}_seed{s.seed}"
            / f"random_v{s.n_transitions}_m{s.n_mean}_r{s.n_random}_g{s.discount:g}.json")


def task_reference(env_id: str, s: EpicSettings, log: Callable[[str], None] = print) -> TaskReference:
    """Build (or read from the cache) the dataset, canonical reference and random-reward distances of a task."""
    suite, _, task = env_id.partition("/")
    if suite != "mujoco":
        return TaskReference(env_id, None, reason=METAWORLD_REASON if suite == "metaworld" else
                             f"no reference reward for suite {suite!r}")
    from bird.envs.mujoco.reference import reference_reward

    ds = competent_dataset(env_id, s.policy_steps, s.n_transitions, s.n_mean, s.seed, log=log)
    canon, scale = _canon(reference_reward(task), ds, s.discount)
    ref = TaskReference(env_id, ds, canon, scale)
    if not np.isfinite(pearson_distance(canon, canon, x_scale=scale, y_scale=scale)):
        ref.canon, ref.reason = None, "reference reward is constant (after canonicalisation) on the dataset"
        return ref
    path = _random_cache(env_id, s)
    if path.is_file():
        ref.random_distances = np.asarray(read_json(path, "record")["distances"], dtype=float)
    else:
        log(f"[epic] {env_id}: {s.n_random} random rewards")
        ref.random_distances = np.array([distance(r, ref, s.discount) for r in random_rewards(ds, s.n_random, s.seed)])
        write_json(path, {"distances": ref.random_distances.tolist()})
    return ref


def _contract(run: Path) -> str:
    """The run's reward-program contract (config.yaml `reward.contract`, default compute_reward), read as received
    data (bird/config/received.py: an interpolation is refused, never resolved)."""
    from bird.config.received import load_received

    cfg = run / "config.yaml"
    if not cfg.is_file():
        return "compute_reward"
    reward = load_received(cfg).get("reward") or {}
    contract = reward.get("contract", "compute_reward") if isinstance(reward, dict) else None
    if not isinstance(contract, str):
        raise ValueError(f"{cfg}: reward.contract={contract!r} is not a contract name")
    return contract


def _best_candidates(result: dict) -> list[tuple[int, str | None]]:
    return [(int(it["iteration"]), it.get("best_candidate")) for it in result.get("iterations", [])]


def evaluate_run(run_dir: str | Path, s: EpicSettings, refs: dict[str, TaskReference] | None = None,
                 log: Callable[[str], None] = print) -> list[dict]:
    """epic.csv rows for one run directory: one per iteration (distance NaN with a reason when undefined). Raises
    OSError or ValueError for a run whose result.json, config.yaml or reward.py bird will not read."""
    from bird.config.schema import EnvConfig
    from bird.envs.registry import make_adapter
    from bird.reward.sandbox import RewardProgramError

    run = Path(run_dir)
    result = read_json(run / "result.json", "result", run)
    if not isinstance(result, dict):
        raise ValueError(f"{run / 'result.json'} is not a JSON object")
    env_id = result.get("env") or f"{result['suite']}/{result['task']}"
    refs = {} if refs is None else refs
    if env_id not in refs:
        refs[env_id] = task_reference(env_id, s, log)
    ref = refs[env_id]
    obs_index = make_adapter(EnvConfig(id=env_id, description="")).spec.obs_index if ref.canon is not None else None
    contract = _contract(run)
    rows = []
    for iteration, cid in _best_candidates(result):
        row = {"iteration": iteration, "candidate": cid or "", "distance": math.nan,
               "random_median": ref.random_median, "reason": ref.reason}
        code_path = run / "candidates" / str(cid) / "reward.py"
        if ref.canon is None:
            pass
        elif contract != "compute_reward":
            row["reason"] = (f"contract {contract!r} keeps per-episode state: not evaluable at the synthetic "
                             "transitions of the canonicalisation")
        elif not cid:
            row["reason"] = "no best candidate in this iteration (all failed)"
        elif not code_path.is_file():
            row["reason"] = f"missing {code_path.relative_to(run)}"
        else:
            try:
                with candidate_reward(read_text(code_path, "text", run), obs_index, s) as fn:
                    row["distance"] = distance(fn, ref, s.discount)
                if not math.isfinite(row["distance"]):
                    row["reason"] = "candidate reward is constant (after canonicalisation) on the dataset"
            except RewardProgramError as exc:
                row["reason"] = f"reward program failed off-policy: {exc.failure.kind}: {exc.failure.reason}"
        rows.append(row)
    return rows


def write_epic_csv(run_dir: str | Path, rows: Sequence[dict]) -> Path:
    """Write `epic.csv` (empty distance/random_median for NaN), as analysis/rundir.py reads it."""
    path = Path(run_dir) / "epic.csv"
    cols = ["iteration", "candidate", "distance", "random_median", "reason"]
    fh = io.StringIO(newline="")
    w = csv.DictWriter(fh, fieldnames=cols)
    w.writeheader()
    for r in rows:
        w.writerow({c: ("" if isinstance(r[c], float) and not math.isfinite(r[c]) else r[c]) for c in cols})
    write_text(path, fh.getvalue())  # atomic, and never through a link planted at epic.csv
    return path
