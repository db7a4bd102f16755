"""Every script in bench/ runs end to end at a tiny budget, as a user runs it (a command from the repository root), and
prints its figures: a benchmark that breaks fails here, not when someone next wants its number.

The commands run beside the suite (tests/background.py has each one); these tests read what they printed. The
executor bench needs the cluster tests' Ray and is tested there (tests/cluster/test_bench_executor.py)."""

from __future__ import annotations

import csv
import json
import math
import re

import background
import pytest


def output(name: str) -> str:
    """stdout of the finished background job; fails the test with its stderr when it exited non-zero."""
    done = background.result(name)
    assert done.returncode == 0, f"{name} exited {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def recorded(name: str, bench: str, count: int = 1) -> list[dict[str, str]]:
    """The rows job `name` appended to <its folder>/<bench>.csv (bench/record.py; BIRD_BENCH_RESULTS sends them
    there, not to bench/results/): `count` of them, each with the context columns filled and a finite ratio where
    the bench has one."""
    with open(background.result(name).out / f"{bench}.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == count, rows
    for row in rows:
        assert all(row[k] for k in ("date", "machine", "load", "load_end", "commit", "command")), row
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", row["date"]), row["date"]
        assert "ratio" not in row or (math.isfinite(float(row["ratio"])) and float(row["ratio"]) > 0), row
    return rows


def figure(pattern: str, text: str) -> float:
    """The number the regex's group 1 finds in `text` (thousands separators allowed); it must be finite and > 0."""
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in the output:\n{text}"
    value = float(found.group(1).replace(",", ""))
    assert math.isfinite(value) and value > 0, (pattern, value)
    return value


@pytest.mark.background("make_bench")
def test_make_bench_runs_the_overhead_bench_through_the_public_learner():
    """`make bench` (the overhead bench) at a smoke budget; the Makefile's install step is skipped
    (STAMP=) and the running interpreter used."""
    out = output("make_bench")
    assert "256 steps trained (--steps 256), n_envs 2" in out
    for side in (r"raw SB3 PPO \(reference reward\)\s+", r"bird training \(sandboxed reward\) "):
        figure(side + r"median\s+([\d.]+) s", out)
        figure(side + r"median.* CPU\s+([\d.]+) s", out)
    figure(r"overhead ratio bird/raw = ([\d.]+) \(wall\)", out)
    figure(r"overhead ratio bird/raw = .*, ([\d.]+) \(CPU\)", out)
    figure(r"worker start-up (\d+) ms", out)
    figure(r"with 4 checkpoint evaluations \(4 episodes each\): ([\d.]+) s", out)
    row, = recorded("make_bench", "overhead")
    assert row["command"].startswith("python bench/bench_overhead.py --steps 256") and row["steps"] == "256", row


@pytest.mark.background("throughput")
def test_throughput_bench_measures_one_training():
    out = output("throughput")
    figure(r"mujoco/hopper\s+([\d,]+)\s+[\d,]+", out)  # steps per wall second
    figure(r"mujoco/hopper\s+[\d,]+\s+([\d,]+)", out)  # steps per CPU second
    row, = recorded("throughput", "throughput")
    assert row["env"] == "mujoco/hopper" and float(row["steps_per_cpu_s"]) > 0, row


@pytest.mark.background("analysis")
def test_analysis_bench_times_every_stage_on_a_small_synthetic_collection():
    out = output("analysis")
    assert "-> 200 runs, 600 iterations" in out
    for stage in ("read_runs", "save_parquet", "DuckDB aggregate", "BCa (B=10^4) for 40 benchmark x method cells",
                  "Bradley–Terry pooled fit (10 methods)", "Bradley–Terry intervals"):
        assert re.search(rf"{re.escape(stage)}.*\s[\d.]+ s$", out, re.M), stage
    row, = recorded("analysis", "analysis")
    assert row["n_runs"] == "200" and float(row["bca_s"]) > 0, row


@pytest.mark.background("isolation")
def test_isolation_bench_times_a_worker_with_and_without_the_namespace_layers():
    out = output("isolation")
    for language in ("numpy", "jax"):
        line = next(x for x in out.splitlines() if x.startswith(f"{language}: start-up median"))
        full = figure(r"start-up median ([\d.]+) ms with every layer", line)
        base = figure(r", ([\d.]+) ms without pid_namespace/task_limit/mount_namespace", line)
        assert full > 0 and base > 0
        assert figure(r"\(ratio ([\d.]+)\)", line) == pytest.approx(full / base, abs=0.01 + 0.01 * full / base)
        figure(r"one 1,024-row call ([\d.]+) ms vs", line)
    assert re.search(r"load average [\d.]+ after", out)
    assert [r["language"] for r in recorded("isolation", "isolation", 2)] == ["numpy", "jax"]


@pytest.mark.slow
@pytest.mark.background("video")
def test_video_bench_times_a_search_with_and_without_a_clip():
    out = output("video")
    row = next(line for line in out.splitlines() if line.startswith("| mujoco/inverted_pendulum | smoke |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert all(float(c) > 0 for c in cells[2:5]), row
    assert re.fullmatch(r"\d+ / \d+ / [\d.]+", cells[5]), row  # the clip's steps / frames / render seconds
    (rec,) = recorded("video", "video")
    assert rec["env"] == "mujoco/inverted_pendulum" and float(rec["render_s"]) > 0, rec


@pytest.mark.slow
@pytest.mark.background("device_dry_run")
def test_device_script_dry_run_runs_the_jax_bench_and_a_search():
    """bench/device/run.sh --dry-run: bench/bench_jax.py (raw Brax PPO vs bird's jax_ppo) and a jax_ppo search at
    tiny budgets on the CPU, as the GPU machine runs them at full size."""
    out = output("device_dry_run")
    assert re.search(r"bench: finished after \d+ s", out), out
    assert re.search(r"search: finished after \d+ s", out), out
    done = background.result("device_dry_run")
    result = json.loads((done.out / "search" / "result.json").read_text())
    assert math.isfinite(result["returned_score"]) and f"search result: returned_score={result['returned_score']}" in out
    bench = json.loads((done.out / "bench_jax.json").read_text())
    assert bench["raw"]["trainings"] == 1 and bench["bird"]["trainings"] == 2
    assert bench["ratio"] > 0 and len(bench["bird"]["final_scores"]) == 2
    (row,) = recorded("device_dry_run", "jax")
    assert float(row["ratio"]) == pytest.approx(bench["ratio"], rel=1e-4) and row["k"] == "2", row


@pytest.mark.slow
@pytest.mark.background("bundle")
def test_bundle_bench_packs_the_acceptance_sweep_and_replays_it_identically():
    """bench/bench_bundle.py with one replay: the 2 x 2 sweep recorded, packed, replayed cell for cell."""
    out = output("bundle")
    assert re.search(r"bundle: [\d,]+ bytes \(\d+ KiB\), 4 runs, \d+ LLM answers", out), out
    figure(r"bundle: ([\d,]+) bytes", out)
    figure(r"recording \(baseline\): ([\d.]+) s", out)
    assert "replay 0: " in out and "['identical', 'identical', 'identical', 'identical']" in out, out
    figure(r"ratio replay / recording ([\d.]+)", out)
    (row,) = recorded("bundle", "bundle")
    assert row["runs"] == "4" and int(row["bundle_bytes"]) > 0, row


@pytest.mark.background("prompt_cache")
def test_prompt_cache_bench_prices_a_eureka_search_with_and_without_provider_caching():
    out = json.loads(output("prompt_cache").splitlines()[-1])
    assert 0 < out["anthropic_saving_fraction"] < 1 and 0 < out["openai_saving_fraction"] < 1, out
    (row,) = recorded("prompt_cache", "prompt_cache")
    assert float(row["anthropic_saving_fraction"]) == out["anthropic_saving_fraction"], row


@pytest.mark.background("warm_pool")
def test_warm_pool_bench_times_searches_on_fresh_and_on_warm_workers():
    out = output("warm_pool")
    figure(r"fresh\s+([\d.]+) s", out)
    figure(r"warm\s+([\d.]+) s", out)
    figure(r"ratio warm / fresh: ([\d.]+)", out)
    assert "same returned candidate and score either way: True" in out, out
    (row,) = recorded("warm_pool", "warm_pool")
    assert row["same_result"] == "True", row


@pytest.mark.background("pool_start")
def test_pool_start_bench_times_searches_on_forked_and_on_spawned_workers():
    out = output("pool_start")
    for side in ("forkserver", "spawn"):
        figure(side + r"\s+([\d.]+) s", out)
        figure(side + r"\s+[\d.]+ s\s+([\d.]+) s", out)
    figure(r"ratio forkserver / spawn, wall: ([\d.]+)", out)
    figure(r"ratio forkserver / spawn, CPU: ([\d.]+)", out)
    assert "same returned candidate and score either way: True" in out, out
    (row,) = recorded("pool_start", "pool_start")
    assert float(row["ratio_cpu"]) > 0 and row["same_result"] == "True", row


@pytest.mark.background("trainer_start")
def test_trainer_start_bench_times_the_trainer_with_and_without_the_compile_steps_executables():
    out = output("trainer_start")
    figure(r"executables\s+([\d.]+) s", out)
    figure(r"tracing\s+([\d.]+) s", out)
    figure(r"ratio executables / tracing: ([\d.]+)", out)
    assert "same curve either way: True" in out, out
    for side in ("stored output", "compile step"):  # the host side of a fresh process
        figure(side + r"\s+([\d.]+) s wall", out)
        figure(side + r"\s+[\d.]+ s wall\s+([\d.]+) s CPU", out)
    figure(r"ratio stored output / compile step, CPU: ([\d.]+)", out)
    assert "same executables either way: True" in out, out
    (row,) = recorded("trainer_start", "trainer_start")
    assert row["same_curve"] == "True" and row["same_executables"] == "True", row


@pytest.mark.background("metaworld_env")
def test_metaworld_env_bench_times_making_an_env_with_metaworlds_make_and_with_birds():
    out = output("metaworld_env")
    figure(r"push\s+([\d.]+)s", out)
    figure(r"push\s+[\d.]+s\s+([\d.]+)s", out)
    figure(r"ratio bird / metaworld, median over tasks: ([\d.]+)", out)
    assert "same first observation either way: True" in out, out
    (row,) = recorded("metaworld_env", "metaworld_env")
    assert row["task"] == "push" and row["same_first_obs"] == "True", row


def _unrecorded(sources: dict[str, str]) -> list[str]:
    """Scripts whose source never appends a row through bench/record.py."""
    return sorted(name for name, text in sources.items() if "record.append(" not in text)


def test_every_bench_script_appends_its_result_to_bench_results():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sources = {p.name: p.read_text() for p in (root / "bench").glob("bench_*.py")}
    assert len(sources) >= 12 and not _unrecorded(sources), _unrecorded(sources)
    assert _unrecorded({**sources, "bench_new.py": "print(1)"}) == ["bench_new.py"]  # positive control


@pytest.mark.background("babyai_ppo")
def test_babyai_ppo_bench_measures_sb3_and_birds_learner_on_one_level():
    out = output("babyai_ppo")
    figure(r"SB3 PPO \(MlpPolicy, the env's reward\)\s+([\d.]+) steps/s", out)
    figure(r"bird sb3_ppo \(grid CNN, sandboxed reward, evals\)\s+([\d.]+) steps/s", out)
    figure(r"ratio bird / SB3 = ([\d.]+)", out)


def _not_run(scripts: list[str], commands: str) -> list[str]:
    return [s for s in scripts if s not in commands]


def test_every_bench_script_runs_in_the_suite():
    """A new bench/ script needs its command in tests/background.py (or a test of its own that runs it)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    scripts = sorted(p.name for p in (root / "bench").glob("*.py") if "__main__" in p.read_text())
    commands = " ".join(" ".join(background.command(name, Path("out"))[0]) for name in background.NAMES)
    commands += (root / "bench" / "device" / "run.sh").read_text()  # bench_jax.py, in the device script's dry run
    commands += (root / "Makefile").read_text()  # `make bench` (job make_bench): bench_overhead.py
    commands += (root / "tests" / "cluster" / "test_bench_executor.py").read_text()
    assert len(scripts) >= 9 and not _not_run(scripts, commands), _not_run(scripts, commands)
    assert _not_run([*scripts, "bench_new.py"], commands) == ["bench_new.py"]  # positive control


@pytest.mark.background("bird_anchors")
def test_bird_anchors_bench_measures_birds_tasks_beside_birds_values():
    out = output("bird_anchors")
    for task in ("reacher_hold", "inverted_pendulum_balance"):
        assert re.search(rf"{task}\s+\S+\s+BIRD\s+[\d.-]+ \(n=\d+\)\s+n2\s+[\d.e-]+ ± [\d.e-]+\s+n2\s+[\d.e-]+", out), out
    rows = recorded("bird_anchors", "bird_random_anchors", 2)
    assert [r["bird_task"] for r in rows] == ["reacher_hold", "inverted_pendulum_balance"] and rows[0]["versions"]


@pytest.mark.background("quickstart")
def test_quickstart_bench_times_the_readmes_first_example_and_appends_a_row():
    out = output("quickstart")
    figure(r"python -m bird budget=smoke env=gym/pendulum .*: wall ([\d.]+) s", out)
    figure(r"CPU ([\d.]+) s", out)
    (row,) = recorded("quickstart", "quickstart")
    assert row["command"].startswith("python -m bird budget=smoke env=gym/pendulum budget.max_iterations=1"), row
    assert float(row["wall_s"]) > 0 and float(row["cpu_s"]) > 0


@pytest.mark.background("search_time")
def test_quickstart_bench_times_another_search_into_its_own_file():
    out = output("search_time")
    figure(r"python -m bird method=oracle env=mujoco/inverted_pendulum budget=smoke .*: wall ([\d.]+) s", out)
    (row,) = recorded("search_time", "search_time")
    assert row["command"].startswith("python -m bird method=oracle env=mujoco/inverted_pendulum budget=smoke"), row
    assert float(row["cpu_s"]) > 0 and not (background.result("search_time").out / "quickstart.csv").exists()
