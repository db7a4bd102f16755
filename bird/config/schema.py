"""Typed configuration schema. YAML in conf/ only sets values; every key lives here with its default."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from bird.config.search import AlignmentConfig, CrossoverConfig, IslandsConfig, TreeConfig

__all__ = [
    "BirdConfig",
    "EnvConfig",
    "TaskFileConfig",
    "GenerateConfig",
    "VerifyConfig",
    "TrainConfig",
    "JaxPPOConfig",
    "FeedbackConfig",
    "SelectConfig",
    "LoopConfig",
    "DemosConfig",
    "DecomposeConfig",
    "RewardConfig",
    "FinalConfig",
    "LLMConfig",
    "JudgeConfig",
    "BudgetConfig",
    "RunConfig",
    "ResourcesConfig",
    "RayConfig",
    "VideoConfig",
    "TrackerConfig",
]


@dataclass
class TaskFieldConfig:
    """One named slice of a task file's flat observation (docs/task_files.md)."""

    # the name a reward program reads: obs["<name>"]
    name: str = MISSING
    # [start, stop) of the flat observation
    slice: list[int] = MISSING
    # what it measures: position | velocity | angle | angular_velocity | angle_cos | angle_sin | quaternion | goal |
    # gripper | contact | position_delta | other (prompts, the class abstraction, the offline synthesiser read it)
    kind: str = "other"
    unit: str = ""
    # the world axis of a position or velocity: x | y | z | xy | xyz | ""
    axis: str = ""
    description: str = ""


@dataclass
class TaskScoreConfig:
    """A task file's benchmark score: score = (episode quantity - random) / scale."""

    # the episode quantity: return (the reference reward's) | displacement | survival | final_distance | info | function
    kind: str = MISSING
    # displacement, final_distance, info: the info key read each step (e.g. x_position)
    info_key: str | None = None
    # displacement, final_distance: an observation field read instead of an info key
    field: str | None = None
    # info: how the per-step values make the quantity: sum | mean | last | max | min | any
    reduce: str = "sum"
    # function: "module:function" (episode -> float), over the episode record of bird/envs/gym/episode.py
    function: str | None = None
    # the quantity negated (lower is better: e.g. displacement along -x)
    negate: bool = False
    # what the score measures, for people and result.json (never shown to a generator)
    definition: str = MISSING
    # the uniform-random policy's mean quantity (python -m bird.envs anchor TASK); null = not measured (check fails)
    random: float | None = None
    # divisor; null = the kind's rule: displacement horizon * dt, survival horizon - random, else |random| (or 1)
    scale: float | None = None


@dataclass
class TaskSuccessConfig:
    """A task file's success flag: an info key (truthy = success) or a "module:function" (obs, info) -> bool."""

    info_key: str | None = None
    function: str | None = None


@dataclass
class TaskWrapperConfig:
    """A gymnasium wrapper applied to the env, "module:Class" with keyword arguments (innermost first)."""

    target: str = MISSING
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class TaskSourceConfig:
    """What a generator may see of the env's code (generate.env_representation)."""

    # views offered beyond obs_index and class_abstraction: full_source | obs_code (empty: no code is shown)
    show: list[str] = field(default_factory=list)
    # the file full_source shows: a module name or a .py path (null: the module of the env's class)
    file: str | None = None
    # names removed from that file (functions, methods, attributes, assignments, dict keys) with what reads them;
    # names holding "rew" or "cost" are removed always
    remove: list[str] = field(default_factory=list)
    # the env-class method obs_code shows
    obs_method: str = "_get_obs"


@dataclass
class TaskHiddenConfig:
    """What the leak audit must keep out of every prompt, besides the reward names read from the source."""

    names: list[str] = field(default_factory=list)
    # numbers a prompt must never compare against (e.g. a success threshold)
    thresholds: list[float] = field(default_factory=list)


@dataclass
class TaskFileConfig:
    """A task of the gym suite, written as a file (conf/env/gym/<task>.yaml; docs/task_files.md)."""

    # the env: a registered Gymnasium id (Pendulum-v1) or "module:Class"
    make: str = MISSING
    # keyword arguments of the env's constructor
    kwargs: dict[str, Any] = field(default_factory=dict)
    wrappers: list[TaskWrapperConfig] = field(default_factory=list)
    # the observation's named slices; empty = derived from the space (Box: obs_0.., Dict: one per key)
    fields: list[TaskFieldConfig] = field(default_factory=list)
    # new names for derived fields: {derived name: name}
    rename: dict[str, str] = field(default_factory=dict)
    score: TaskScoreConfig = field(default_factory=TaskScoreConfig)
    success: TaskSuccessConfig | None = None
    # the task's reference reward: env (the env's own step reward) | none (no published reward: native and
    # reference_return are refused) | "module:function" (obs, action, next_obs, info) -> float
    reference_reward: str = "env"
    source: TaskSourceConfig = field(default_factory=TaskSourceConfig)
    hidden: TaskHiddenConfig = field(default_factory=TaskHiddenConfig)
    # a scripted expert policy (expert demonstrations): "module:function", called with no arguments, returns a policy
    # obs -> action; null = none (demonstrations then come from a PPO expert on the reference reward, where there is one)
    expert: str | None = None


@dataclass
class EnvConfig:
    # task id, "<suite>/<task>", e.g. "mujoco/hopper"
    id: str = MISSING
    # task text given to generators
    description: str = MISSING
    # episode length limit (steps)
    horizon: int = 1000
    # physics backend, for suites that have several (brax: generalized | positional | spring | mjx); None = the task's default
    backend: str | None = None
    # the task file of a gym-suite task (env/gym/<task>.yaml); null for the suites with their own adapters
    task: TaskFileConfig | None = None


@dataclass
class GenerateConfig:
    # reward programs requested per iteration (K)
    n_candidates: int = 8
    # candidates per iteration over the search: registry family schedule (constant | taper | ramp | explicit)
    schedule: str = "constant"
    # schedule=explicit: the count of each iteration
    schedule_values: list[int] = field(default_factory=list)
    # prompt template set: methods/<name>/ or a variant methods/<name>/<variant>/ (its files override the method's)
    prompt: str = "eureka"
    # how the env is shown: registry family env_representation
    env_representation: str = "obs_code"
    # how observation fields are shown (prompt and context): registry family field_view (described | bare)
    field_view: str = "described"
    # which earlier candidate the next prompt builds on: registry family parent
    parent: str = "iteration_best"
    # prompt memory: registry family history
    history: str = "last_iteration"
    # dialogue turns kept by the history (a turn = one assistant answer + one user feedback message)
    history_turns: int = 1
    # sampling temperature
    temperature: float = 1.0
    # max tokens per answer
    max_tokens: int = 4096
    # re-asks of an answer the provider stopped early (failure kinds truncated: cut at max_tokens, with a note asking
    # for a shorter answer; incomplete: a content filter, a tool call, an unknown stop reason); 0 = record the failure
    # [ours: no published method handles a cut answer]
    truncation_retries: int = 1
    # max_tokens of such a re-ask (None = generate.max_tokens); a higher value where the model and budget allow
    truncation_max_tokens: int | None = None
    # re-asks, through generate.repair with a note naming them, of an answer that offers several materially
    # different programs (failure kind ambiguous_answer); 0 = record the failure [ours]
    ambiguity_retries: int = 1
    # blind resamples of the same prompt for an answer that fails as `resample_on` says (0 = record the failure)
    parse_retries: int = 0
    # failure kinds that trigger a blind resample (verify-check kinds make generate run the checks itself)
    resample_on: list[str] = field(default_factory=lambda: ["parse_error"])
    # softmax temperature of generate.parent=softmax_fitness (p ∝ exp(fitness / T))
    parent_temperature: float = 1.0
    # how a mutation prompt shows the parent's feedback: registry family mutation_view
    mutation_view: str = "feedback_text"
    # a design thought with each answer: registry family design_thought (none | inline_brace: one sentence in braces)
    design_thought: str = "none"
    # show the parent's design thought (aligned, when feedback.thought_alignment) next to its feedback
    parent_thought: bool = False
    # show the judge's per-subtask account of how the parent's policy behaved (BIRD choice (2))
    behavioural_analysis: bool = False
    # how earlier turns reach the prompt: registry family prompt_mode (dialogue: as messages | replace: one user
    # message rebuilt each iteration from the search state)
    prompt_mode: str = "dialogue"
    # how the iteration's samples are planned (operator and parents per sample): registry family sampling
    sampling: str = "iid"
    # generate.sampling=evolutionary_operators: chance that a sample is a crossover of two parents
    crossover_rate: float = 0.0
    # what a resample after a failed answer shows: registry family repair (blind | with_trace)
    repair: str = "blind"
    # how the program is asked for: registry family answer_form (text: read from the answer's text | tool: the
    # argument of a tool call the model is made to make, no text parsed [ours])
    answer_form: str = "text"
    # suites the method's prompts are written for (empty = any); another suite is refused before the run
    suites: list[str] = field(default_factory=list)


@dataclass
class VerifyConfig:
    # checks in order; registry family check
    checks: list[str] = field(default_factory=lambda: ["static", "smoke"])
    # screens after the checks, in order; registry family screen (a screen failure = kind screened, no training)
    screens: list[str] = field(default_factory=list)
    # TPE screen: pass when at least this fraction of successful stored trajectories outscore the best failed one
    tpe_threshold: float = 0.8
    # TPE screen: an episode counts as successful when its benchmark score is at least this
    tpe_success_score: float = 1.0
    # transitions in the smoke run
    smoke_steps: int = 64
    # wall-clock limit for one reward-program call in the sandbox (s)
    call_timeout_s: float = 5.0
    # address-space limit of the sandbox worker (MiB)
    memory_mb: int = 2048
    # progress screen (progress_program contract): |Φ| must stay below this on the smoke batch and expert rollout
    progress_bound: float = 100.0
    # progress screen: largest downward share of Φ's variation along the expert ("roughly non-decreasing")
    progress_max_drop_fraction: float = 0.1
    # progress screen: scripted-expert episodes replayed (suites without a scripted expert skip this part)
    progress_expert_episodes: int = 1
    # demo_margin screen: episodes of each demonstration policy (scripted expert, uniform random)
    demo_episodes: int = 2


@dataclass
class ResourcesConfig:
    """What one training reserves (Ray task resources; the local pool runs cores // num_cpus at once)."""

    num_cpus: float = 1.0
    num_gpus: float = 0.0


@dataclass
class JaxPPOConfig:
    """train.learner=jax_ppo hyper-parameters (Brax ppo.train names). None = the task's published Brax setting
    (`tasks` in conf/trainer/jax_ppo.yaml), else Brax's ppo.train default; bird/learners/jax_settings.py resolves."""

    num_envs: int | None = None
    unroll_length: int | None = None
    batch_size: int | None = None
    num_minibatches: int | None = None
    num_updates_per_batch: int | None = None
    learning_rate: float | None = None
    entropy_cost: float | None = None
    discounting: float | None = None
    gae_lambda: float | None = None
    clipping_epsilon: float | None = None
    reward_scaling: float | None = None
    normalize_observations: bool | None = None
    action_repeat: int | None = None
    max_grad_norm: float | None = None
    policy_hidden_layer_sizes: list[int] | None = None
    value_hidden_layer_sizes: list[int] | None = None
    # scale the rollout batch down (num_envs, batch_size, then num_minibatches) until a training has this many updates
    min_updates: int = 50
    # per-task published settings: {task: {key: value}} (conf/trainer/jax_ppo.yaml)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the isolated trainer (docs/security.md): its memory in MiB (RLIMIT_AS on a CPU, plus a cgroup memory limit where
    # the machine offers one; 0 = none), and its wall-clock limits in s: compiling the training program (trusted
    # code, before any reward program arrives), and each PPO update with its evaluation (the watchdog)
    trainer_memory_mb: int = 16384
    compile_timeout_s: float = 1800.0
    update_timeout_s: float = 600.0


@dataclass
class TrainConfig:
    # registry family learner
    learner: str = "sb3_ppo"
    # where trainings run: registry family executor (local | ray)
    executor: str = "local"
    # cores and GPUs reserved per training
    resources: ResourcesConfig = field(default_factory=ResourcesConfig)
    # "candidate" trains on the generated reward; "reference" on the env's shipped reward (oracle)
    reward_source: str = "candidate"
    # parallel trainings (0 = one per core)
    workers: int = 0
    # how the local executor starts its workers: forkserver (forked from one process that imported the learners once)
    # or spawn (each worker imports them itself: the baseline of bench/bench_pool_start.py)
    start_method: str = "forkserver"
    # wall-clock limit for one training (s); 0 = none
    timeout_s: float = 0.0
    # deterministic episodes of the trained policy recorded after training (rollouts.npz; the trajectory store)
    collect_episodes: int = 0
    # evaluation and collected episodes end at the first step the success flag is set (suites with a flag)
    eval_end_on_success: bool = False
    # parallel envs per training (None = budget.n_envs): trainer=sb3_tuned sets 8
    n_envs: int | None = None
    # PPO hyper-parameters (SB3 names); None keeps SB3's default
    learning_rate: float = 3e-4
    n_steps: int = 256
    batch_size: int = 64
    n_epochs: int = 10
    gamma: float = 0.99
    gae_lambda: float = 0.95
    ent_coef: float = 0.0
    clip_range: float = 0.2
    net_arch: list[int] = field(default_factory=lambda: [64, 64])
    # normalise observations / rewards with VecNormalize
    normalize_obs: bool = True
    normalize_reward: bool = True
    # what is appended to the policy's observation: registry family obs_augment (needs the progress_program contract)
    obs_augment: str = "none"
    # train.learner=jax_ppo: its own hyper-parameters (conf/trainer/jax_ppo.yaml)
    jax: JaxPPOConfig = field(default_factory=JaxPPOConfig)
    # which checkpoint's parameters a training ships: registry family checkpoint_selection (final | best_own_return)
    checkpoint_selection: str = "final"
    # stop a training early on its own reward: registry family early_stop (none | plateau)
    early_stop: str = "none"
    # early_stop=plateau: checkpoints without improvement, the improvement (fraction of the own-return range) that
    # counts, and the checkpoints before it may stop
    early_stop_patience: int = 4
    early_stop_min_delta: float = 0.02
    early_stop_min_checkpoints: int = 5


@dataclass
class FeedbackConfig:
    # what ranks candidates: registry family fitness
    fitness: str = "benchmark_score"
    # how a curve becomes one number: registry family aggregate
    aggregate: str = "max"
    # feedback text: registry family feedback_format
    format: str = "eureka"
    # values per curve shown to the generator
    curve_points: int = 10
    # show the benchmark score (task_score) in the feedback; only methods whose paper does so may set this
    show_score: bool = False
    # what task_score shows: benchmark_score | reference_return | native (the suite's native signal: the shipped
    # reward's return on MuJoCo and Brax, the success-flag score on Meta-World)
    score_shown: str = "benchmark_score"
    # feedback text for a screened (untrained) candidate: registry family feedback_format; None = no feedback
    screened_format: str | None = None
    # extra fitness components computed and recorded, never ranked on: registry family fitness
    report_metrics: list[str] = field(default_factory=list)
    # trajectory feedback: one row every this many steps
    trajectory_stride: int = 100
    # misscored-demos feedback: wrong examples shown per prompt
    n_wrong_examples: int = 8
    # misscored-demos view: chance to append a whole expert trajectory (GRACE App. A.4 Table 6)
    p_expert_trajectory: float = 0.25
    # misscored-demos view: chance to show only the misscored states instead of their whole trajectories
    p_incorrect_state_only: float = 0.5
    # misscored-demos view: chance to show only an expert trajectory's goal states (when one is appended)
    p_expert_state_only: float = 0.75
    # judge format, mode vlm: keyframes rendered from each collected rollout
    judge_keyframes: int = 8
    # after training, the judge re-describes each reward from its code; that thought replaces the stated one
    thought_alignment: bool = False
    # an LLM pass that condenses each candidate's feedback before it is shown: registry family summarisation
    # (none | per_candidate | per_candidate_per_subtask)
    summarisation: str = "none"
    # ask the generator to rate each trained reward in [-1, 1] from its feedback (stored, used by the search tree)
    self_verify: bool = False


@dataclass
class SelectConfig:
    # who carries forward: registry family select
    rule: str = "argmax"
    # which candidate the search returns: registry family returned
    returned: str = "global_best"
    # survivors kept by select.rule=mu_plus_lambda (None = the plan's K)
    population_size: int | None = None
    # the iteration's pick replaces the incumbent (the current parent) only when its fitness is strictly higher
    require_improvement_over_incumbent: bool = False


@dataclass
class LoopConfig:
    # iterations (T)
    iterations: int = 5
    # the last iteration's candidates are screened, trained and given feedback (False: only generated and checked)
    feedback_on_last: bool = True


@dataclass
class DemosConfig:
    """Demonstrations as a search input (loaded at init when enabled)."""

    enabled: bool = False
    # expert (positive) and negative trajectories
    n_expert: int = 8
    n_negative: int = 8
    # where negatives come from: "random" (uniform-random policy)
    negative_kind: str = "random"
    # where expert demonstrations come from: scripted (the task's scripted expert policy) | ppo (a PPO expert trained on
    # the task's reference reward for budget.expert_env_steps, cached with its training record) | auto (scripted where
    # the task has one, else ppo)
    expert: str = "auto"
    # training seed of the PPO expert (one cached expert per task, steps and seed, whatever the search's seed)
    expert_seed: int = 0
    # demo set seed (episode i resets with seed 1000 * seed + i)
    seed: int = 0
    # which expert states are positives: registry family positive_states (all | last_state | goal_identified)
    positive_states: str = "all"
    # expert states that are not positives become negatives (else they are dropped)
    unidentified_as_negative: bool = True
    # expert trajectories shown in an initial prompt
    n_shown: int = 2
    # one row in every this many steps when a trajectory is shown
    stride: int = 25
    # fraction of episodes (per kind) held out as the test split (used when max_train is null)
    test_fraction: float = 0.25
    # train-split trajectories, expert and negative together (half each); the rest is the test split (null: test_fraction)
    max_train: int | None = None
    # train-split expert / negative trajectories on their own (null: half of max_train); GRACE Fig. 4 varies them
    max_train_expert: int | None = None
    max_train_negative: int | None = None
    # every this many iterations, train the global best and add its rollouts to the negatives (0 = never)
    rl_every: int = 0


@dataclass
class DecomposeConfig:
    """Task decomposition asked once before the first generation (registry family decompose)."""

    # none | tag_graph | subtask_list
    kind: str = "none"
    # subtask_list: revise the list after each iteration from the feedback shown (co-evolution)
    co_evolve: bool = False
    # subtask_list: how many subtasks to ask for (None = the generator decides: about 5 for a simple task, about 10 for a
    # long one, at most 12)
    n_subtasks: int | None = None
    # few-shot (task -> graph) examples shown, from methods/<generate.prompt>/decompose_example_*.txt (0 = zero-shot)
    n_examples: int = 2
    # blind re-asks when the answer is not a valid graph (then the search goes on without one, recorded)
    retries: int = 1


@dataclass
class RewardConfig:
    # the program contract: registry family contract (compute_reward | reward_class | progress_program)
    contract: str = "compute_reward"
    # how the harness turns the program's output into the training reward: registry family reward_form
    form: str = "direct"
    # r_bonus of the success indicator in reward forms that use it (the flag comes from the env, never the program)
    success_bonus: float = 1.0
    # what programs are written against: numpy | jax (traced to StableHLO for train.learner=jax_ppo); None = the
    # learner's (jax for jax_ppo, else numpy), filled in when the config is loaded
    language: str | None = None


@dataclass
class FinalConfig:
    # retrain the returned reward from scratch on fresh seeds
    retrain: bool = True
    # seeds of the final retrain: the method's own count, capped by budget.final_seeds (None = budget.final_seeds)
    seeds: int | None = None
    # first seed offset (fresh seeds: never those used in the loop)
    seed_offset: int = 1000
    # learner of the final retrain (None = train.learner)
    learner: str | None = None


@dataclass
class TransferConfig:
    # unseen tasks the returned policy is evaluated on, unchanged, after the final retrain (PRM4RL App. B.1;
    # +protocol=prm4rl_generalisation): source env id -> env ids of its unseen tasks; a run evaluates the list of its own
    # env.id ({} = no transfer evaluation). On the command line: transfer.tasks={metaworld/push:[metaworld/push_wall]}
    tasks: dict[str, list[str]] = field(default_factory=dict)
    # evaluation episodes per unseen task and final seed (PRM4RL App. B.1: 100 per seed)
    episodes: int = 100


@dataclass
class LLMConfig:
    # registry family llm: offline | anthropic | openai
    backend: str = "offline"
    # model name sent to the provider
    model: str = "bird-offline-synth-v1"
    # OpenAI-compatible server address (vLLM, llama.cpp, Ollama); None = provider default
    base_url: str | None = None
    # env var holding the API key (None = the provider's usual one)
    api_key_env: str | None = None
    # concurrent requests
    max_concurrency: int = 4
    # sampling temperature sent to the model; None = the method's (generate.temperature)
    temperature: float | None = None
    # how much the model reasons before it answers: none (no reasoning parameter sent) | low | medium | high | xhigh |
    # max, sent in the provider's own form (docs/llm.md: Anthropic adaptive thinking, OpenAI reasoning_effort)
    reasoning_effort: str = "none"
    # retries on 429/5xx/timeouts before a candidate is recorded as llm_error
    max_retries: int = 6
    # first retry wait (s), doubled each retry with jitter; Retry-After from the server wins
    retry_base_s: float = 1.0
    # longest single retry wait (s), also caps Retry-After
    retry_max_s: float = 60.0
    # per-request timeout (s)
    timeout_s: float = 120.0
    # abort the search when retries are exhausted (False = record llm_error and go on)
    abort_on_error: bool = False
    # response cache: off | readwrite | record | replay
    cache: str = "readwrite"
    # cache directory (shared by all runs of a machine); None = ~/.cache/bird/llm
    cache_dir: str | None = None
    # sync: one HTTP call per request | batch: each wave's independent requests as one provider batch (OpenAI Batch
    # API, Anthropic Message Batches) at the batch price, polled every batch_poll_s; the same requests and answers,
    # later: no method's protocol changes (docs/llm.md, "Batch mode")
    mode: str = "sync"
    batch_poll_s: float = 30.0
    # mark the stable prefix of each request for the provider's prompt cache (Anthropic cache_control; OpenAI caches
    # on its own): cached input tokens are recorded and priced as such (docs/llm.md, "Prompt caching")
    prompt_cache: bool = True
    # requests in flight at once across the cells of a sweep on one machine (None = no limit; docs/llm.md)
    sweep_max_concurrency: int | None = None
    # USD per million tokens, a mapping of input, output, cached_input, cache_write, batch (checked when the backend is
    # built); None = the price table's entry for llm.backend and llm.model (conf/llm/prices/<backend>.yaml). Typed Any:
    # OmegaConf cannot merge a mapping given on the command line into a typed optional dict
    price_per_mtok: Any = None


@dataclass
class JudgeConfig:
    """The judge/evaluator role of later methods. Every None inherits the generator's value (llm.*)."""

    # registry family llm; None = llm.backend
    backend: str | None = None
    # None = llm.model (when the backend is inherited too)
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    # temperature of judge calls; None = the generator's (llm.temperature, else generate.temperature)
    temperature: float | None = None
    # None = llm.reasoning_effort
    reasoning_effort: str | None = None
    max_concurrency: int | None = None
    price_per_mtok: Any = None  # as llm.price_per_mtok; None = llm.price_per_mtok when the model is inherited
    # what the judge reads: vlm (keyframes as images) | state_text (per-step state summaries; a labelled substitute)
    mode: str = "state_text"
    # judge scores: registry family score_scale (unit: a number in [0, 1] | three_point: 0 / 1 / 2), normalised to [0, 1]
    score_scale: str = "unit"
    # independent judgements of each rollout, averaged
    repeats: int = 1
    # collected rollouts of each trained policy the judge scores (train.collect_episodes is raised to this)
    rollouts: int = 1
    # the judge also reads a state table (every feedback.trajectory_stride steps) besides the keyframes
    state_table: bool = False


@dataclass
class BudgetConfig:
    # name, recorded in result.json
    name: str = "demo"
    # own: each method's published values; matched: the values BIRD's matched runs used, where a method config says
    # so with ${if_matched:<matched value>,<own value>}
    protocol: str = "own"
    # env steps per candidate training
    env_steps: int = 20_000
    # parallel envs per training
    n_envs: int = 4
    # evaluations along each training
    n_checkpoints: int = 4
    # evaluation episodes per checkpoint
    eval_episodes: int = 4
    # caps on the method's K and T (None = the method's own value)
    max_candidates: int | None = None
    max_iterations: int | None = None
    # env steps of the final retrain (None = env_steps)
    final_env_steps: int | None = None
    # seeds of the final retrain
    final_seeds: int = 1
    # env steps of a PPO expert trained for demonstrations (demos.expert=ppo); BIRD's scripts/train_expert.py: ~1M
    expert_env_steps: int = 1_000_000
    # in-loop policy trainings after which the search stops cleanly (None = no cap; the final retrain is not counted)
    max_policy_trainings: int | None = None
    # LLM calls / spend after which generation stops and the search finishes with what it has (None = no cap)
    max_llm_calls: int | None = None
    max_cost_usd: float | None = None
    # the same, for every cell of a sweep together (calls that reach a provider; a cache hit is free): cells stop
    # generating once the sweep's ledger reaches it (None = no cap; docs/llm.md "Before a real sweep")
    sweep_max_llm_calls: int | None = None
    sweep_max_cost_usd: float | None = None


@dataclass
class RunConfig:
    # print live progress and the table of candidates at the end (false: only the one-line summary at the end)
    progress: bool = True
    # save the final policy of every candidate
    save_policies: bool = False
    # skip the search when its run directory already holds a completed result of the same config (sweep re-runs)
    skip_completed: bool = True
    # continue from the run directory's last checkpointed iteration after a crash (False = start over)
    resume: bool = True


@dataclass
class RayConfig:
    """Ray for train.executor=ray: attach to a cluster, or start a local one."""

    # "auto" (the cluster this node belongs to), "ray://host:10001", or None = start a local Ray
    address: str | None = None
    # cores of a local Ray (None = all of this machine's)
    num_cpus: int | None = None
    # object store of a local Ray in MiB (None = Ray's default)
    object_store_mb: int | None = None
    # serve the Ray dashboard from a local Ray
    include_dashboard: bool = False


@dataclass
class VideoConfig:
    """MP4 clips of trained policies' evaluation episodes (bird/learners/video.py); rendering never runs in training."""

    # none | returned (the final retrain's seeds) | all_candidates (also each trained candidate, every `every` iterations)
    record: str = "returned"
    # all_candidates: film the candidates of every this-many-th iteration (and of the last)
    every: int = 1
    # evaluation episodes filmed per policy (episode k replays evaluation episode k: same reset seed, same score)
    episodes: int = 1
    width: int = 320
    height: int = 240
    # render every this-many-th env step (playback stays real time: fps = 1 / (dt * frame_skip))
    frame_skip: int = 2
    # shadows and reflections (off: 2-4x cheaper with software GL)
    shadows: bool = False
    # burn task text and score into the frames (off: clean clips for blind human rating; both live in the .json)
    caption: bool = False


@dataclass
class TrackerConfig:
    """Experiment tracker (registry family tracker): none | tensorboard | wandb | mlflow (bird/tracking/)."""

    backend: str = "none"
    # W&B project / MLflow experiment name
    project: str = "bird"
    # where logs go; None = inside the run directory (tensorboard/, wandb/, mlruns/)
    dir: str | None = None
    # MLflow tracking URI; None = a local file store at <dir or run dir>/mlruns
    uri: str | None = None
    # W&B mode: offline (default, no network; `wandb sync` later) | online | disabled
    mode: str = "offline"
    # upload the returned policy's clips where the tracker takes videos
    log_videos: bool = True


@dataclass
class BirdConfig:
    seed: int = 0
    # method name, set by the method group (recorded, never branched on)
    method: str = MISSING
    # the design choices (conf/choice/ and the user config path's choice/) the composition includes: those the method
    # file lists in its defaults and +choice=... flips (filled in when the config is composed; recorded)
    choices: list[str] = field(default_factory=list)
    # modules imported after bird's own, whose import registers components (docs/extending.md); recorded in
    # result.json with each module's version and file hash
    plugins: list[str] = field(default_factory=list)
    # substitutes for something a paper used, named in result.json
    substitutes: list[str] = field(default_factory=list)
    env: EnvConfig = field(default_factory=EnvConfig)
    generate: GenerateConfig = field(default_factory=GenerateConfig)
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    feedback: FeedbackConfig = field(default_factory=FeedbackConfig)
    select: SelectConfig = field(default_factory=SelectConfig)
    loop: LoopConfig = field(default_factory=LoopConfig)
    demos: DemosConfig = field(default_factory=DemosConfig)
    decompose: DecomposeConfig = field(default_factory=DecomposeConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    final: FinalConfig = field(default_factory=FinalConfig)
    transfer: TransferConfig = field(default_factory=TransferConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    run: RunConfig = field(default_factory=RunConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    video: VideoConfig = field(default_factory=VideoConfig)
    tracker: TrackerConfig = field(default_factory=TrackerConfig)
    islands: IslandsConfig = field(default_factory=IslandsConfig)
    tree: TreeConfig = field(default_factory=TreeConfig)
    crossover: CrossoverConfig = field(default_factory=CrossoverConfig)
    alignment: AlignmentConfig = field(default_factory=AlignmentConfig)
