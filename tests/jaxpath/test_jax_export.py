"""reward.language=jax: programs traced to StableHLO in the sandbox, checked and called by the trainer."""


import numpy as np
import pytest

from bird.config.schema import EnvConfig
from bird.envs.registry import make_adapter
from bird.reward import isolation
from bird.reward.jax_export import ExportedReward, ExportError, load
from bird.reward.sandbox import RewardProgramError, SandboxedReward
from bird.reward.static import check_source
from bird.types import FailureKind

pytest.importorskip("jax")

HEAD = "import jax.numpy as jnp\n\ndef compute_reward(obs, action, next_obs, info):\n"
PROGRAM = HEAD + ('    v = next_obs["rootx_vel"]\n    c = -0.01 * jnp.sum(action ** 2, axis=-1)\n'
                  '    h = jnp.where(next_obs["rootz_pos"] > 1.0, 1.0, 0.0)\n'
                  '    return v + c + h, {"v": v, "c": c, "h": h, "bonus": 2.0}\n')


@pytest.fixture(scope="module")
def spec():
    return make_adapter(EnvConfig(id="mujoco/hopper", description="x")).spec


def _batch(spec, n=6):
    rng = np.random.default_rng(3)
    obs = rng.normal(size=(n, spec.obs_index.dim))
    act = rng.uniform(-1, 1, size=(n, spec.action_dim))
    nxt = rng.normal(size=(n, spec.obs_index.dim)) + 1.0
    return obs, act, nxt


def _expected(spec, act, nxt):
    f = spec.obs_index.split(nxt)
    v, c = f["rootx_vel"], -0.01 * np.sum(act**2, axis=-1)
    h = (f["rootz_pos"] > 1.0).astype(float)
    return v + c + h, {"v": v, "c": c, "h": h, "bonus": np.full(len(v), 2.0)}


def test_sandbox_runs_the_exported_program_and_the_trainer_gets_the_same_numbers(spec):
    import jax
    import jax.numpy as jnp

    obs, act, nxt = _batch(spec)
    want, want_comps = _expected(spec, act, nxt)
    with SandboxedReward(PROGRAM, spec.obs_index, language="jax", action_dim=spec.action_dim) as program:
        reward, comps = program(obs, act, nxt)
        exported = program.export(len(obs), 30.0)
    np.testing.assert_allclose(reward, want, rtol=1e-5, atol=1e-6)
    assert list(comps) == ["v", "c", "h", "bonus"] and exported.components == ("v", "c", "h", "bonus")
    for name, value in want_comps.items():
        np.testing.assert_allclose(comps[name], value, rtol=1e-5, atol=1e-6)
    assert isinstance(exported.hlo, bytes)
    assert not [ln for ln in PROGRAM.splitlines() if ln.strip() and ln.strip().encode() in exported.hlo]  # no source
    assert b"compute_reward" not in exported.hlo  # no function names from the program (locations stripped)
    cols = jax.jit(load(exported).call)(*(jnp.asarray(x, jnp.float32) for x in (obs, act, nxt)))
    np.testing.assert_allclose(np.asarray(cols)[:, 0], want, rtol=1e-5, atol=1e-6)  # at the exported size


@pytest.mark.parametrize("body, kind, words", [
    ("    return float(next_obs['rootx_vel'][0]) * jnp.ones(action.shape[0]), {}\n", FailureKind.RUNTIME_ERROR,
     "jax.numpy"),
    ("    if next_obs['rootx_vel'] > 0:\n        return action[:, 0], {}\n    return -action[:, 0], {}\n",
     FailureKind.RUNTIME_ERROR, "jnp.where"),
    ("    return jnp.sum(action), {}\n", FailureKind.BAD_OUTPUT, "shape"),
    ("    return action, {}\n", FailureKind.BAD_OUTPUT, "shape"),
    ("    return action[:, 0]\n", FailureKind.BAD_OUTPUT, "components_dict"),
    ("    return action[:, 0], {'x': 'text'}\n", FailureKind.BAD_OUTPUT, "numeric"),
])
def test_programs_that_cannot_be_exported_fail_with_a_kind(spec, body, kind, words):
    with pytest.raises(RewardProgramError) as err:
        SandboxedReward(HEAD + body, spec.obs_index, language="jax", action_dim=spec.action_dim)
    assert err.value.failure.kind == kind and words in err.value.failure.reason


@pytest.mark.parametrize("line", ["    jax.pure_callback(print, None)\n", "    jax.debug.print('x')\n",
                                  "    jax.experimental.io_callback(print, None)\n"])
def test_static_check_rejects_jax_host_access(line):
    failure = check_source("import jax\n" + HEAD + line + "    return action[:, 0], {}\n", language="jax")
    assert failure is not None and failure.kind == FailureKind.REJECTED


def test_jax_imports_are_allowed_only_for_the_jax_language():
    assert check_source(PROGRAM, language="jax") is None
    failure = check_source(PROGRAM)
    assert failure is not None and "jax" in failure.reason
    assert check_source("from jax.experimental import io_callback\n" + HEAD + "    return 0, {}\n",
                        language="jax").kind == FailureKind.REJECTED


def _host_callback_program(obs_dim: int, act_dim: int, rows: int) -> ExportedReward:
    """An artefact a compromised sandbox could send: StableHLO calling the host-callback target (jax.export refuses
    it unless its safety check is disabled, as here; the record of that is then removed from the metadata)."""
    import dataclasses

    import jax
    import jax.numpy as jnp
    from jax import export

    target = "xla_ffi_python_cpu_callback"

    def f(obs, act, nxt):
        r = jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(obs.shape[:1], jnp.float32))(obs[:, 0])
        return jnp.stack([r], axis=1)

    specs = [jax.ShapeDtypeStruct((rows, d), jnp.float32) for d in (obs_dim, act_dim, obs_dim)]
    exp = export.export(jax.jit(f), disabled_checks=[export.DisabledSafetyCheck.custom_call(target)])(*specs)
    exp = dataclasses.replace(exp, disabled_safety_checks=())
    return ExportedReward(bytes(exp.serialize()), (), obs_dim, act_dim, rows)


def test_inspector_and_trainer_reject_host_callbacks_corrupt_bytes_or_the_wrong_signature(spec):
    from bird.reward.inspector import inspect_artefact

    with SandboxedReward(PROGRAM, spec.obs_index, language="jax", action_dim=spec.action_dim) as program:
        good = program.export(32, 30.0)
    load(good)  # positive control: the genuine artefact passes both
    assert inspect_artefact(good) is None
    failure = inspect_artefact(_host_callback_program(spec.obs_index.dim, spec.action_dim, 32))
    assert failure is not None and failure.kind == FailureKind.REJECTED and "custom_call" in failure.reason
    with pytest.raises(ExportError) as err:
        load(ExportedReward(good.hlo[: len(good.hlo) // 2], good.components, good.obs_dim, good.act_dim, 32))
    assert err.value.kind == "bad_output"
    with pytest.raises(ExportError) as err:
        load(ExportedReward(good.hlo, good.components, good.obs_dim + 1, good.act_dim, 32))
    assert "the task needs" in err.value.reason
    with pytest.raises(ExportError):
        load(ExportedReward(good.hlo, good.components, good.obs_dim, good.act_dim, 64))  # exported for 32 rows


def test_a_jax_program_is_traced_and_exported_behind_the_os_layers(spec):
    """The jax worker runs behind every layer a numpy one gets (namespaces, task limit, tree, Landlock, seccomp, uid
    drop ...); its task limit lets XLA start its threads (seccomp still denies new processes)."""
    code = HEAD + '    return next_obs["rootx_vel"] + 0.0 * jnp.sum(action, -1), {"x": next_obs["rootz_pos"]}\n'
    with SandboxedReward(code, spec.obs_index, 30.0, 2048, language="jax", action_dim=spec.action_dim) as program:
        active = {layer["name"] if isinstance(layer, dict) else layer.name for layer in program.layers} - set(
            program.inactive_layers)
        limit = next(d["detail"] for d in program.layers if d["name"] == "task_limit")
        exported = program.export(16, 30.0)
    assert set(_numpy_layers(spec)) <= active
    assert "task_limit" not in active or f"at most {isolation.thread_task_limit()} task(s)" in limit, limit
    assert exported.components == ("x",) and len(exported.hlo) > 1000


def _numpy_layers(spec) -> list[str]:
    """The layers a numpy program gets on this machine (the jax worker must not get fewer)."""
    code = "import numpy as np\n\ndef compute_reward(obs, action, next_obs, info):\n    return next_obs['rootx_vel'], {}\n"
    with SandboxedReward(code, spec.obs_index, 30.0, 2048) as program:
        return [n for n in (layer["name"] if isinstance(layer, dict) else layer.name for layer in program.layers)
                if n not in program.inactive_layers]
