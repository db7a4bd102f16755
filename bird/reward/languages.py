"""Reward-program languages: what a program may import, what the worker preloads and allows, and what it does with
the imported program. numpy, and jax (jax.numpy traced with `jax.export`: one more `Language` entry plus its runner module,
bird/reward/jax_runner.py, with no change to the worker or the layers).

Host side (static checks, sandbox) and worker side both read this table; it imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ModuleRule", "Language", "LANGUAGES", "get_language"]

_FILES = "reads or writes files"
_INTERNALS = "exposes numpy internals (file formats, memory maps, ctypes)"
_CONFIG = "changes the worker's numpy configuration"


@dataclass(frozen=True)
class ModuleRule:
    """The API a program sees of one module: its public names, minus `hidden`; or exactly `only` when set."""

    hidden: Mapping[str, str] = field(default_factory=dict)  # public name -> why it is removed
    only: frozenset[str] | None = None

    def refusal(self, name: str) -> str | None:
        """Why `name` is not offered, or None when it is (existence is checked at run time)."""
        if name.startswith("_"):
            return "starts with an underscore (private or dunder names are not allowed)"
        if name in self.hidden:
            return self.hidden[name]
        if self.only is not None and name not in self.only:
            return f"is not in the allowed part of this module ({', '.join(sorted(self.only)[:12])}, ...)"
        return None


@dataclass(frozen=True)
class Language:
    """One family of reward programs.

    :param modules: dotted module name -> the API offered (what `import` and `from ... import` may reach).
    :param bound: names bound before the program runs (np -> numpy), through the same proxies.
    :param preload: modules the worker imports before the layers (the uid drop may make the install unreadable).
    :param runner: "module:function" (worker side) turning the program's namespace into the per-call runner.
    :param reply: how the host decodes a call's reply (sandbox._DECODERS): "float64_table" = reward + components.
    :param threads: the runner starts threads (seccomp then allows clone with CLONE_THREAD; never processes).
    :param extra_syscalls: syscalls the runner needs beyond seccomp_policy.BASE_SYSCALLS.
    :param extra_read_paths: paths read after start-up beyond the preloaded packages and the standard library.
    :param env: the worker's whole environment (nothing of the host's is passed on).
    """

    name: str
    modules: Mapping[str, ModuleRule]
    bound: Mapping[str, str]
    preload: tuple[str, ...]
    runner: str
    reply: str = "float64_table"
    threads: bool = False
    extra_syscalls: tuple[str, ...] = ()
    extra_read_paths: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


_NUMPY_HIDDEN = {
    **dict.fromkeys(["load", "save", "savez", "savez_compressed", "savetxt", "loadtxt", "genfromtxt", "fromfile",
                     "fromregex", "memmap", "DataSource", "tofile"], _FILES),
    **dict.fromkeys(["lib", "core", "ctypeslib", "f2py", "distutils", "ma", "rec", "char", "strings",
                     "dtypes", "test", "testing"], _INTERNALS),
    **dict.fromkeys(["show_config", "show_runtime", "get_include", "info", "seterr", "seterrcall", "geterrcall",
                     "setbufsize", "getbufsize", "set_printoptions", "printoptions", "set_default_printstyle",
                     "get_bit_generator", "set_bit_generator"], _CONFIG),
}
_NUMPY_RULE = ModuleRule(_NUMPY_HIDDEN)
# numpy.typing: the four type aliases of annotations (`import numpy.typing as npt`; npt.NDArray[np.float64])
_NUMPY_TYPING = ModuleRule(only=frozenset({"ArrayLike", "DTypeLike", "NDArray", "NBitBase"}))
# functools: the pure helpers. Not update_wrapper/wraps (they read and write attributes named by strings, as the
# refused getattr/setattr do), singledispatch (it evaluates annotations), namedtuple (it runs generated source), RLock.
_BY_NAME = "reads and writes attributes named by strings (as getattr/setattr do)"
_FUNCTOOLS = ModuleRule({"update_wrapper": _BY_NAME, "wraps": _BY_NAME,
                         "singledispatch": "evaluates type annotations (dynamic code)",
                         "singledispatchmethod": "evaluates type annotations (dynamic code)",
                         "namedtuple": "runs generated source code (dynamic code)"},
                        only=frozenset({"partial", "reduce", "lru_cache", "cache", "cmp_to_key"}))
_TYPING_ONLY = frozenset({
    "Any", "Callable", "ClassVar", "DefaultDict", "Deque", "Dict", "Final", "FrozenSet", "Generator", "Hashable",
    "Iterable", "Iterator", "List", "Literal", "Mapping", "MutableMapping", "MutableSequence", "NamedTuple",
    "Optional", "Sequence", "Set", "Sized", "Tuple", "Type", "TypeVar", "Union", "cast", "overload",
})

NUMPY = Language(
    name="numpy",
    modules={
        "math": ModuleRule(),
        "typing": ModuleRule(only=_TYPING_ONLY),  # not get_type_hints/ForwardRef: they eval strings
        "functools": _FUNCTOOLS,
        "numpy": _NUMPY_RULE,
        **{f"numpy.{sub}": _NUMPY_RULE for sub in ("linalg", "fft", "random", "polynomial", "emath", "exceptions")},
        "numpy.typing": _NUMPY_TYPING,
    },
    bound={"np": "numpy", "numpy": "numpy", "math": "math"},
    preload=("numpy", "numpy.linalg", "numpy.fft", "numpy.random", "numpy.polynomial", "numpy.exceptions", "math",
             "typing", "functools", "numpy.typing"),
    runner="bird.reward.adapters:numpy_runner",
    env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
)

# reward.language=jax (train.learner=jax_ppo): compute_reward against jax.numpy, traced and exported with jax.export in
# the worker (bird/reward/jax_runner.py); the trainer receives only the serialised StableHLO. Host callbacks, debug
# printing, device transfer and the compiler's internals are outside the offered API; the trainer checks the artefact
# again (bird/reward/jax_export.py: no effects, no host communication, allowed custom calls only).
_JAX_HIDDEN = {"load": _FILES, "save": _FILES, "savez": _FILES, "fromfile": _FILES, "from_dlpack": "moves data between devices"}
_JAX_ONLY = frozenset({"numpy", "nn", "lax", "Array"})
JAX = Language(
    name="jax",
    modules={
        **NUMPY.modules,
        "jax": ModuleRule(only=_JAX_ONLY),
        "jax.numpy": ModuleRule(_JAX_HIDDEN),
        "jax.numpy.linalg": ModuleRule(),
        "jax.nn": ModuleRule(),
        "jax.lax": ModuleRule(dict.fromkeys(["infeed", "outfeed"], "talks to the host")),
    },
    bound={**NUMPY.bound, "jnp": "jax.numpy", "jax": "jax"},
    preload=(*NUMPY.preload, "jaxlib", "jax", "jax.numpy", "jax.numpy.linalg", "jax.nn", "jax.lax", "bird.reward.jax_export"),
    runner="bird.reward.jax_runner:jax_runner",
    threads=True,  # XLA compiles and runs in threads it creates on demand
    extra_read_paths=("/dev/urandom",),  # XLA's std::random_device, read when its CPU runtime starts
    env={**NUMPY.env, "JAX_PLATFORMS": "cpu", "JAX_ENABLE_X64": "0",
         "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"},
)

LANGUAGES: dict[str, Language] = {"numpy": NUMPY, "jax": JAX}


def get_language(name: str) -> Language:
    if name not in LANGUAGES:
        raise ValueError(f"unknown reward-program language {name!r} (known: {sorted(LANGUAGES)})")
    return LANGUAGES[name]
