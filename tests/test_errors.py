"""The error hierarchy: every raise in aotc names a class from aotc/errors.py."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import aotc
from aotc import errors

PACKAGE = Path(aotc.__file__).resolve().parent
PROJECT_ERRORS = {name for name, value in vars(errors).items() if inspect.isclass(value) and issubclass(value, Exception)}
# Built-ins that are the right answer wherever they appear: a missing module
# attribute, an abstract method, and the interpreter's own signals.
ALLOWED_BUILTINS = {"AttributeError", "NotImplementedError", "KeyboardInterrupt", "SystemExit"}
# A template's raise() helper raises Jinja's own error so Jinja adds the
# template line; codegen turns it into a BuildError naming file and line.
ALLOWED_HERE = {"build/codegen.py": {"TemplateRuntimeError"}}


def _raised_names(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, class name) of each ``raise Name(...)`` / ``raise Name``; re-raises of a variable are skipped."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(target, ast.Name) and target.id[:1].isupper():
            found.append((node.lineno, target.id))
        elif isinstance(target, ast.Attribute) and target.attr[:1].isupper():
            found.append((node.lineno, target.attr))
    return found


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "_lib" not in p.parts)


def test_the_walk_finds_the_package() -> None:
    modules = _modules()
    assert len(modules) > 40
    assert sum(len(_raised_names(ast.parse(p.read_text()))) for p in modules) > 150


@pytest.mark.parametrize("module", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_raise_names_a_class_of_errors_py(module: Path) -> None:
    tree = ast.parse(module.read_text(), filename=str(module))
    local_classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    bad = []
    for line, name in _raised_names(tree):
        if name == "AotcError":
            bad.append(f"{line}: raise AotcError: raise a named subclass")
        elif name in local_classes and module.name != "errors.py":
            bad.append(f"{line}: {name} is defined here, not in aotc/errors.py")
        elif name not in PROJECT_ERRORS | ALLOWED_BUILTINS | ALLOWED_HERE.get(str(module.relative_to(PACKAGE)), set()):
            bad.append(f"{line}: raise {name}: use a class of aotc/errors.py")
    assert not bad, f"{module.relative_to(PACKAGE)}:\n" + "\n".join(bad)


def test_no_exception_class_is_defined_outside_errors_py() -> None:
    outside = []
    for module in _modules():
        if module.name == "errors.py" and module.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(b, ast.Name) and (b.id.endswith(("Error", "Exception", "Warning"))) for b in node.bases
            ):
                outside.append(f"{module.relative_to(PACKAGE)}: class {node.name}")
    assert outside == []


def test_argument_errors_are_also_the_builtin_a_caller_would_catch() -> None:
    assert issubclass(errors.ArgumentError, ValueError)
    assert issubclass(errors.ArgumentTypeError, TypeError)
    assert issubclass(errors.UnknownKernelError, KeyError)
    assert issubclass(errors.ArchError, ValueError)
    assert all(issubclass(getattr(errors, name), errors.AotcError) for name in PROJECT_ERRORS - {"CacheWarning"})


def test_str_is_one_line_even_for_hostile_values() -> None:
    error = errors.ManifestError("m.yaml:3: key 'a\nb': bad\r\x1b[31m")
    assert str(error) == "m.yaml:3: key 'a\\nb': bad\\r\\x1b[31m"
    # KeyError's own str() would add quotes around the message; ours does not.
    assert str(errors.UnknownKernelError("library 't' has no kernel 'x'")) == "library 't' has no kernel 'x'"


def test_echo_cuts_long_values() -> None:
    text = errors.echo("x" * 200_000)
    assert len(text) <= errors.ECHO_LIMIT
    assert text.startswith("'xxx") and "..." in text
    assert errors.echo("short") == "'short'"
