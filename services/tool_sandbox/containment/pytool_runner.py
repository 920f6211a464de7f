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

import ast
import builtins
import json
import sys
import types

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
    if isinstance(value, types.ModuleType) and _blocked_name(value.__name__):
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


class _SafeFormatter:
    @staticmethod
    def check(template: str) -> None:
        import string

        for _, field, spec, _ in string.Formatter().parse(template):
            for part in (field or "", spec or ""):
                if "." in part or "[" in part:
                    raise RestrictionError("format fields may not read attributes or items")


def _guarded_attr(obj: object, name: str) -> object:
    value = builtins.getattr(obj, name)
    if isinstance(obj, str) and name in ("format", "format_map"):
        template = obj

        def checked(*args: object, **kwargs: object) -> object:
            _SafeFormatter.check(template)
            return value(*args, **kwargs)

        return checked
    return _check_value(value, f"attribute {name!r}")


class _Rewriter(ast.NodeTransformer):
    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if node.attr.startswith("_"):
            raise RestrictionError(f"attribute {node.attr!r} is not allowed in Python tools")
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load):
            call = ast.Call(
                func=ast.Name(id="__heym_attr__", ctx=ast.Load()),
                args=[node.value, ast.Constant(node.attr)],
                keywords=[],
            )
            return ast.copy_location(call, node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id.startswith("_"):
            raise RestrictionError(f"name {node.id!r} is not allowed in Python tools")
        return node


def _compile(code: str) -> types.CodeType:
    tree = _Rewriter().visit(ast.parse(code, "<tool>", "exec"))
    ast.fix_missing_locations(tree)
    return compile(tree, "<tool>", "exec")


def _namespace() -> dict:
    safe = {k: v for k, v in vars(builtins).items() if k not in BLOCKED_BUILTINS}
    safe["__import__"] = _guarded_import
    safe["__build_class__"] = builtins.__build_class__  # class statements
    return {"__builtins__": safe, "__name__": "__tool__", "__heym_attr__": _guarded_attr}


def main() -> None:
    out = sys.stdout
    try:
        request = json.loads(sys.stdin.read())
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
        text = json.dumps({"success": True, "result": result}, default=str)
    except BaseException as exc:  # the tool's failure is its result
        message = f"{type(exc).__name__}: {exc}"
        text = json.dumps({"success": False, "error": message[:4000]})
    out.write(text)
    out.flush()


main()
