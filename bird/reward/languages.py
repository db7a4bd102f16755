"""Reward-program languages: what a program may import, what the worker preloads and allows, and what it does with
the imported program. numpy is the only language today; a second one (jax.numpy traced with `jax.export`, see
docs/security.md) is one more `Language` entry plus its runner module, with no change to the worker or the layers.

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
    **dict.fromkeys(["lib", "core", "ctypeslib", "f2py", "distutils", "ma", "rec", "char", "strings", "typing",
                     "dtypes", "test", "testing"], _INTERNALS),
    **dict.fromkeys(["show_config", "show_runtime", "get_include", "info", "seterr", "seterrcall", "geterrcall",
                     "setbufsize", "getbufsize", "set_printoptions", "printoptions", "set_default_printstyle",
                     "get_bit_generator", "set_bit_generator"], _CONFIG),
}
_NUMPY_RULE = ModuleRule(_NUMPY_HIDDEN)
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
        "numpy": _NUMPY_RULE,
        **{f"numpy.{sub}": _NUMPY_RULE for sub in ("linalg", "fft", "random", "polynomial", "emath", "exceptions")},
    },
    bound={"np": "numpy", "numpy": "numpy", "math": "math"},
    preload=("numpy", "numpy.linalg", "numpy.fft", "numpy.random", "numpy.polynomial", "numpy.exceptions", "math",
             "typing"),
    runner="bird.reward.adapters:numpy_runner",
    env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
)

LANGUAGES: dict[str, Language] = {"numpy": NUMPY}


def get_language(name: str) -> Language:
    if name not in LANGUAGES:
        raise ValueError(f"unknown reward-program language {name!r} (known: {sorted(LANGUAGES)})")
    return LANGUAGES[name]
