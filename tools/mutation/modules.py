"""The module table of `make mutate`: each core module's source files and the fast tests that cover it, and the paths
and constants the other parts share (where results, notes and reports live; where a file sits in the stage)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAGE = ROOT / ".mutmut"
RESULTS = ROOT / "docs" / "mutation" / "results.json"
NOTES = ROOT / "docs" / "mutation" / "notes.toml"
REPORT = ROOT / "docs" / "mutation.md"
SURVIVORS = ROOT / "docs" / "mutation_survivors.md"
TARGET = 0.85
# where each top-level folder lives inside the installed package
LAYOUT = {"bird": "bird", "analysis": "bird/analysis", "envs": "bird/envs", "methods": "bird/methods"}
KILLED = {"killed", "timeout", "caught by type check", "segfault"}


@dataclass(frozen=True)
class Module:
    """A core module: its source files (repo paths) and the narrowest fast tests that cover them."""

    files: tuple[str, ...]
    tests: tuple[str, ...]


BUNDLE_TESTS = ("tests/bundle/test_bundle_unit.py", "tests/bundle/test_bundle_tampering.py")
MODULES: dict[str, Module] = {
    "demos": Module(("bird/components/demos.py",), ("tests/methods/test_demos_unit.py",)),
    "demo_fitness": Module(("bird/components/demo_fitness.py",), ("tests/methods/test_demo_fitness.py",)),
    "trajectories": Module(("bird/components/trajectories.py",),
                           ("tests/methods/test_tpe.py", "tests/methods/test_trajectory_store.py")),
    "metrics": Module(("analysis/metrics.py",), ("tests/analysis/test_analysis_metrics.py",)),
    "bootstrap": Module(("analysis/bootstrap.py",), ("tests/analysis/test_analysis_bootstrap.py",)),
    "bradley_terry": Module(("analysis/bradley_terry.py",), ("tests/analysis/test_analysis_bradley_terry.py",)),
    "epic": Module(("analysis/epic.py",), ("tests/analysis/test_analysis_epic.py",)),
    "report": Module(("analysis/report.py",), (
        "tests/analysis/test_report_unit.py", "tests/analysis/test_report_tables.py",
        "tests/analysis/test_report_figures.py", "tests/analysis/test_report_clips.py",
        "tests/analysis/test_analysis_report.py::test_leaderboard_numbers_match_hand_computed_values")),
    "retry": Module(("bird/llm/retry.py",), ("tests/llm/test_wiring.py",)),
    "cache": Module(("bird/llm/cache.py",), ("tests/llm/test_cache_unit.py",)),
    "offline_mutation": Module(("bird/llm/offline/mutation.py",), ("tests/test_offline_mutation.py",)),
    "reward_worker": Module(("bird/reward/worker.py",), ("tests/reward/test_worker_forked.py",)),
    "reward_layers": Module(("bird/reward/isolation.py", "bird/reward/landlock.py", "bird/reward/seccomp_policy.py"),
                            ("tests/reward/test_isolation_layers.py", "tests/reward/test_isolation_unit.py")),
    "reward_static": Module(("bird/reward/static.py",),
                            ("tests/reward/test_static_unit.py", "tests/security/test_static_controls.py")),
    "reward_channel": Module(("bird/reward/protocol.py",), ("tests/reward/test_channel_and_wall_unit.py",)),
    "reward_pywall": Module(("bird/reward/pywall.py",), ("tests/reward/test_channel_and_wall_unit.py",)),
    "registry": Module(("bird/registry.py",), ("tests/test_registry.py",)),
    "branch_detector": Module(("bird/method_branches.py",), ("tests/test_registry.py",)),
    # written since the run above (issue 44)
    "bundle_archive": Module(("bird/bundle/archive.py", "bird/bundle/reader.py"),
                             ("tests/bundle/test_archive_unit.py", "tests/bundle/test_unpack_staging.py",
                              *BUNDLE_TESTS)),
    "bundle_verify": Module(("bird/bundle/verify.py", "bird/bundle/transcript.py"),
                            ("tests/bundle/test_verify_unit.py", *BUNDLE_TESTS)),
    "bundle_compare": Module(("bird/bundle/compare.py",), ("tests/bundle/test_compare_unit.py", *BUNDLE_TESTS)),
    "bundle_pack": Module(("bird/bundle/pack.py",), ("tests/bundle/test_pack_unit.py", *BUNDLE_TESTS)),
    "bundle_replay": Module(("bird/bundle/replay.py",), ("tests/bundle/test_replay_unit.py",
                                                         "tests/bundle/test_bundle_tampering.py")),
    "jax_store": Module(("bird/learners/jax_executables.py",), (
        "tests/jaxpath/test_jax_store_unit.py", "tests/jaxpath/test_store_fingerprint.py",
        *(f"tests/jaxpath/test_jax_executables.py::test_{t}" for t in (
            "a_compiled_function_is_stored_then_loaded_instead_of_compiled",
            "a_reader_loads_from_the_store_and_adds_nothing_to_it", "a_torn_store_file_is_compiled_again_and_replaced",
            "the_compile_step_refuses_to_run_with_jaxs_persistent_cache",
            "a_stored_program_is_found_only_for_its_key_environment_and_bytes",
            "the_store_keeps_the_most_recently_used_programs",
            "a_stored_program_is_not_found_once_birds_source_changed")))),
    "jax_settings": Module(("bird/learners/jax_settings.py",), ("tests/jaxpath/test_jax_settings_unit.py", *(
        f"tests/jaxpath/test_jax_learner.py::test_settings_{t}" for t in (
            "take_the_command_line_then_the_task_table_then_brax_defaults",
            "shrink_the_rollout_batch_until_the_budget_affords_min_updates", "reject_what_brax_rejects")))),
    # the training program's pieces, called in the test process op by op (jax.disable_jit(): a traced function would
    # be traced once and cached, hiding later mutants) on a point env (tests/jaxpath/point_env.py); the group's
    # training (jax_ppo) runs its compiled program on that env behind a stand-in adapter
    "jax_core": Module(("bird/learners/jax_core.py", "bird/learners/jax_rewards.py"),
                       ("tests/jaxpath/test_jax_core_unit.py",)),
    "jax_ppo": Module(("bird/learners/jax_ppo.py",), ("tests/jaxpath/test_jax_ppo_unit.py",)),
    "jax_rollouts": Module(("bird/learners/jax_rollouts.py",), ("tests/jaxpath/test_jax_rollouts_unit.py",)),
    "programs": Module(("bird/learners/programs.py",), ("tests/jaxpath/test_programs_unit.py",)),
    # the host in the test process against a scripted stand-in for the trainer's WorkerProcess and a test clock
    # (test_trainer_host.py runs real trainers behind the real protocol, about 25 s a pass)
    "trainer_host": Module(("bird/learners/trainer_host.py",), ("tests/security/test_trainer_host_unit.py",)),
    "trainer_replies": Module(("bird/learners/trainer_replies.py", "bird/learners/jax_outputs.py"),
                              ("tests/security/test_trainer_replies_unit.py", "tests/security/test_reply_parsing.py",
                               "tests/test_jax_outputs.py",
                               "tests/security/test_trainer_host.py")),
    "culprit_search": Module(("bird/learners/jax_isolated.py",), ("tests/test_culprit_search.py",)),
    # the trainer process's side, run in the test process against a stand-in for the compiled training run
    # (_setup and compile_main build the real one: they run only in the trainer and its compile step)
    "trainer": Module(("bird/learners/trainer.py",), ("tests/security/test_trainer_protocol_unit.py",
                                                      "tests/security/test_reply_parsing.py")),
    # both checks on artefacts built in the test process (test_artefacts_unit.py), and a genuine one through the
    # inspector's checks; test_jax_export.py reaches them too (jax_export.load), for a few artefacts made in sandboxes
    "reward_artefacts": Module(("bird/reward/artefacts.py",), ("tests/jaxpath/test_artefacts_unit.py",
                                                               "tests/jaxpath/test_inspector_unit.py")),
    # the inspecting process's checks run in the test process (test_inspector_unit.py); the process itself, behind
    # the layers, in test_jax_export.py
    "inspector": Module(("bird/reward/inspector.py",), (
        "tests/jaxpath/test_inspector_unit.py",
        "tests/jaxpath/test_jax_export.py::test_inspector_and_trainer_reject_host_callbacks_corrupt_bytes_or_the_wrong_"
        "signature")),
    "extract": Module(("bird/reward/extract.py",), ("tests/llm/test_extract_rules_unit.py", "tests/llm/test_extract_unit.py",
                                                    "tests/llm/test_answer_corpus.py")),
    # the judge's tests of test_judged_feedback.py (its others cover the stages around it: summaries, subtasks, the gate)
    "judgement": Module(("bird/components/judgement.py",), (
        "tests/test_judgement_unit.py",
        *(f"tests/test_judged_feedback.py::test_{t}" for t in (
            "era_u_prompts_and_selection_never_depend_on_the_benchmark_score_or_reference_reward",
            "score_scales_normalise_to_unit_or_refuse", "judge_score_averages_valid_calls_over_rollouts_and_subtasks",
            "judge_score_is_none_when_no_call_is_valid",
            "judge_repeats_multiply_the_calls_and_the_prompt_shows_subtasks_and_keyframes",
            "vlm_judge_is_shown_the_keyframes_saved_with_the_candidate_rendered_once_per_rollout",
            "the_judge_never_sees_the_total_own_reward_so_a_scaled_total_gets_the_same_request",
            "the_judge_evidence_check_catches_a_total_shown_to_the_judge",
            "the_judge_is_asked_for_the_failure_cascade_rubric_in_subtask_order")),
        "tests/test_judge_rollout_replay.py::test_a_vlm_judge_replays_each_rollout_from_its_own_reset[rda-_judge_scores]")),
    "leaderboard_artefacts": Module(("analysis/artefacts.py",), ("tests/analysis/test_report_artefacts.py",)),
    # new in the round of issues 36-43 (issue 44: "and the new modules of this round's issues")
    "escape": Module(("bird/escape.py",), ("tests/received/test_escape_unit.py",)),
    "files": Module(("bird/files.py",), ("tests/received/test_files_unit.py", "tests/received/test_received_files.py")),
    "state_codec": Module(("bird/state_codec.py",), ("tests/security/test_state_codec_unit.py",
                                                     "tests/security/test_received_code.py")),
    "sealed": Module(("bird/sealed.py",), ("tests/security/test_sealed_unit.py", "tests/security/test_received_code.py")),
    "received": Module(("bird/config/received.py", "bird/config/received_task.py"), (
        "tests/security/test_received_unit.py", "tests/security/test_received_configs.py",
        "tests/security/test_received_tasks.py")),
    "secrets": Module(("bird/config/secrets.py",), ("tests/security/test_secrets_unit.py",)),
    "plugins": Module(("bird/plugins.py",), ("tests/test_plugins_unit.py", "tests/test_plugins.py")),
    "answer_text": Module(("bird/llm/content.py", "bird/llm/visible.py"), ("tests/llm/test_answer_text_unit.py",)),
    "reward_sources": Module(("bird/reward/sources.py",),
                             ("tests/llm/test_sources_unit.py", "tests/llm/test_extract_rules_unit.py",
                              "tests/llm/test_extract_unit.py", "tests/llm/test_answer_corpus.py")),
    "end_state": Module(("bird/completed.py",), ("tests/test_completed.py",)),
    "sweep_ledger": Module(("bird/llm/sweep.py",), ("tests/llm/test_sweep_ledger_unit.py",
                                                    "tests/llm/test_sweep_caps.py::test_ledger_admits_exactly_the_cap_"
                                                    "across_processes")),
}


def _staged(path: str) -> str:
    """Where a repo path sits in the stage (the package as it installs: LAYOUT)."""
    top, _, rest = path.partition("/")
    return f"{LAYOUT[top]}/{rest}"
