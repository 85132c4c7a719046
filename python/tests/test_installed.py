"""The package under test is the installed wheel: one abi3 extension, stubs, docstrings."""

import inspect
import os
import sys

import dptune
from dptune import _dptune, accounting, results, tuners

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "dptune"))


def test_imported_from_an_installed_wheel_not_the_source_tree():
    here = os.path.dirname(os.path.abspath(dptune.__file__))
    assert here != SOURCE, "tests must run against the installed wheel"
    assert "site-packages" in here and here.startswith(sys.prefix)
    assert _dptune.__file__.endswith(".abi3.so") or _dptune.__file__.endswith(".pyd")


def test_every_public_function_and_class_has_a_docstring_and_a_stub():
    pkg = os.path.dirname(dptune.__file__)
    for module in (accounting, tuners, results):
        stub = os.path.join(pkg, module.__name__.split(".")[-1] + ".pyi")
        assert os.path.isfile(stub), stub
        stub_text = open(stub).read()
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj):
                assert inspect.getdoc(obj), f"{module.__name__}.{name} has no docstring"
                assert f"def {name}(" in stub_text or f"class {name}" in stub_text, f"{name} not in {stub}"
    assert os.path.isfile(os.path.join(pkg, "_dptune.pyi"))
    assert os.path.isfile(os.path.join(pkg, "py.typed"))
