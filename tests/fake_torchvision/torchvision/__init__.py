"""A stand-in ``torchvision`` for the tests: every ``torchvision.*`` import succeeds, using anything fails.

Why: SGLang 0.5.23's benchmark client (``python -m sglang.benchmark.serving``) imports
``torchvision.transforms`` at import time through ``sglang.srt.configs`` ->
``nano_nemotron_vl`` -> ``srt/multimodal/internvl_utils.py``; PyPI's torchvision builds for torch
2.13 are CUDA builds that do not import against the CPU torch, and an empty stub is not enough
(transformers then sees torchvision as installed and imports ``torchvision.io``,
``torchvision.transforms.v2.functional`` and more). Text benchmarks never call torchvision, so
here every submodule imports, every attribute is a placeholder class (it can be subclassed,
compared, checked with ``isinstance``), and calling or instantiating one raises
:class:`StandInError` naming it: a multimodal dataset (``image``, ``mmmu``) fails loudly.

Put ``tests/fake_torchvision`` on PYTHONPATH of the benchmark client only.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types

__version__ = "0.28.0+standin"


class StandInError(RuntimeError):
    """Something called the stand-in torchvision."""


class _Placeholder(type):
    """The type of every placeholder: attribute access gives another placeholder, a call fails."""

    def __getattr__(cls, name: str) -> "_Placeholder":
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _placeholder(f"{cls.__qualname__}.{name}", cls.__module__)

    def __call__(cls, *args: object, **kwargs: object) -> object:
        raise StandInError(f"{cls.__module__}.{cls.__qualname__} was called, but torchvision here is the tests' "
                           "stand-in (tests/fake_torchvision: only text benchmarks run): use a text dataset "
                           "such as --dataset-name random-ids, or install a real torchvision")


def _placeholder(qualname: str, module: str) -> _Placeholder:
    cls = _Placeholder(qualname.rsplit(".", 1)[-1], (), {"__module__": module, "__qualname__": qualname})
    return cls


class _Module(types.ModuleType):
    def __getattr__(self, name: str) -> _Placeholder:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _placeholder(name, self.__name__)
        setattr(self, name, value)
        return value


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _Module(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []  # a package, so that deeper imports come here too


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.startswith(__name__ + "."):
            return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=True)
        return None


sys.meta_path.insert(0, _Finder())


def __getattr__(name: str) -> _Placeholder:
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    return _placeholder(name, __name__)
