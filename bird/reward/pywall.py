"""The Python-level second wall, in the worker: restricted builtins, read-only module proxies that hold only the
allowed public API (never the module itself), and an import hook that checks the full dotted name and every name
of `from X import a, b`. The static checks (static.py) reject the same things earlier, with line numbers."""

from __future__ import annotations

import builtins
import importlib
import sys
import types
from collections.abc import Callable
from typing import Any

from bird.reward.languages import Language, ModuleRule

__all__ = ["SAFE_BUILTINS", "ModuleProxy", "build_proxies", "make_import", "namespace"]

SAFE_BUILTINS = (
    "abs", "all", "any", "bool", "dict", "enumerate", "filter", "float", "int", "isinstance", "issubclass", "len",
    "list", "map", "max", "min", "pow", "range", "reversed", "round", "set", "sorted", "str", "sum", "tuple", "zip",
    "print", "hasattr", "slice", "frozenset", "divmod", "complex", "object", "staticmethod", "classmethod",
    "property", "super", "iter", "next", "callable", "chr", "ord", "repr", "Exception", "ValueError", "TypeError",
    "KeyError", "IndexError", "ZeroDivisionError", "ArithmeticError", "RuntimeError", "AssertionError",
    "NotImplementedError", "StopIteration", "True", "False", "None",
)


class ModuleProxy(types.ModuleType):
    """A read-only module with a copy of the allowed names of a real module; it holds no reference to that module."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"module {self.__name__!r} is read-only: monkeypatching it is not allowed")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"module {self.__name__!r} is read-only: monkeypatching it is not allowed")


def _real_module(dotted: str) -> types.ModuleType:
    parts = dotted.split(".")
    module = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], start=1):
        try:
            module = importlib.import_module(".".join(parts[: i + 1]))
        except ImportError:
            module = getattr(module, part)  # an alias such as numpy.emath (numpy.lib.scimath)
    return module


def _public_names(module: types.ModuleType, rule: ModuleRule) -> list[str]:
    names = set(getattr(module, "__all__", ())) | {n for n in dir(module) if not n.startswith("_")}
    return sorted(n for n in names if rule.refusal(n) is None)


def build_proxies(modules: dict[str, ModuleRule]) -> dict[str, ModuleProxy]:
    """dotted name -> proxy. Submodules appear inside their parent only when they are allowed themselves."""
    proxies: dict[str, ModuleProxy] = {}
    for dotted in sorted(modules, key=lambda n: -n.count(".")):  # children first, so parents can hold them
        real, rule = _real_module(dotted), modules[dotted]
        proxy = ModuleProxy(dotted)
        content = {}
        for name in _public_names(real, rule):
            value = getattr(real, name, None)
            if isinstance(value, types.ModuleType):
                if f"{dotted}.{name}" in proxies:
                    content[name] = proxies[f"{dotted}.{name}"]
                continue  # a submodule that is not allowed
            content[name] = value
        proxy.__dict__.update(content)
        proxies[dotted] = proxy
    return proxies


_FUTURE = ModuleProxy("__future__")
_FUTURE.__dict__.update(dict.fromkeys(["annotations", "division", "absolute_import", "print_function", "generator_stop",
                                       "unicode_literals", "with_statement", "generators", "nested_scopes"], True))


def make_import(proxies: dict[str, ModuleProxy], modules: dict[str, ModuleRule]) -> Callable[..., Any]:
    """The program's __import__: allowed dotted names only, every from-imported name checked, proxies returned."""

    def safe_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level != 0:
            raise ImportError("relative imports are not allowed")
        if name == "__future__":  # `from __future__ import annotations`: a compiler switch, also run as an import
            return _FUTURE
        if type(fromlist) is list and not fromlist and name in sys.modules:
            return None  # C code's PyImport_Import (numpy's lazy internals): it reads sys.modules, not this value
        if name not in proxies:
            raise ImportError(f"import of {name!r} is not allowed (allowed: {sorted(proxies)})")
        if not fromlist:
            return proxies[name.split(".")[0]]
        proxy = proxies[name]
        for item in fromlist:
            why = "star imports are not allowed" if item == "*" else modules[name].refusal(str(item))
            if why is None and not hasattr(proxy, item):
                why = "is not part of its allowed API"
            if why is not None:
                raise ImportError(f"cannot import {item!r} from {name!r}: {why}")
        return proxy

    return safe_import


def namespace(language: Language) -> dict[str, Any]:
    """Fresh globals for a program: safe builtins, the import hook, the language's pre-bound module proxies."""
    modules = dict(language.modules)
    proxies = build_proxies(modules)
    safe = {n: getattr(builtins, n) for n in SAFE_BUILTINS if hasattr(builtins, n)}
    safe["__import__"] = make_import(proxies, modules)
    safe["__build_class__"] = builtins.__build_class__
    ns: dict[str, Any] = {"__builtins__": safe, "__name__": "reward_program"}
    ns.update({alias: proxies[dotted] for alias, dotted in language.bound.items()})
    return ns
