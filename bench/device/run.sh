#!/usr/bin/env bash
# The GPU path on one accelerator machine, in one go, stopping itself after 9 minutes in all:
#   1. install bird with the [jax] extra, then CUDA jax at the same version (jax[cuda12]==0.9.2);
#   2. `python -m bird.reward check --explain`: the trainer's layers on this machine (GPU device nodes, driver ioctls);
#   3. bench/bench_jax.py at GPU scale (raw Brax PPO vs bird's jax_ppo, 8 candidates, 3M steps each), in process and
#      in the isolated trainer (the isolation's cost next to the ratio);
#   4. one matched-protocol search: method=eureka env=brax/half_cheetah budget=matched train.learner=jax_ppo, trained
#      by the isolated trainer; the summary prints the devices the trainer saw and any inactive layer.
# Unverified on a GPU (written without one): the trainer's GPU profile (bird/reward/trainer_wall.py) is what step 2
# and the search's jax_ppo.json show; a trainer that cannot reach the GPU inside its wall fails with the reason.
# Each step's wall time is printed; what has not finished by the deadline is reported as such.
#
#   bench/device/run.sh              # on the GPU machine (needs the package registry for step 1)
#   bench/device/run.sh --dry-run    # on a CPU: the same steps at tiny budgets, to check the script runs as written
#
# Environment: BIRD_DEVICE_BUDGET_S (default 540 = 9 min), OUT (default runs/device), PYTHON (default .venv/bin/python).
set -uo pipefail
cd "$(dirname "$0")/../.."

DRY=0
[[ "${1:-}" == "--dry-run" ]] && DRY=1
BUDGET=${BIRD_DEVICE_BUDGET_S:-540}
DEADLINE=$((SECONDS + BUDGET))
OUT=${OUT:-runs/device}
PY=${PYTHON:-.venv/bin/python}
mkdir -p "$OUT"
# bench rows (bench/record.py) come back under $OUT/results; append them to bench/results/ by hand
export BIRD_BENCH_RESULTS=${BIRD_BENCH_RESULTS:-$OUT/results}
SUMMARY=()

step() {  # step NAME CMD...: run with what is left of the budget; record its wall time and exit status
  local name=$1; shift
  local left=$((DEADLINE - SECONDS))
  if (( left <= 10 )); then
    SUMMARY+=("$name: not started (time budget spent)"); echo "== $name: not started (time budget spent)"; return 1
  fi
  echo "== $name (at most ${left} s): $*"
  local start=$SECONDS
  timeout --signal=INT --kill-after=15 "$left" "$@"
  local rc=$? wall=$((SECONDS - start))
  local status="finished"; (( rc == 124 || rc == 130 || rc == 137 )) && status="stopped at the deadline"; (( rc != 0 && rc != 124 && rc != 130 && rc != 137 )) && status="failed (exit $rc)"
  SUMMARY+=("$name: $status after ${wall} s"); echo "== $name: $status after ${wall} s"
  return $rc
}

if (( DRY )); then  # inverted_pendulum: the Brax task that compiles fastest on a CPU (tests/bench runs this)
  BENCH=(--task inverted_pendulum --steps 128 --k 2 --quick --checkpoints 1 --eval-episodes 1 --horizon 20)
  SEARCH=(method=eureka env=brax/inverted_pendulum budget=smoke budget.max_candidates=1 budget.max_iterations=1
          budget.env_steps=256 budget.final_env_steps=256 budget.n_checkpoints=1 budget.eval_episodes=1 env.horizon=20
          train.learner=jax_ppo "train.jax.policy_hidden_layer_sizes=[16]" "train.jax.value_hidden_layer_sizes=[16]"
          train.jax.num_envs=4 train.jax.batch_size=4 train.jax.num_minibatches=2 train.jax.unroll_length=8
          train.jax.num_updates_per_batch=1 train.jax.min_updates=1)
else
  step install bash -c "make -s .venv/.bird-installed && $PY -m pip install -q 'jax[cuda12]==0.9.2'" || true
  BENCH=(--task half_cheetah --steps 3000000 --k 8)
  SEARCH=(method=eureka env=brax/half_cheetah budget=matched train.learner=jax_ppo)
fi
$PY -c "import jax; print('devices:', jax.devices())"
step explain "$PY" -m bird.reward check --explain || true

step bench "$PY" bench/bench_jax.py "${BENCH[@]}" --json "$OUT/bench_jax.json" || true
RUN="$OUT/search"
rm -rf "$RUN"
step search "$PY" -m bird "${SEARCH[@]}" run.progress=false run.skip_completed=false "hydra.run.dir=$RUN" || true

echo "== summary (budget ${BUDGET} s, used $((SECONDS)) s)"
printf '  %s\n' "${SUMMARY[@]}"
if [[ -f "$RUN/events.jsonl" ]]; then  # what the search finished by the deadline
  "$PY" - "$RUN" <<'PY'
import json, sys
from pathlib import Path
run = Path(sys.argv[1])
events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines() if line.strip()]
t0 = events[0]["t"]
for e in events:
    if e["event"] in ("iteration_done", "final_retrain", "search_done"):
        keep = {k: e[k] for k in ("iteration", "best_score", "env_steps_cum", "scores", "returned_score") if k in e}
        print(f"  search +{e['t'] - t0:6.0f} s  {e['event']}  {keep}")
records = sorted(run.rglob("jax_ppo.json"))
if records:  # what the isolated trainer saw: its devices and its layers
    rec = json.loads(records[0].read_text())
    off = [k for k, v in rec.get("isolation", {}).items() if not v]
    print(f"  trainer devices: {rec.get('devices')}; inactive layers: {off or 'none'}")
result = run / "result.json"
if result.exists():
    r = json.loads(result.read_text())
    print(f"  search result: returned_score={r['returned_score']} env_steps={r['env_steps']:,} wall_s={r['wall_s']}")
else:
    print("  search result: none (not finished by the deadline)")
PY
fi
