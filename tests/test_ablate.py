"""The hill-climb chain and the design-choice catalogue: `bird.diff rda era_u` is BIRD's net change, each chain step is
a small diff on its parent, and `bird.ablate` lists the choices that apply to a base method."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bird.ablate import choices, main, sweep_commands
from bird.config.load import CONF_DIR
from bird.diff import method_diff

ROOT = Path(__file__).resolve().parents[1]

# ERA-U versus RDA, item by item as the release's hill-climb files (safety-research/bird@54a9ce3:configs/hillclimb/, read step by step in
# methods/hillclimb/) set them -> the resolved keys it becomes in bird
# ({} = no key changes: the item equals RDA's value, or bird has no key for it, as the comment says)
NET_CHANGE = {
    "K 8 constant": {"generate.n_candidates": (4, 8)},  # the schedule stays constant
    "score_scale [0,1] (not three_point)": {"judge.score_scale": ("three_point", "unit")},
    "final_artifact chain_end": {"select.returned": ("global_best", "chain_end")},
    "artifacts add state_trajectories": {"judge.state_table": (False, True)},
    "judge_trace inputs": {},  # bird records every judge input (judge_scores.json) without a key
    "vlm.repeats 2": {"judge.repeats": (1, 2)},
    "require_improvement_over_incumbent true": {"select.require_improvement_over_incumbent": (False, True)},
    "loop.n_iterations 6 in the file (run with 5)": {"loop.iterations": (5, 6)},
    "design_thought inline_brace + include_parent_thought + thought_alignment": {
        "generate.design_thought": ("none", "inline_brace"), "generate.parent_thought": (False, True),
        "feedback.thought_alignment": (False, True)},
    "checkpoint_selection best_own_return": {"train.checkpoint_selection": ("final", "best_own_return")},
    "pruning none": {},  # RDA has none too
    "budget.max_policy_trainings 43": {"budget.max_policy_trainings": (None, 43)},
    "fitness stays vlm_score with fitness_access none": {},
}


def test_diff_rda_era_u_is_the_net_change_of_the_release_hill_climb():
    expected = {"method": ("rda", "era_u")}
    for keys in NET_CHANGE.values():
        expected.update(keys)
    assert method_diff("rda", "era_u") == expected
    proc = subprocess.run([sys.executable, "-m", "bird.diff", "rda", "era_u"], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and len(lines) == 1 + len(expected)
    assert any(ln.startswith("train.checkpoint_selection") and "'best_own_return'" in ln for ln in lines)


def test_era_s_is_era_u_ranked_on_the_native_signal_with_the_releases_unjudged_feedback():
    assert method_diff("era_u", "era_s") == {
        "method": ("era_u", "era_s"), "feedback.fitness": ("judge_score", "native"),
        "feedback.format": ("subtask_judge", "fitness_digest"), "feedback.show_score": (False, True),
        "feedback.score_shown": ("benchmark_score", "native"),
        "feedback.summarisation": ("per_candidate_per_subtask", "appended"),
        "generate.behavioural_analysis": (True, False), "train.collect_episodes": (0, 3), "judge.repeats": (2, 1),
        "judge.state_table": (True, False)}


def _own_keys(path: Path) -> set[str]:
    """Dotted keys a config file sets itself (not through its defaults list)."""
    keys, section = set(), None
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith(("#", "- ")) or line.startswith("defaults"):
            continue
        match = re.match(r"^(\s*)(\w+):", line)
        if match and not match.group(1):
            section = match.group(2)
            keys.add(section)
        elif match:
            keys.discard(section)
            keys.add(f"{section}.{match.group(2)}")
    return keys


@pytest.mark.parametrize("path", sorted((CONF_DIR / "method" / "hillclimb").glob("*.yaml")), ids=lambda p: p.stem)
def test_each_chain_step_is_a_small_diff_on_its_parent(path):
    parent = re.search(r"- /method/(\S+)", path.read_text()).group(1)
    diff = method_diff(parent, f"hillclimb/{path.stem}")
    assert set(diff) - {"method"}, "a step must change something"
    assert set(diff) <= _own_keys(path), f"{sorted(set(diff) - _own_keys(path))} change without being set here"


@pytest.fixture(scope="module")
def eureka_listing():
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["eureka", "--all"])
    return status, out.getvalue()


@pytest.mark.parametrize("number,name", [(1, "four_turn_history"), (16, "peak_own_reward_checkpoint"),
                                         (18, "summarized_feedback"), (19, "benchmark_score_fitness"),
                                         (2, "behavioural_analysis"), (3, "thought_parent_alignment"),
                                         (4, "global_best_parent"), (5, "co_evolve_subtasks")])
def test_ablate_lists_birds_numbered_choices_for_eureka(eureka_listing, number, name):
    status, text = eureka_listing
    assert status == 0
    row = next(ln for ln in text.splitlines() if f" {name} " in ln)
    assert f"({number})" in row and "→" in row


@pytest.mark.parametrize("name,reason", [("judge_repeats", "nothing scores with the judge"),
                                         ("raw_progress_reward", "swaps the reward-program contract"),
                                         ("zero_shot_decomposition", "decompose.n_examples inert"),
                                         ("continuous_judge_score", "changes nothing"),
                                         ("no_decomposition", "swaps the prompt templates ('eureka', 'regot/no_graph')")])
def test_ablate_says_why_a_choice_does_not_apply(eureka_listing, name, reason):
    row = next(ln for ln in eureka_listing[1].splitlines() if f" {name} " in ln)
    assert reason in row


def test_ablate_sweeps_the_base_and_each_flip_into_separate_run_directories(eureka_listing):
    text = eureka_listing[1]
    assert "python -m bird -m method=eureka" in text and "+choice=" in text
    base, flips = sweep_commands("eureka", [], ["metaworld/push"], [0, 1], ["budget=smoke"], "multirun/x")
    assert "hydra.sweep.subdir=${method}/${env.id}/seed${seed}" in base
    assert "hydra.sweep.subdir=${method}+${hydra:runtime.choices.choice}/${env.id}/seed${seed}" in flips
    assert "seed=0,1" in base and "env=metaworld/push" in flips


def test_the_choice_catalogue_documents_every_choice_file():
    doc = (ROOT / "docs" / "choices.md").read_text()
    missing = [c for c in choices() if f"`{c}`" not in doc]
    assert not missing, f"docs/choices.md misses {missing}"
    for name in choices():
        header = (CONF_DIR / "choice" / f"{name}.yaml").read_text()
        number = re.search(r"design choice \((\d+)\)", header)
        row = next(ln for ln in doc.splitlines() if f"`{name}`" in ln)
        assert (f"({number.group(1)})" in row) if number else True


def test_a_variant_of_the_bases_own_prompts_is_a_flip():
    from bird.ablate import _assess, _flat
    from bird.config.load import compose

    on = ["env=metaworld/push"]  # RE-GoT's abstraction: a Meta-World view
    flip = _assess("regot", _flat(compose(["method=regot", *on])), "no_decomposition", on)
    assert flip.reason is None and flip.changes["generate.prompt"] == ("regot", "regot/no_graph")


def test_ablate_sweeps_only_the_chosen_flips_and_refuses_one_that_does_not_apply(capsys):
    assert main(["eureka", "--choices", "four_turn_history", "--seeds", "0", "budget.max_iterations=2"]) == 0
    sweep = capsys.readouterr().out.split("searches in two multiruns:")[1]
    assert "+choice=four_turn_history " in sweep and sweep.count("budget.max_iterations=2") == 2
    assert main(["eureka", "--choices", "four_turn_history,judge_repeats,nope"]) == 2
    err = capsys.readouterr().err
    assert "judge_repeats: invalid on eureka" in err and "nope: no such choice" in err
    assert "four_turn_history" not in err


def test_ablate_assesses_a_method_on_the_sweeps_first_task(capsys):
    # GRACE is refused where a task names no source of demonstrations: assessed on --envs' first task, it is listed
    # and swept there
    assert main(["grace", "--choices", "four_turn_history", "--envs", "metaworld/reach,metaworld/push", "--seeds", "0"]) == 0
    assert "env=metaworld/reach,metaworld/push" in capsys.readouterr().out
    assert main(["grace", "--choices", "four_turn_history", "env=gym/hopper_hop_in_place"]) == 2
    assert "names no source of expert demonstrations" in capsys.readouterr().err
