"""The Python-tool runner (Heym §6.2), run inside a contained process by the launcher.

Reads `{code, function_name, arguments}` on stdin, runs the code with restricted builtins and
imports, calls `function_name(**arguments)` and writes `{success, result|error}` on stdout.
Beyond the original: names and attributes starting with `_` are refused when the code is
compiled (no `().__class__.__mro__` walk to `object.__subclasses__()`), every attribute read
goes through a guard that refuses blocked modules reached as attributes (`typing.sys`), and
`str.format` cannot read attributes either. These rules are a first line; the process
containment (no secrets in the environment, an unprivileged identity, limits, bubblewrap)
is the boundary.
"""

import _ast
import _json
import _string
import builtins
import sys

ModuleType = type(sys)


BLOCKED_BUILTINS = {
    "exec", "eval", "compile", "open", "input", "getattr", "setattr", "delattr", "globals",
    "locals", "vars", "dir", "super", "breakpoint", "help", "exit", "quit", "memoryview",
    "__import__", "__build_class__", "__loader__", "__spec__", "copyright", "credits", "license",
}  # fmt: skip
BLOCKED_MODULES = {
    "os", "sys", "subprocess", "socket", "urllib", "http", "requests", "httpx", "pickle",
    "importlib", "threading", "multiprocessing", "ctypes", "inspect", "ast", "builtins", "io",
    "shutil", "pathlib", "signal", "gc", "code", "codeop", "pty", "tempfile", "glob", "marshal",
    "posix", "resource", "select", "selectors", "asyncio", "mmap", "fcntl", "platform", "site",
    "sysconfig", "runpy", "pkgutil", "zipimport", "codecs", "fileinput", "linecache", "shelve",
    "dbm", "sqlite3", "zipfile", "tarfile", "gzip", "bz2", "lzma", "webbrowser", "pydoc",
    "logging", "concurrent", "ssl", "ftplib", "smtplib", "telnetlib", "xmlrpc", "socketserver",
    "wsgiref", "email", "mailbox", "tkinter", "turtle", "venv", "ensurepip", "faulthandler",
    "tracemalloc", "trace", "pdb", "bdb", "dis", "types", "weakref", "copyreg", "string",
    "uuid", "imp", "cgi", "crypt", "pwd", "grp", "spwd", "termios", "tty", "readline",
}  # fmt: skip


class RestrictionError(Exception):
    """The code uses something Python tools may not use."""


def _blocked_name(name: str) -> bool:
    root = name.split(".", 1)[0]
    return root in BLOCKED_MODULES or root.startswith("_")


def _check_value(value: object, what: str) -> object:
    if isinstance(value, ModuleType) and _blocked_name(value.__name__):
        raise RestrictionError(f"{what} is not allowed in Python tools")
    return value


def _guarded_import(
    name: str,
    globals: object = None,
    locals: object = None,
    fromlist: object = (),
    level: int = 0,
) -> object:
    if level or _blocked_name(name):
        raise ImportError(f"import of {name!r} is not allowed in Python tools")
    module = __import__(name, globals, locals, fromlist, 0)
    for item in fromlist or ():
        if str(item).startswith("_") or item == "*":
            raise ImportError(f"'from {name} import {item}' is not allowed in Python tools")
        _check_value(getattr(module, item, None), f"{name}.{item}")
    return module


def _check_format(template: str) -> None:
    for _literal, field, spec, _conversion in _string.formatter_parser(template):
        for part in (field or "", spec or ""):
            if "." in part or "[" in part:
                raise RestrictionError("format fields may not read attributes or items")


def _guarded_attr(obj: object, name: str) -> object:
    value = builtins.getattr(obj, name)
    if isinstance(obj, str) and name in ("format", "format_map"):
        template = obj

        def checked(*args: object, **kwargs: object) -> object:
            _check_format(template)
            return value(*args, **kwargs)

        return checked
    return _check_value(value, f"attribute {name!r}")


def _located(new: object, old: object) -> object:
    for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
        setattr(new, attr, getattr(old, attr, None))
    return new


def _rewrite(node: object) -> object:
    """Refuse `_` names and attributes; route every attribute read through `__heym_attr__`."""
    if isinstance(node, _ast.Name) and node.id.startswith("_"):
        raise RestrictionError(f"name {node.id!r} is not allowed in Python tools")
    if isinstance(node, _ast.Attribute) and node.attr.startswith("_"):
        raise RestrictionError(f"attribute {node.attr!r} is not allowed in Python tools")
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, list):
            value[:] = [_rewrite(v) if isinstance(v, _ast.AST) else v for v in value]
        elif isinstance(value, _ast.AST):
            setattr(node, field, _rewrite(value))
    if isinstance(node, _ast.Attribute) and isinstance(node.ctx, _ast.Load):
        func = _located(_ast.Name(id="__heym_attr__", ctx=_ast.Load()), node)
        name = _located(_ast.Constant(value=node.attr), node)
        return _located(_ast.Call(func=func, args=[node.value, name], keywords=[]), node)
    return node


def _compile(code: str) -> object:
    tree = compile(code, "<tool>", "exec", _ast.PyCF_ONLY_AST)
    return compile(_rewrite(tree), "<tool>", "exec")


class _JsonContext:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float


_scan = _json.make_scanner(_JsonContext())


def _loads(text: str) -> object:
    text = text.strip()
    value, end = _scan(text, 0)
    if text[end:].strip():
        raise ValueError("extra data after the JSON value")
    return value


def _dumps(value: object, depth: int = 0) -> str:
    """JSON text (the runner cannot afford `json`, which imports `re`); unknown types as str."""
    if depth > 100:
        raise ValueError("the result is nested too deeply")
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        try:
            return int.__repr__(value)
        except ValueError:
            return _json.encode_basestring_ascii(str(type(value).__name__))
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    if isinstance(value, str):
        return _json.encode_basestring_ascii(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_dumps(v, depth + 1) for v in value) + "]"
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            key = k if isinstance(k, str) else _dumps(k, depth + 1).strip('"')
            items.append(_json.encode_basestring_ascii(key) + ":" + _dumps(v, depth + 1))
        return "{" + ",".join(items) + "}"
    return _json.encode_basestring_ascii(str(value))


def _namespace() -> dict:
    safe = {k: v for k, v in vars(builtins).items() if k not in BLOCKED_BUILTINS}
    safe["__import__"] = _guarded_import
    safe["__build_class__"] = builtins.__build_class__  # class statements
    return {"__builtins__": safe, "__name__": "__tool__", "__heym_attr__": _guarded_attr}


def main() -> None:
    out = sys.stdout
    try:
        request = _loads(sys.stdin.read())
        code = str(request["code"])
        function_name = str(request["function_name"])
        arguments = request.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise RestrictionError("arguments must be an object")
        namespace = _namespace()
        exec(_compile(code), namespace)
        function = namespace.get(function_name)
        if not callable(function):
            raise RestrictionError(f"the code defines no function named {function_name!r}")
        result = function(**arguments)
        text = '{"success":true,"result":' + _dumps(result) + "}"
    except BaseException as exc:  # the tool's failure is its result
        message = f"{type(exc).__name__}: {exc}"
        text = '{"success":false,"error":' + _dumps(message[:4000]) + "}"
    out.write(text)
    out.flush()


main()
