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

    name: str = MISSING
    """the name a reward program reads: obs["<name>"]"""
    slice: list[int] = MISSING
    """[start, stop) of the flat observation"""
    kind: str = "other"
    """what it measures: position | velocity | angle | angular_velocity | angle_cos | angle_sin | quaternion |
    goal | gripper | contact | position_delta | other (prompts, the class abstraction, the offline
    synthesiser read it)"""
    unit: str = ""
    """its unit (m, rad/s, ...), shown to generators; empty = none given"""
    axis: str = ""
    """the world axis of a position or velocity: x | y | z | xy | xyz | ""."""
    description: str = ""
    """what it measures, in words, shown to generators"""


@dataclass
class TaskScoreConfig:
    """A task file's benchmark score: score = (episode quantity - random) / scale."""

    kind: str = MISSING
    """the episode quantity: return (the reference reward's) | displacement | survival | final_distance | info
    | function"""
    info_key: str | None = None
    """displacement, final_distance, info: the info key read each step (e.g. x_position)"""
    field: str | None = None
    """displacement, final_distance: an observation field read instead of an info key"""
    reduce: str = "sum"
    """info: how the per-step values make the quantity: sum | mean | last | max | min | any"""
    function: str | None = None
    """function: "module:function" (episode -> float), over the episode record of bird/envs/gym/episode.py"""
    negate: bool = False
    """the quantity negated (lower is better: e.g. displacement along -x)"""
    definition: str = MISSING
    """what the score measures, for people and result.json (never shown to a generator)"""
    random: float | None = None
    """the uniform-random policy's mean quantity (python -m bird.envs anchor TASK); null = not measured (check
    fails)"""
    scale: float | None = None
    """divisor; null = the kind's rule: displacement horizon * dt, survival horizon - random, else |random|
    (or 1)"""


@dataclass
class TaskSuccessConfig:
    """A task file's success flag: an info key (truthy = success) or a "module:function" (obs, info) -> bool."""

    info_key: str | None = None
    """the info key whose truthy value is success"""
    function: str | None = None
    """a "module:function" (obs, info) -> bool deciding success"""


@dataclass
class TaskWrapperConfig:
    """A gymnasium wrapper applied to the env, "module:Class" with keyword arguments (innermost first)."""

    target: str = MISSING
    """the wrapper class, "module:Class"."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """keyword arguments of the wrapper's constructor"""


@dataclass
class TaskSourceConfig:
    """What a generator may see of the env's code (generate.env_representation)."""

    show: list[str] = field(default_factory=list)
    """views offered beyond obs_index and class_abstraction:
    full_source | obs_code (empty: no code is shown)"""
    file: str | None = None
    """the file full_source shows: a module name or a .py path (null: the module of the env's class)"""
    remove: list[str] = field(default_factory=list)
    """names removed from that file (functions, methods, attributes, assignments, dict keys) with what reads
    them; names holding "rew" or "cost" are removed always"""
    obs_method: str = "_get_obs"
    """the env-class method obs_code shows"""


@dataclass
class TaskHiddenConfig:
    """What the leak audit must keep out of every prompt, besides the reward names read from the source."""

    names: list[str] = field(default_factory=list)
    """names (functions, variables, info keys) that must never appear in a prompt"""
    thresholds: list[float] = field(default_factory=list)
    """numbers a prompt must never compare against (e.g. a success threshold)"""


@dataclass
class TaskFileConfig:
    """A task of the gym suite, written as a file (conf/env/gym/<task>.yaml; docs/task_files.md)."""

    make: str = MISSING
    """the env: a registered Gymnasium id (Pendulum-v1) or "module:Class"."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """keyword arguments of the env's constructor"""
    wrappers: list[TaskWrapperConfig] = field(default_factory=list)
    """gymnasium wrappers applied to the env, innermost first"""
    fields: list[TaskFieldConfig] = field(default_factory=list)
    """the observation's named slices; empty = derived from the space (Box: obs_0.., Dict: one per key)"""
    rename: dict[str, str] = field(default_factory=dict)
    """new names for derived fields: {derived name: name}"""
    score: TaskScoreConfig = field(default_factory=TaskScoreConfig)
    """how the task's benchmark score is computed from an episode"""
    success: TaskSuccessConfig | None = None
    """the task's success flag; null = the task defines none"""
    reference_reward: str = "env"
    """the task's reference reward: env (the env's own step reward) | none (no published reward: native and
    reference_return are refused) | "module:function" (obs, action, next_obs, info) -> float"""
    source: TaskSourceConfig = field(default_factory=TaskSourceConfig)
    """what a generator may see of the env's code"""
    hidden: TaskHiddenConfig = field(default_factory=TaskHiddenConfig)
    """what the leak audit keeps out of every prompt"""
    expert: str | None = None
    """a scripted expert policy (expert demonstrations): "module:function", called with no arguments, returns
    a policy obs -> action; null = none (demonstrations then come from a PPO expert on the reference
    reward, where there is one)"""


@dataclass
class EnvConfig:
    id: str = MISSING
    """task id, "<suite>/<task>", e.g. "mujoco/hopper"."""
    description: str = MISSING
    """task text given to generators"""
    horizon: int = 1000
    """episode length limit (steps)"""
    backend: str | None = None
    """physics backend, for suites that have several (brax: generalized | positional | spring | mjx); None =
    the task's default"""
    task: TaskFileConfig | None = None
    """the task file of a gym-suite task (env/gym/<task>.yaml); null for the suites with their own adapters"""


@dataclass
class GenerateConfig:
    n_candidates: int = 8
    """reward programs requested per iteration (K)"""
    schedule: str = "constant"
    """candidates per iteration over the search: registry family
    schedule (constant | taper | ramp | explicit)"""
    schedule_values: list[int] = field(default_factory=list)
    """schedule=explicit: the count of each iteration"""
    prompt: str = "eureka"
    """prompt template set: methods/<name>/ or a variant methods/<name>/<variant>/ (its files override the
    method's)"""
    env_representation: str = "obs_code"
    """how the env is shown: registry family env_representation"""
    field_view: str = "described"
    """how observation fields are shown (prompt and context): registry family field_view (described | bare)"""
    parent: str = "iteration_best"
    """which earlier candidate the next prompt builds on: registry family parent"""
    history: str = "last_iteration"
    """prompt memory: registry family history"""
    history_turns: int = 1
    """dialogue turns kept by the history (a turn = one assistant answer + one user feedback message)"""
    temperature: float = 1.0
    """sampling temperature"""
    max_tokens: int = 4096
    """max tokens per answer"""
    truncation_retries: int = 1
    """re-asks of an answer the provider stopped early (failure kinds truncated: cut at max_tokens, with a
    note asking for a shorter answer; incomplete: a content filter, a tool call, an unknown stop reason); 0
    = record the failure [ours: no published method handles a cut answer]"""
    truncation_max_tokens: int | None = None
    """max_tokens of such a re-ask (None = generate.max_tokens); a higher value where the model and budget
    allow"""
    ambiguity_retries: int = 1
    """re-asks, through generate.repair with a note naming them, of an answer that offers several materially
    different programs (failure kind ambiguous_answer); 0 = record the failure [ours]"""
    parse_retries: int = 0
    """blind resamples of the same prompt for an answer that fails as `resample_on` says (0 = record the
    failure)"""
    resample_on: list[str] = field(default_factory=lambda: ["parse_error"])
    """failure kinds that trigger a blind resample (verify-check kinds make generate run the checks itself)"""
    parent_temperature: float = 1.0
    """softmax temperature of generate.parent=softmax_fitness (p ∝ exp(fitness / T))"""
    mutation_view: str = "feedback_text"
    """how a mutation prompt shows the parent's feedback: registry family mutation_view"""
    design_thought: str = "none"
    """a design thought with each answer: registry family design_thought (none | inline_brace: one sentence in
    braces)"""
    parent_thought: bool = False
    """show the parent's design thought (aligned, when feedback.thought_alignment) next to its feedback"""
    behavioural_analysis: bool = False
    """show the judge's per-subtask account of how the parent's policy behaved (BIRD choice (2))"""
    prompt_mode: str = "dialogue"
    """how earlier turns reach the prompt: registry family prompt_mode (dialogue: as messages | replace: one
    user message rebuilt each iteration from the search state)"""
    sampling: str = "iid"
    """how the iteration's samples are planned (operator and parents per sample): registry family sampling"""
    crossover_rate: float = 0.0
    """generate.sampling=evolutionary_operators: chance that a sample is a crossover of two parents"""
    repair: str = "blind"
    """what a resample after a failed answer shows: registry family repair (blind | with_trace)"""
    answer_form: str = "text"
    """how the program is asked for: registry family answer_form (text: read from the answer's text | tool:
    the argument of a tool call the model is made to make, no text parsed [ours])"""
    suites: list[str] = field(default_factory=list)
    """suites the method's prompts are written for (empty = any); another suite is refused before the run"""


@dataclass
class VerifyConfig:
    checks: list[str] = field(default_factory=lambda: ["static", "smoke"])
    """checks in order; registry family check"""
    screens: list[str] = field(default_factory=list)
    """screens after the checks, in order; registry family screen (a screen failure = kind screened, no
    training)"""
    tpe_threshold: float = 0.8
    """TPE screen: pass when at least this fraction of successful stored trajectories outscore the best failed
    one"""
    tpe_success_score: float = 1.0
    """TPE screen: an episode counts as successful when its benchmark score is at least this"""
    smoke_steps: int = 64
    """transitions in the smoke run"""
    call_timeout_s: float = 5.0
    """wall-clock limit for one reward-program call in the sandbox (s)"""
    memory_mb: int = 2048
    """address-space limit of the sandbox worker (MiB)"""
    progress_bound: float = 100.0
    """progress screen (progress_program contract): |Φ| must stay below this on the smoke batch and expert
    rollout"""
    progress_max_drop_fraction: float = 0.1
    """progress screen: largest downward share of Φ's variation along the expert ("roughly non-decreasing")"""
    progress_expert_episodes: int = 1
    """progress screen: scripted-expert episodes replayed (suites without a scripted expert skip this part)"""
    demo_episodes: int = 2
    """demo_margin screen: episodes of each demonstration policy (scripted expert, uniform random)"""


@dataclass
class ResourcesConfig:
    """What one training reserves (Ray task resources; the local pool runs cores // num_cpus at once)."""

    num_cpus: float = 1.0
    """cores one training reserves"""
    num_gpus: float = 0.0
    """GPUs (or a fraction of one) one training reserves"""


@dataclass
class JaxPPOConfig:
    """train.learner=jax_ppo hyper-parameters (Brax ppo.train names). None = the task's published Brax setting
    (`tasks` in conf/trainer/jax_ppo.yaml), else Brax's ppo.train default; bird/learners/jax_settings.py resolves."""

    num_envs: int | None = None
    """parallel envs of a training"""
    unroll_length: int | None = None
    """env steps per env in one rollout"""
    batch_size: int | None = None
    """rollouts per minibatch"""
    num_minibatches: int | None = None
    """minibatches per update epoch"""
    num_updates_per_batch: int | None = None
    """update epochs over each batch"""
    learning_rate: float | None = None
    """Adam learning rate"""
    entropy_cost: float | None = None
    """weight of the entropy bonus"""
    discounting: float | None = None
    """discount factor γ"""
    gae_lambda: float | None = None
    """GAE λ"""
    clipping_epsilon: float | None = None
    """PPO's clipping ε"""
    reward_scaling: float | None = None
    """factor the reward is multiplied by before the update"""
    normalize_observations: bool | None = None
    """running normalisation of observations"""
    action_repeat: int | None = None
    """env steps each action is repeated for"""
    max_grad_norm: float | None = None
    """gradient-norm clip (None: no clip)"""
    policy_hidden_layer_sizes: list[int] | None = None
    """hidden layer widths of the policy network"""
    value_hidden_layer_sizes: list[int] | None = None
    """hidden layer widths of the value network"""
    min_updates: int = 50
    """scale the rollout batch down (num_envs, batch_size, then num_minibatches) until a training has this
    many updates"""
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    """per-task published settings: {task: {key: value}} (conf/trainer/jax_ppo.yaml)"""
    trainer_memory_mb: int = 16384
    """memory of the isolated trainer (docs/security.md) in MiB: RLIMIT_AS on a CPU, plus a cgroup memory
    limit where the machine offers one; 0 = none"""
    compile_timeout_s: float = 1800.0
    """wall-clock limit (s) on compiling the training program in the trainer (trusted code, before any reward
    program arrives)"""
    update_timeout_s: float = 600.0
    """wall-clock limit (s) on each PPO update with its evaluation (the trainer's watchdog)"""


@dataclass
class TrainConfig:
    learner: str = "sb3_ppo"
    """registry family learner"""
    executor: str = "local"
    """where trainings run: registry family executor (local | ray)"""
    resources: ResourcesConfig = field(default_factory=ResourcesConfig)
    """cores and GPUs reserved per training"""
    reward_source: str = "candidate"
    """"candidate" trains on the generated reward; "reference" on the env's shipped reward (oracle)"""
    workers: int = 0
    """parallel trainings (0 = one per core)"""
    start_method: str = "forkserver"
    """how the local executor starts its workers: forkserver (forked from one process that imported the
    learners once) or spawn (each worker imports them itself: the baseline of bench/bench_pool_start.py)"""
    timeout_s: float = 0.0
    """wall-clock limit for one training (s); 0 = none"""
    collect_episodes: int = 0
    """deterministic episodes of the trained policy recorded after training (rollouts.npz; the trajectory
    store)"""
    eval_end_on_success: bool = False
    """evaluation and collected episodes end at the first step the success flag is set (suites with a flag)"""
    n_envs: int | None = None
    """parallel envs per training (None = budget.n_envs): trainer=sb3_tuned sets 8"""
    learning_rate: float = 3e-4
    """PPO learning rate (SB3 names, as all PPO keys below)"""
    n_steps: int = 256
    """rollout steps per env between updates"""
    batch_size: int = 64
    """minibatch size"""
    n_epochs: int = 10
    """update epochs per rollout"""
    gamma: float = 0.99
    """discount factor γ"""
    gae_lambda: float = 0.95
    """GAE λ"""
    ent_coef: float = 0.0
    """weight of the entropy bonus"""
    clip_range: float = 0.2
    """PPO's clipping range"""
    net_arch: list[int] = field(default_factory=lambda: [64, 64])
    """hidden layer widths of the policy and value networks"""
    normalize_obs: bool = True
    """normalise observations with VecNormalize"""
    normalize_reward: bool = True
    """normalise rewards (returns) with VecNormalize"""
    obs_augment: str = "none"
    """what is appended to the policy's observation: registry family obs_augment (needs the progress_program
    contract)"""
    jax: JaxPPOConfig = field(default_factory=JaxPPOConfig)
    """train.learner=jax_ppo: its own hyper-parameters (conf/trainer/jax_ppo.yaml)"""
    checkpoint_selection: str = "final"
    """which checkpoint's parameters a training ships: registry family checkpoint_selection (final |
    best_own_return)"""
    early_stop: str = "none"
    """stop a training early on its own reward: registry family early_stop (none | plateau)"""
    early_stop_patience: int = 4
    """early_stop=plateau: checkpoints without improvement before it stops"""
    early_stop_min_delta: float = 0.02
    """early_stop=plateau: the improvement that counts, as a fraction of the own-return range"""
    early_stop_min_checkpoints: int = 5
    """early_stop=plateau: checkpoints before it may stop"""


@dataclass
class FeedbackConfig:
    fitness: str = "benchmark_score"
    """what ranks candidates: registry family fitness"""
    aggregate: str = "max"
    """how a curve becomes one number: registry family aggregate"""
    format: str = "eureka"
    """feedback text: registry family feedback_format"""
    curve_points: int = 10
    """values per curve shown to the generator"""
    show_score: bool = False
    """show the benchmark score (task_score) in the feedback; only methods whose paper does so may set this"""
    score_shown: str = "benchmark_score"
    """what task_score shows: benchmark_score | reference_return | native (the suite's native signal: the
    shipped reward's return on MuJoCo and Brax, the success-flag score on Meta-World)"""
    screened_format: str | None = None
    """feedback text for a screened (untrained) candidate:
    registry family feedback_format; None = no feedback"""
    report_metrics: list[str] = field(default_factory=list)
    """extra fitness components computed and recorded, never ranked on: registry family fitness"""
    trajectory_stride: int = 100
    """trajectory feedback: one row every this many steps"""
    n_wrong_examples: int = 8
    """misscored-demos feedback: wrong examples shown per prompt"""
    p_expert_trajectory: float = 0.25
    """misscored-demos view: chance to append a whole expert trajectory (GRACE App. A.4 Table 6)"""
    p_incorrect_state_only: float = 0.5
    """misscored-demos view: chance to show only the misscored states instead of their whole trajectories"""
    p_expert_state_only: float = 0.75
    """misscored-demos view: chance to show only an expert trajectory's goal states (when one is appended)"""
    judge_keyframes: int = 8
    """judge format, mode vlm: keyframes rendered from each collected rollout"""
    thought_alignment: bool = False
    """after training, the judge re-describes each reward from its
    code; that thought replaces the stated one"""
    summarisation: str = "none"
    """an LLM pass that condenses each candidate's feedback before it is shown: registry family summarisation
    (none | per_candidate | per_candidate_per_subtask)"""
    self_verify: bool = False
    """ask the generator to rate each trained reward in [-1, 1] from its feedback (stored, used by the search
    tree)"""


@dataclass
class SelectConfig:
    rule: str = "argmax"
    """who carries forward: registry family select"""
    returned: str = "global_best"
    """which candidate the search returns: registry family returned"""
    population_size: int | None = None
    """survivors kept by select.rule=mu_plus_lambda (None = the plan's K)"""
    require_improvement_over_incumbent: bool = False
    """the iteration's pick replaces the incumbent (the current parent) only when its fitness is strictly
    higher"""


@dataclass
class LoopConfig:
    iterations: int = 5
    """iterations (T)"""
    feedback_on_last: bool = True
    """the last iteration's candidates are screened, trained and given feedback (False: only generated and
    checked)"""


@dataclass
class DemosConfig:
    """Demonstrations as a search input (loaded at init when enabled)."""

    enabled: bool = False
    """load demonstrations when the search starts (methods that infer rewards from demos)"""
    n_expert: int = 8
    """expert (positive) trajectories"""
    n_negative: int = 8
    """negative trajectories"""
    negative_kind: str = "random"
    """where negatives come from: "random" (uniform-random policy)"""
    expert: str = "auto"
    """where expert demonstrations come from: scripted (the task's scripted expert policy) | ppo (a PPO expert
    trained on the task's reference reward for budget.expert_env_steps, cached with its training record) |
    auto (scripted where the task has one, else ppo)"""
    expert_seed: int = 0
    """training seed of the PPO expert (one cached expert per task, steps and seed, whatever the search's
    seed)"""
    seed: int = 0
    """demo set seed (episode i resets with seed 1000 * seed + i)"""
    positive_states: str = "all"
    """which expert states are positives: registry family
    positive_states (all | last_state | goal_identified)"""
    unidentified_as_negative: bool = True
    """expert states that are not positives become negatives (else they are dropped)"""
    n_shown: int = 2
    """expert trajectories shown in an initial prompt"""
    stride: int = 25
    """one row in every this many steps when a trajectory is shown"""
    test_fraction: float = 0.25
    """fraction of episodes (per kind) held out as the test split (used when max_train is null)"""
    max_train: int | None = None
    """train-split trajectories, expert and negative together (half each); the rest is the test split (null:
    test_fraction)"""
    max_train_expert: int | None = None
    """train-split expert trajectories on their own (null: half of max_train); GRACE Fig. 4 varies them"""
    max_train_negative: int | None = None
    """train-split negative trajectories on their own (null: half of max_train); GRACE Fig. 4 varies them"""
    rl_every: int = 0
    """every this many iterations, train the global best and add its rollouts to the negatives (0 = never)"""


@dataclass
class DecomposeConfig:
    """Task decomposition asked once before the first generation (registry family decompose)."""

    kind: str = "none"
    """none | tag_graph | subtask_list"""
    co_evolve: bool = False
    """subtask_list: revise the list after each iteration from the feedback shown (co-evolution)"""
    n_subtasks: int | None = None
    """subtask_list: how many subtasks to ask for (None = the generator decides: about 5 for a simple task,
    about 10 for a long one, at most 12)"""
    n_examples: int = 2
    """few-shot (task -> graph) examples shown, from methods/<generate.prompt>/decompose_example_*.txt (0 =
    zero-shot)"""
    retries: int = 1
    """blind re-asks when the answer is not a valid graph (then the search goes on without one, recorded)"""


@dataclass
class RewardConfig:
    contract: str = "compute_reward"
    """the program contract: registry family contract (compute_reward | reward_class | progress_program)"""
    form: str = "direct"
    """how the harness turns the program's output into the training reward: registry family reward_form"""
    success_bonus: float = 1.0
    """r_bonus of the success indicator in reward forms that use it (the flag comes from the env, never the
    program)"""
    language: str | None = None
    """what programs are written against: numpy | jax (traced to StableHLO for train.learner=jax_ppo); None =
    the learner's (jax for jax_ppo, else numpy), filled in when the config is loaded"""


@dataclass
class FinalConfig:
    retrain: bool = True
    """retrain the returned reward from scratch on fresh seeds"""
    seeds: int | None = None
    """seeds of the final retrain: the method's own count, capped by budget.final_seeds (None =
    budget.final_seeds)"""
    seed_offset: int = 1000
    """first seed offset (fresh seeds: never those used in the loop)"""
    learner: str | None = None
    """learner of the final retrain (None = train.learner)"""


@dataclass
class TransferConfig:
    tasks: dict[str, list[str]] = field(default_factory=dict)
    """unseen tasks the returned policy is evaluated on, unchanged, after the final retrain (PRM4RL App. B.1;
    +protocol=prm4rl_generalisation): source env id -> env ids of its unseen tasks; a run evaluates the
    list of its own env.id ({} = no transfer evaluation). On the command line:
    transfer.tasks={metaworld/push:[metaworld/push_wall]}"""
    episodes: int = 100
    """evaluation episodes per unseen task and final seed (PRM4RL App. B.1: 100 per seed)"""


@dataclass
class LLMConfig:
    backend: str = "offline"
    """registry family llm: offline | anthropic | openai"""
    model: str = "bird-offline-synth-v1"
    """model name sent to the provider"""
    base_url: str | None = None
    """OpenAI-compatible server address (vLLM, llama.cpp, Ollama); None = provider default"""
    api_key_env: str | None = None
    """env var holding the API key (None = the provider's usual one)"""
    max_concurrency: int = 4
    """concurrent requests"""
    temperature: float | None = None
    """sampling temperature sent to the model; None = the method's (generate.temperature)"""
    reasoning_effort: str = "none"
    """how much the model reasons before it answers: none (no reasoning parameter sent) | low | medium | high
    | xhigh | max, sent in the provider's own form (docs/llm.md: Anthropic adaptive thinking, OpenAI
    reasoning_effort)"""
    max_retries: int = 6
    """retries on 429/5xx/timeouts before a candidate is recorded as llm_error"""
    retry_base_s: float = 1.0
    """first retry wait (s), doubled each retry with jitter; Retry-After from the server wins"""
    retry_max_s: float = 60.0
    """longest single retry wait (s), also caps Retry-After"""
    timeout_s: float = 120.0
    """per-request timeout (s)"""
    abort_on_error: bool = False
    """abort the search when retries are exhausted (False = record llm_error and go on)"""
    cache: str = "readwrite"
    """response cache: off | readwrite | record | replay"""
    cache_dir: str | None = None
    """cache directory (shared by all runs of a machine); None = ~/.cache/bird/llm"""
    mode: str = "sync"
    """sync: one HTTP call per request | batch: each wave's independent requests as one provider batch (OpenAI
    Batch API, Anthropic Message Batches) at the batch price, polled every batch_poll_s; the same requests
    and answers, later: no method's protocol changes (docs/llm.md, "Batch mode")"""
    batch_poll_s: float = 30.0
    """llm.mode=batch: seconds between polls of a provider batch"""
    prompt_cache: bool = True
    """mark the stable prefix of each request for the provider's prompt cache (Anthropic cache_control; OpenAI
    caches on its own): cached input tokens are recorded and priced as such (docs/llm.md, "Prompt caching")"""
    sweep_max_concurrency: int | None = None
    """requests in flight at once across the cells of a sweep on one machine (None = no limit; docs/llm.md)"""
    price_per_mtok: Any = None
    """USD per million tokens, a mapping of input, output, cached_input, cache_write, batch (checked when the
    backend is built); None = the price table's entry for llm.backend and llm.model
    (conf/llm/prices/<backend>.yaml). Typed Any: OmegaConf cannot merge a mapping given on the command line
    into a typed optional dict"""


@dataclass
class JudgeConfig:
    """The judge/evaluator role of later methods. Every None inherits the generator's value (llm.*)."""

    backend: str | None = None
    """registry family llm; None = llm.backend"""
    model: str | None = None
    """None = llm.model (when the backend is inherited too)"""
    base_url: str | None = None
    """as llm.base_url; None = llm.base_url when the backend is inherited"""
    api_key_env: str | None = None
    """as llm.api_key_env; None = llm.api_key_env when the backend is inherited"""
    temperature: float | None = None
    """temperature of judge calls; None = the generator's (llm.temperature, else generate.temperature)"""
    reasoning_effort: str | None = None
    """None = llm.reasoning_effort"""
    max_concurrency: int | None = None
    """concurrent judge requests; None = llm.max_concurrency"""
    price_per_mtok: Any = None
    """as llm.price_per_mtok; None = llm.price_per_mtok when the model is inherited"""
    mode: str = "state_text"
    """what the judge reads: vlm (keyframes as images) | state_text (per-step state summaries; a labelled
    substitute)"""
    score_scale: str = "unit"
    """judge scores: registry family score_scale (unit: a number in [0, 1] | three_point: 0 / 1 / 2),
    normalised to [0, 1]"""
    repeats: int = 1
    """independent judgements of each rollout, averaged"""
    rollouts: int = 1
    """collected rollouts of each trained policy the judge scores
    (train.collect_episodes is raised to this)"""
    state_table: bool = False
    """the judge also reads a state table (every feedback.trajectory_stride steps) besides the keyframes"""


@dataclass
class BudgetConfig:
    name: str = "demo"
    """name, recorded in result.json"""
    protocol: str = "own"
    """own: each method's published values; matched: the values BIRD's matched runs used, where a method
    config says so with ${if_matched:<matched value>,<own value>}"""
    env_steps: int = 20_000
    """env steps per candidate training"""
    n_envs: int = 4
    """parallel envs per training"""
    n_checkpoints: int = 4
    """evaluations along each training"""
    eval_episodes: int = 4
    """evaluation episodes per checkpoint"""
    max_candidates: int | None = None
    """cap on the method's K, candidates per iteration (None = the method's own value)"""
    max_iterations: int | None = None
    """cap on the method's T, iterations (None = the method's own value)"""
    final_env_steps: int | None = None
    """env steps of the final retrain (None = env_steps)"""
    final_seeds: int = 1
    """seeds of the final retrain"""
    expert_env_steps: int = 1_000_000
    """env steps of a PPO expert trained for demonstrations (demos.expert=ppo); BIRD's
    scripts/train_expert.py: ~1M"""
    max_policy_trainings: int | None = None
    """in-loop policy trainings after which the search stops cleanly (None = no cap; the final retrain is not
    counted)"""
    max_llm_calls: int | None = None
    """LLM calls after which generation stops and the search finishes with what it has (None = no cap)"""
    max_cost_usd: float | None = None
    """LLM spend (USD) after which generation stops and the
    search finishes with what it has (None = no cap)"""
    sweep_max_llm_calls: int | None = None
    """the same for every cell of a sweep together (calls that reach a provider; a cache hit is free): cells
    stop generating once the sweep's ledger reaches it (None = no cap; docs/llm.md "Before a real sweep")"""
    sweep_max_cost_usd: float | None = None
    """max_cost_usd for every cell of a sweep together, read from the sweep's ledger (None = no cap)"""


@dataclass
class RunConfig:
    progress: bool = True
    """print live progress and the table of candidates at the end (false: only the one-line summary at the
    end)"""
    save_policies: bool = False
    """save the final policy of every candidate"""
    skip_completed: bool = True
    """skip the search when its run directory already holds a completed result of the same config (sweep re-
    runs)"""
    resume: bool = True
    """continue from the run directory's last checkpointed iteration after a crash (False = start over)"""


@dataclass
class RayConfig:
    """Ray for train.executor=ray: attach to a cluster, or start a local one."""

    address: str | None = None
    """"auto" (the cluster this node belongs to), "ray://host:10001", or None = start a local Ray"""
    num_cpus: int | None = None
    """cores of a local Ray (None = all of this machine's)"""
    object_store_mb: int | None = None
    """object store of a local Ray in MiB (None = Ray's default)"""
    include_dashboard: bool = False
    """serve the Ray dashboard from a local Ray"""


@dataclass
class VideoConfig:
    """MP4 clips of trained policies' evaluation episodes (bird/learners/video.py); rendering never runs in training."""

    record: str = "returned"
    """none | returned (the final retrain's seeds) | all_candidates (also each trained candidate, every
    `every` iterations)"""
    every: int = 1
    """all_candidates: film the candidates of every this-many-th iteration (and of the last)"""
    episodes: int = 1
    """evaluation episodes filmed per policy (episode k replays evaluation episode k: same reset seed, same
    score)"""
    width: int = 320
    """frame width in pixels"""
    height: int = 240
    """frame height in pixels"""
    frame_skip: int = 2
    """render every this-many-th env step (playback stays real time: fps = 1 / (dt * frame_skip))"""
    shadows: bool = False
    """shadows and reflections (off: 2-4x cheaper with software GL)"""
    caption: bool = False
    """burn task text and score into the frames (off: clean clips for blind human rating; both live in the
    .json)"""


@dataclass
class TrackerConfig:
    """Experiment tracker (registry family tracker): none | tensorboard | wandb | mlflow (bird/tracking/)."""

    backend: str = "none"
    """registry family tracker: none | tensorboard | wandb | mlflow"""
    project: str = "bird"
    """W&B project / MLflow experiment name"""
    dir: str | None = None
    """where logs go; None = inside the run directory (tensorboard/, wandb/, mlruns/)"""
    uri: str | None = None
    """MLflow tracking URI; None = a local file store at <dir or run dir>/mlruns"""
    mode: str = "offline"
    """W&B mode: offline (default, no network; `wandb sync` later) | online | disabled"""
    log_videos: bool = True
    """upload the returned policy's clips where the tracker takes videos"""


@dataclass
class BirdConfig:
    seed: int = 0
    """the search's seed (trainings, sampling, the offline generator); final retrains use fresh seeds from
    final.seed_offset"""
    method: str = MISSING
    """method name, set by the method group (recorded, never branched on)"""
    choices: list[str] = field(default_factory=list)
    """the design choices (conf/choice/ and the user config path's choice/) the composition includes: those
    the method file lists in its defaults and +choice=... flips (filled in when the config is composed;
    recorded)"""
    plugins: list[str] = field(default_factory=list)
    """modules imported after bird's own, whose import registers components (docs/extending.md); recorded in
    result.json with each module's version and file hash"""
    substitutes: list[str] = field(default_factory=list)
    """substitutes for something a paper used, named in result.json"""
    env: EnvConfig = field(default_factory=EnvConfig)
    """the task (conf/env/<suite>/<task>.yaml)"""
    generate: GenerateConfig = field(default_factory=GenerateConfig)
    """how reward programs are asked for and read"""
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    """checks and screens before training"""
    train: TrainConfig = field(default_factory=TrainConfig)
    """how a candidate's policy is trained"""
    feedback: FeedbackConfig = field(default_factory=FeedbackConfig)
    """what ranks candidates and what the generator is shown"""
    select: SelectConfig = field(default_factory=SelectConfig)
    """who carries forward and what the search returns"""
    loop: LoopConfig = field(default_factory=LoopConfig)
    """the iterations"""
    demos: DemosConfig = field(default_factory=DemosConfig)
    """demonstrations as a search input"""
    decompose: DecomposeConfig = field(default_factory=DecomposeConfig)
    """task decomposition before the first generation"""
    reward: RewardConfig = field(default_factory=RewardConfig)
    """the reward program's contract and form"""
    final: FinalConfig = field(default_factory=FinalConfig)
    """the returned reward's final retrain"""
    transfer: TransferConfig = field(default_factory=TransferConfig)
    """the returned policy evaluated on unseen tasks (PRM4RL's generalisation protocol)"""
    llm: LLMConfig = field(default_factory=LLMConfig)
    """the generator's model and client"""
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    """the judge's model (every None inherits llm.*)"""
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    """env steps, caps and evaluation"""
    run: RunConfig = field(default_factory=RunConfig)
    """progress output, skipping and resuming"""
    ray: RayConfig = field(default_factory=RayConfig)
    """Ray, for train.executor=ray"""
    video: VideoConfig = field(default_factory=VideoConfig)
    """clips of trained policies"""
    tracker: TrackerConfig = field(default_factory=TrackerConfig)
    """experiment tracker"""
    islands: IslandsConfig = field(default_factory=IslandsConfig)
    """island populations (REvolve)"""
    tree: TreeConfig = field(default_factory=TreeConfig)
    """the search tree (RF-Agent)"""
    crossover: CrossoverConfig = field(default_factory=CrossoverConfig)
    """programmatic crossover (R*)"""
    alignment: AlignmentConfig = field(default_factory=AlignmentConfig)
    """critic alignment of reward parameters (R*)"""
