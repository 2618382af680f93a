"""A tiny base for the plain records on the ``logkit run`` path (instead of ``@dataclass``).

Contract: a subclass lists its fields in ``__slots__`` (in order) and writes an explicit keyword
``__init__``; :class:`Slotted` gives it a ``__repr__`` naming every field and a field-wise ``__eq__``
(same class, same values), as a dataclass would. ``dataclasses`` is not used because importing it
pulls in ``inspect``, ``ast`` and ``dis`` (~10 ms of every ``logkit run`` start-up).
"""

from __future__ import annotations

__all__ = ["Slotted"]


class Slotted:
    """Field-wise ``__repr__`` and ``__eq__`` over the ``__slots__`` of the concrete class."""

    __slots__ = ()

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
