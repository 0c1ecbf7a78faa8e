"""Every public component of both packages has a docstring: each module (an empty `__init__.py`,
a folder marker, aside), each public class and function, and each public method or property a
class adds. A method that overrides a base class's (`forward`, `get_output_dim`, AllenNLP's
`add_subparser`, torch's `state_dict`, ...) keeps to the contract the base documents."""

import importlib
import inspect
import pkgutil
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator, List

import pytest


def public_modules(package: str) -> Iterator[ModuleType]:
    """`package` and its modules whose dotted names have no `_`-prefixed part."""
    root = importlib.import_module(package)
    names = [package] + [info.name for info in pkgutil.walk_packages(root.__path__, f"{package}.")]
    for name in names:
        if not any(part.startswith("_") for part in name.split(".")):
            yield importlib.import_module(name)


def own_doc(obj: Any) -> str:
    """The docstring `obj` itself was written with ('' if none): not a base class's, not the
    signature that `dataclass` and `NamedTuple` put in place of a missing one."""
    if isinstance(obj, (classmethod, staticmethod)):
        obj = obj.__func__
    doc = (vars(obj).get("__doc__") if inspect.isclass(obj) else obj.__doc__) or ""
    if inspect.isclass(obj) and doc.startswith(f"{obj.__name__}(") and "\n" not in doc.strip():
        return ""
    return doc.strip()


def undocumented(module: ModuleType) -> List[str]:
    """The public components of `module` without a docstring of their own."""
    missing = []
    source = Path(module.__file__ or "")
    if not own_doc(module) and source.read_text(encoding="utf-8").strip():
        missing.append(f"{source}: the module")
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if not own_doc(obj):
            missing.append(f"{module.__name__}.{name}")
        if not inspect.isclass(obj):
            continue
        for member_name, member in vars(obj).items():
            methodlike = inspect.isfunction(member) or isinstance(
                member, (property, classmethod, staticmethod)
            )
            if member_name.startswith("_") or not methodlike:
                continue
            if any(member_name in vars(base) for base in obj.__mro__[1:]):
                continue  # an override: the base documents the contract
            if not own_doc(member):
                missing.append(f"{module.__name__}.{name}.{member_name}")
    return missing


@pytest.mark.parametrize("package", ["elmo_bilm", "elmo_plugin"])
def test_every_public_component_has_a_docstring(package):
    missing = [item for module in public_modules(package) for item in undocumented(module)]
    assert not missing, "no docstring:\n" + "\n".join(missing)


def test_the_check_finds_what_lacks_a_docstring(tmp_path, monkeypatch):
    (tmp_path / "undocumented_example.py").write_text(
        "from dataclasses import dataclass\n\n"
        "def helper():\n    return 1\n\n"
        "@dataclass\nclass Record:\n    x: int\n\n"
        "class Base:\n    def hook(self):\n        pass\n\n"
        'class Child(Base):\n    """A child."""\n\n'
        "    def hook(self):\n        pass\n\n"
        "    @property\n    def size(self):\n        return 1\n\n"
        "    def _private(self):\n        pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("undocumented_example")
    assert undocumented(module) == [
        f"{tmp_path / 'undocumented_example.py'}: the module",
        "undocumented_example.helper",
        "undocumented_example.Record",
        "undocumented_example.Base",
        "undocumented_example.Base.hook",
        "undocumented_example.Child.size",
    ]
