"""Static checks on an untrusted reward program: the early, readable second wall (the OS layers are the first).

Rejected, each with a line number and a reason: imports outside the language's modules (full dotted names, every
`from X import a, b` name), private and dunder attributes and names, frame/code/traceback/generator internals,
`format`/`format_map` with attribute or index fields (or a template that is not a literal), numpy's file, ctypes,
testing and configuration API, assignments to module attributes (monkeypatching), dynamic code and introspection
builtins, `global` state, reads of the success flag or reference-reward terms from `info` (writes are fine), dunder
names bound by match captures, `as` or import aliases, class keywords (metaclass=) and ABC registration (`.register`).
"""

from __future__ import annotations

import ast
import string
import threading

from bird.reward.languages import Language, get_language
from bird.types import Failure, FailureKind

__all__ = ["check_source", "ALLOWED_IMPORTS", "ENTRY_POINT", "CONTRACT_ENTRIES"]

ENTRY_POINT = "compute_reward"
# contract -> the top-level name a program must define (a function, or GRACE's state-only class)
CONTRACT_ENTRIES = {"compute_reward": ENTRY_POINT, "reward_class": "Reward", "progress_program": "progress",
                    "weighted_components": ENTRY_POINT}
# weighted_components (component_dict_plus_weights): the module-level weights the harness applies
WEIGHTS_NAME = "REWARD_WEIGHTS"
# progress_program (PRM4RL): a subtask list and two functions of one state
PROGRESS_NAMES = ("plan_list", "determine_subtask", "progress")
ENTRY_ARGS = ("obs", "action", "next_obs", "info")
ALLOWED_IMPORTS = frozenset(get_language("numpy").modules)

# why a well-known module is refused ("import of 'os' would give access to processes")
_IMPORT_REASONS = {
    "files": {"io", "pathlib", "shutil", "tempfile", "glob", "pickle", "shelve", "fileinput", "zipfile", "tarfile",
              "mmap", "linecache", "marshal"},
    "the network": {"socket", "urllib", "http", "requests", "ssl", "ftplib", "smtplib", "asyncio", "httpx", "aiohttp",
                    "select", "selectors"},
    "processes": {"os", "subprocess", "multiprocessing", "signal", "pty", "threading", "concurrent", "posix",
                  "resource"},
    "the interpreter's internals": {"sys", "ctypes", "gc", "inspect", "builtins", "types"},
    "dynamic code": {"importlib", "code", "codeop", "runpy"},
    "attributes by name (as getattr does)": {"operator", "string"},
}
# `from __future__ import X`: compiler switches, harmless (the worker's import hook answers them too)
_FUTURE_FEATURES = frozenset({"annotations", "division", "absolute_import", "print_function", "generator_stop",
                              "unicode_literals", "with_statement", "generators", "nested_scopes"})
_BUILTIN_REASONS = {
    "open": "reads or writes files",
    "exec": "runs dynamic code",
    "eval": "runs dynamic code",
    "compile": "runs dynamic code",
    "__import__": "imports dynamically",
    "globals": "inspects the interpreter",
    "locals": "inspects the interpreter",
    "vars": "inspects the interpreter",
    "dir": "inspects the interpreter",
    "getattr": "reads attributes dynamically",
    "setattr": "writes attributes dynamically",
    "delattr": "writes attributes dynamically",
    "input": "reads input",
    "breakpoint": "starts a debugger",
    "exit": "exits the process",
    "quit": "exits the process",
    "memoryview": "touches raw memory",
}
# attribute names refused on any object: numpy's file I/O and raw-memory access (ndarray.tofile/dump/ctypes too)
_ATTR_REASONS = {
    **dict.fromkeys(["load", "save", "savez", "savez_compressed", "savetxt", "loadtxt", "genfromtxt", "fromfile",
                     "tofile", "dump", "memmap", "fromregex", "DataSource", "open_memmap"], "reads or writes files"),
    **dict.fromkeys(["ctypes", "ctypeslib", "f2py", "distutils", "testing"], "reaches ctypes, compilers or test tools"),
}
_INTERNAL_PREFIXES = ("co_", "f_", "gi_", "cr_", "ag_", "tb_")  # code, frame, generator, coroutine, traceback
_INTERNAL_NAMES = {"mro", "func_globals", "func_code", "im_func", "im_self", "with_traceback"}
_ALLOWED_DUNDER_NAMES = {"__name__"}
_ALLOWED_DUNDER_DEFS = {"__init__"}  # GRACE's Reward(extra_info) needs a constructor
_SUCCESS_WORDS = ("success",)
_REFERENCE_WORDS = ("reward", "gt_", "bird_episode", "reference")


def _reject(line: int, reason: str) -> Failure:
    return Failure(FailureKind.REJECTED, f"line {line}: {reason}")


class _Context:
    """What the checks need to know about the whole program: module aliases and the names it binds itself."""

    def __init__(self, tree: ast.Module, language: Language) -> None:
        self.language = language
        self.aliases: dict[str, str] = dict(language.bound)
        self.bound: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module in language.modules:
                for a in node.names:
                    if f"{node.module}.{a.name}" in language.modules:
                        self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            self.bound |= _binds(node)

    def module_of(self, node: ast.AST) -> str | None:
        """The allowed module an expression names (np -> numpy, np.linalg -> numpy.linalg), or None."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            parent = self.module_of(node.value)
            if parent is not None and f"{parent}.{node.attr}" in self.language.modules:
                return f"{parent}.{node.attr}"
        return None


def _binds(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return {node.id}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.arg):
        return {node.arg}
    if isinstance(node, ast.ExceptHandler) and node.name:
        return {node.name}
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return {node.name}
    return set()


def _module_failure(dotted: str, line: int, language: Language) -> Failure | None:
    if dotted in language.modules:
        return None
    root = dotted.split(".")[0]
    parent = dotted.rsplit(".", 1)[0] if "." in dotted else ""
    if parent in language.modules:
        why = language.modules[parent].refusal(dotted.rsplit(".", 1)[1]) or "is not an allowed submodule"
        return _reject(line, f"import of {dotted!r}: {why}")
    for what, mods in _IMPORT_REASONS.items():
        if root in mods:
            return _reject(line, f"import of {root!r} would give access to {what} (allowed: {sorted(language.modules)})")
    return _reject(line, f"import of {dotted!r} is not allowed (allowed: {sorted(language.modules)})")


def _import_failure(node: ast.Import | ast.ImportFrom, ctx: _Context) -> Failure | None:
    line = node.lineno
    if isinstance(node, ast.Import):
        for alias in node.names:
            if (f := _module_failure(alias.name, line, ctx.language)) is not None:
                return f
        return None
    if node.level:
        return _reject(line, "relative imports are not allowed")
    module = node.module or ""
    if module == "__future__":
        bad = [a.name for a in node.names if a.name not in _FUTURE_FEATURES]
        return _reject(line, f"'from __future__ import {bad[0]}' is not a known feature") if bad else None
    if (f := _module_failure(module, line, ctx.language)) is not None:
        return f
    for alias in node.names:
        if alias.name == "*":
            return _reject(line, f"'from {module} import *' is not allowed: name what you import")
        why = ctx.language.modules[module].refusal(alias.name)
        if why is None and alias.name in _ATTR_REASONS:
            why = _ATTR_REASONS[alias.name]
        if why is not None:
            return _reject(line, f"'from {module} import {alias.name}': {alias.name!r} {why}")
    return None


def _attribute_failure(attr: str, line: int) -> Failure | None:
    if attr.startswith("_"):
        return _reject(line, f"attribute {attr!r} starts with an underscore (private and dunder attributes are "
                             "not allowed)")
    if attr.startswith(_INTERNAL_PREFIXES) or attr in _INTERNAL_NAMES:
        return _reject(line, f"attribute {attr!r} reaches interpreter internals (frames, code, tracebacks, generators)")
    if attr in _ATTR_REASONS:
        return _reject(line, f"'.{attr}' {_ATTR_REASONS[attr]}")
    return None


def _format_failure(node: ast.Attribute) -> Failure | None:
    """`template.format(...)`: only a literal template whose fields are plain names or positions."""
    line = node.lineno
    if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
        return _reject(line, f"'.{node.attr}' on a template that is not a string literal is not allowed")
    pending = [node.value.value]
    while pending:
        try:
            parts = list(string.Formatter().parse(pending.pop()))
        except ValueError as exc:
            return _reject(line, f"malformed format string ({exc})")
        for _, field, spec, _ in parts:
            if field is not None and ("." in field or "[" in field):
                return _reject(line, f"format field {field!r} reads attributes or items (only names and positions)")
            if spec:
                pending.append(spec)
    return None


def _info_key_failure(key: str, line: int) -> Failure | None:
    low = key.lower()
    if any(w in low for w in _SUCCESS_WORDS):
        return _reject(line, f"reads the success flag (info[{key!r}])")
    if any(w in low for w in _REFERENCE_WORDS):
        return _reject(line, f"reads the reference reward (info[{key!r}])")
    return None


def _name_failure(node: ast.AST, ctx: _Context) -> Failure | None:
    line = getattr(node, "lineno", 0)
    if isinstance(node, ast.Name):
        if node.id in _BUILTIN_REASONS:
            return _reject(line, f"{node.id!r} {_BUILTIN_REASONS[node.id]}")
        if node.id in _ALLOWED_DUNDER_NAMES:
            return None
        if node.id.startswith("__"):
            return _reject(line, f"dunder name {node.id!r} is not allowed")
        if node.id.startswith("_") and node.id not in ctx.bound:
            return _reject(line, f"name {node.id!r} starts with an underscore and is not defined by the program")
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        if node.name.startswith("__") and node.name not in _ALLOWED_DUNDER_DEFS:
            return _reject(line, f"defining dunder {node.name!r} is not allowed (special methods run code where "
                                 "values are converted)")
    elif isinstance(node, ast.arg) and node.arg.startswith("__"):
        return _reject(line, f"dunder argument name {node.arg!r} is not allowed")
    return None


def _node_failure(node: ast.AST, ctx: _Context) -> Failure | None:  # noqa: C901 - one flat dispatch over node types
    line = getattr(node, "lineno", 0)
    if (f := _class_machinery_failure(node)) is not None:
        return f
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _import_failure(node, ctx)
    if isinstance(node, (ast.Name, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.arg)):
        return _name_failure(node, ctx)
    if isinstance(node, ast.Attribute):
        if (f := _attribute_failure(node.attr, line)) is not None:
            return f
        module = ctx.module_of(node.value)
        if module is not None:
            if (why := ctx.language.modules[module].refusal(node.attr)) is not None:
                return _reject(line, f"'{module}.{node.attr}' {why}")
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                return _reject(line, f"assigns to '{module}.{node.attr}': monkeypatching a module is not allowed")
        if node.attr in ("format", "format_map"):
            return _format_failure(node)
    elif isinstance(node, ast.MatchClass):
        for attr in node.kwd_attrs:
            if (f := _attribute_failure(attr, line)) is not None:
                return f
    elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "info":
        if isinstance(node.ctx, ast.Load) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            return _info_key_failure(node.slice.value, line)
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "info"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return _info_key_failure(node.args[0].value, line)
    elif isinstance(node, ast.Global):
        return _reject(line, "global state is not allowed (a reward is a function of its transitions; `nonlocal` "
                             "in a nested helper is fine)")
    return None


# -- dunder bindings and class machinery ---------------------------------------------------------------------------
# Constructs that bind a name given as a string (not a Name node) or customise how classes are made. A dunder bound
# in a class body is a special method (run where the harness or numpy converts and compares values); a metaclass
# function sees and builds the class namespace; ABC registration makes isinstance checks in trusted code true for
# the program's classes. Together they reached a function's __globals__ and the real builtins (issue 20).
_REGISTRATION = "'.register' registers a class with an ABC (ABC.register: isinstance checks in trusted code then " \
                "trust it) or a handler with a dispatcher; not allowed"


def _string_bindings(node: ast.AST) -> list[tuple[str, str]]:
    """(name, construct) for each name `node` binds through a string rather than a Name node."""
    if isinstance(node, ast.MatchAs) and node.name:
        return [(node.name, "a match/case capture")]
    if isinstance(node, ast.MatchStar) and node.name:
        return [(node.name, "a match/case star capture")]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [(node.rest, "a match/case **rest capture")]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [(node.name, "'except ... as'")]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname, "an import alias") if a.asname else (a.name.split(".")[0], "an import")
                for a in node.names if a.name != "*"]
    if isinstance(node, (ast.With, ast.AsyncWith)):  # `as __name__` (a readable dunder); the statement has the line
        return [(n.id, "'with ... as'") for item in node.items if item.optional_vars is not None
                for n in ast.walk(item.optional_vars) if isinstance(n, ast.Name)]
    return []


def _class_machinery_failure(node: ast.AST) -> Failure | None:
    """Dunder names bound by match captures, `as` (with/except/import) and import aliases; class keywords
    (metaclass=, **kwargs); `.register` (ABC registration), also as a match-class keyword."""
    line = getattr(node, "lineno", 0)
    for name, construct in _string_bindings(node):
        if name.startswith("__"):
            return _reject(line, f"{construct} binds the dunder name {name!r} (dunder names may not be bound: in a "
                                 "class body they define special methods)")
    if isinstance(node, ast.ClassDef) and node.keywords:
        keyword = node.keywords[0].arg
        what = "metaclass=" if keyword == "metaclass" else f"{keyword}=" if keyword else "**"
        return _reject(line, f"class {node.name!r} passes {what} to class creation (metaclasses and class keywords "
                             "run code that builds the class; not allowed)")
    if isinstance(node, ast.Attribute) and node.attr == "register":
        return _reject(line, _REGISTRATION)
    if isinstance(node, ast.MatchClass) and "register" in node.kwd_attrs:
        return _reject(line, _REGISTRATION)
    return None


def _definition(tree: ast.Module, name: str, kind: type[ast.stmt]) -> ast.stmt | None:
    """The top-level `kind` definition of `name`, through aliases (`compute_reward = my_reward`)."""
    for _ in range(8):
        found = [n for n in tree.body if isinstance(n, kind) and n.name == name]  # type: ignore[attr-defined]
        if found:
            return found[0]
        alias = [n.value.id for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name)
                 and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]
        if not alias:
            return None
        name = alias[-1]
    return None


def _entry_failure(tree: ast.Module, entry: str, n_args: int) -> Failure | None:
    defs = [d for d in [_definition(tree, entry, ast.FunctionDef)] if isinstance(d, ast.FunctionDef)]
    if not defs:
        return Failure(FailureKind.BAD_SIGNATURE, f"no top-level function {entry!r}")
    args = defs[0].args
    positional = args.posonlyargs + args.args
    required = len(positional) - len(args.defaults)
    if required > n_args or (len(positional) < n_args and args.vararg is None):
        names = ", ".join(ENTRY_ARGS[:n_args])
        got = ", ".join(a.arg for a in positional)
        hint = "; remove `self`: it is a top-level function, not a method" if positional and positional[0].arg in (
            "self", "cls") else ""
        return Failure(FailureKind.BAD_SIGNATURE, f"{entry} must accept ({names}); got {len(positional)} positional "
                                                  f"args ({got}){hint}")
    return None


def _class_failure(tree: ast.Module, entry: str) -> Failure | None:
    classes = [d for d in [_definition(tree, entry, ast.ClassDef)] if isinstance(d, ast.ClassDef)]
    if not classes:
        return Failure(FailureKind.BAD_SIGNATURE, f"no top-level class {entry!r}")
    methods = {n.name: n for n in classes[0].body if isinstance(n, ast.FunctionDef)}
    fn = methods.get("reward_fn")
    if fn is None or len(fn.args.args) < 2:
        return Failure(FailureKind.BAD_SIGNATURE, f"class {entry} needs a method reward_fn(self, state)")
    return None


def _progress_failure(tree: ast.Module) -> Failure | None:
    fns = {name: d for name in PROGRESS_NAMES[1:] if isinstance(d := _definition(tree, name, ast.FunctionDef),
                                                                   ast.FunctionDef)}
    for name in PROGRESS_NAMES[1:]:
        if name not in fns or len(fns[name].args.posonlyargs + fns[name].args.args) < 1:
            return Failure(FailureKind.BAD_SIGNATURE, f"no top-level function {name}(obs)")
    assigned = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    assigned |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    if not assigned & {"plan_list", "PLAN_LIST"}:
        return Failure(FailureKind.BAD_SIGNATURE, "no top-level plan_list = [...] (the subtask list)")
    return None


def _weights_failure(tree: ast.Module) -> Failure | None:
    assigned = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    assigned |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    if WEIGHTS_NAME not in assigned:
        return Failure(FailureKind.BAD_SIGNATURE, f"no top-level {WEIGHTS_NAME} = {{component: weight}}")
    return None


_PARSING = threading.Lock()  # CPython 3.11's parser fails ("AST constructor recursion depth mismatch") in two threads


def check_source(code: str, entry: str = ENTRY_POINT, n_args: int = len(ENTRY_ARGS),
                 contract: str = "compute_reward", language: str = "numpy") -> Failure | None:
    """Return the first reason to reject `code`, or None when the static checks pass.

    :param contract: "compute_reward" (a function `entry`), "reward_class" (a class `entry` with reward_fn),
        "progress_program" (plan_list, determine_subtask(obs), progress(obs)) or "weighted_components" (a function
        `entry` returning a dict of components, and REWARD_WEIGHTS).
    :param language: the reward-program language (bird/reward/languages.py): which modules may be imported.
    """
    try:
        with _PARSING:
            tree = ast.parse(code)
    except SyntaxError as exc:
        where = f"line {exc.lineno}: " if exc.lineno else ""  # null bytes: a SyntaxError without a line
        return Failure(FailureKind.COMPILE_ERROR, f"{where}{exc.msg}")
    except (RecursionError, MemoryError, ValueError) as exc:  # nested too deeply for the parser; null bytes
        return Failure(FailureKind.COMPILE_ERROR, f"the program cannot be parsed ({type(exc).__name__}: {exc})"[:300])
    ctx = _Context(tree, get_language(language))
    for node in ast.walk(tree):
        if (failure := _node_failure(node, ctx)) is not None:
            return failure
    if contract == "reward_class":
        return _class_failure(tree, entry)
    if contract == "progress_program":
        return _progress_failure(tree)
    if contract == "weighted_components":
        return _entry_failure(tree, entry, n_args) or _weights_failure(tree)
    return _entry_failure(tree, entry, n_args)
