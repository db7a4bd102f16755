"""What a generator may see of a task file's env code (`source:`): the file without its reward code (full_source) and
the observation method (obs_code), built with the Gym MuJoCo suite's stripper; and the names the leak audit hides."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import textwrap
from pathlib import Path

from bird.config.schema import TaskFileConfig
from bird.envs.mujoco.source import full_source, hidden_names

__all__ = ["task_full_source", "task_obs_code", "task_hidden_names"]


def _file_text(task: TaskFileConfig, env_cls: type) -> tuple[str, str]:
    """(text, where) of the file full_source shows: source.file (a module name or a .py path), else the env's module."""
    name = task.source.file
    if name is None:
        return inspect.getsource(inspect.getmodule(env_cls)), env_cls.__module__
    if name.endswith(".py"):
        path = Path(name).expanduser()
        if not path.is_file():
            raise ValueError(f"env.task.source.file={name!r}: no such file")
        return path.read_text(), path.name
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise ValueError(f"env.task.source.file={name!r}: not an importable Python module with a source file")
    return Path(spec.origin).read_text(), name


def task_full_source(task: TaskFileConfig, env_cls: type) -> str:
    """The file with its reward code and source.remove's names removed (ValueError naming what survived)."""
    text, where = _file_text(task, env_cls)
    try:
        return full_source(env_cls, text, origin=where, remove=frozenset(task.source.remove))
    except ValueError as exc:
        raise ValueError(f"env.task.source: {exc}; add the name to env.task.source.remove") from None


def task_obs_code(task: TaskFileConfig, env_cls: type) -> str:
    """Eureka's view: the env class header and its observation method (source.obs_method), docstrings removed."""
    method = getattr(env_cls, task.source.obs_method, None)
    if method is None:
        raise ValueError(f"env.task.source.obs_method={task.source.obs_method!r}: {env_cls.__name__} has no such "
                         "method; name the method that builds the observation, or drop obs_code from source.show")
    tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
    fn = tree.body[0]
    if isinstance(fn, ast.FunctionDef) and fn.body and isinstance(fn.body[0], ast.Expr) \
            and isinstance(getattr(fn.body[0], "value", None), ast.Constant):
        fn.body = fn.body[1:] or [ast.Pass()]
    base = env_cls.__bases__[0].__name__ if env_cls.__bases__ else "object"
    return (f"class {env_cls.__name__}({base}):\n"
            f'    """Rest of the environment definition omitted."""\n\n' + textwrap.indent(ast.unparse(tree), "    ")
            + "\n")


def task_hidden_names(task: TaskFileConfig, env_cls: type | None) -> frozenset[str]:
    """Names no prompt may carry: the reward names of the env's module, the file's hidden.names and source.remove, the
    success info key (quoted, as an info dict holds it) and the names of the score, success and reference functions."""
    out = set(hidden_names(env_cls)) if env_cls is not None and inspect.getmodule(env_cls) is not None else set()
    out |= set(task.hidden.names) | set(task.source.remove)
    if task.success is not None and task.success.info_key:
        out |= {f"'{task.success.info_key}'", f'"{task.success.info_key}"'}
    targets = [task.score.function, task.success.function if task.success else None, task.reference_reward]
    out |= {t.rpartition(":")[2].rpartition(".")[2] for t in targets if t and ":" in t}
    return frozenset(n for n in out if n)
