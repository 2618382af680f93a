"""A tiny base for the plain records on the ``logkit run`` path (instead of ``@dataclass``).

Contract: a subclass lists its fields in ``__slots__`` (in order) and the defaults in ``_defaults`` (a
list or dict default is copied per instance and also stands for a ``None`` given); :class:`Slotted`
gives it an ``__init__``, a ``__repr__`` and a field-wise ``__eq__``, as a dataclass would, without
importing ``dataclasses`` (``inspect``, ``ast``, ``dis``: ~10 ms of every ``logkit run`` start-up).
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = ["Slotted"]


class Slotted:
    """Field-wise ``__init__``, ``__repr__`` and ``__eq__`` over the ``__slots__`` of the concrete class."""

    __slots__ = ()
    _defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields()
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__qualname__} takes at most {len(fields)} arguments")
        given = dict(zip(fields, args))
        for name, value in kwargs.items():
            if name not in fields or name in given:
                raise TypeError(f"{type(self).__qualname__}: unexpected or repeated argument {name!r}")
            given[name] = value
        for name in fields:
            if name not in given and name not in self._defaults:
                raise TypeError(f"{type(self).__qualname__} needs {name!r}")
            default = self._defaults.get(name)
            value = given.get(name, default)
            if isinstance(default, (list, dict)) and (value is None or value is default):
                value = default.copy()
            object.__setattr__(self, name, value)

    def _fields(self) -> tuple[str, ...]:
        names: list[str] = []
        for klass in reversed(type(self).__mro__):
            slots = klass.__dict__.get("__slots__", ())
            names.extend((slots,) if isinstance(slots, str) else slots)
        return tuple(names)

    def __repr__(self) -> str:
        body = ", ".join(f"{name}={getattr(self, name, '<unset>')!r}" for name in self._fields())
        return f"{type(self).__qualname__}({body})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, n, None) == getattr(other, n, None) for n in self._fields())

    __hash__ = None  # type: ignore[assignment]  # mutable records are unhashable, like dataclasses
