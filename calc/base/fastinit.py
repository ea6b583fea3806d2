"""A quicker constructor for calc's frozen dataclasses (Job, Budget, MemoryBreakdown; Span is
tuple-backed, calc/compose/job.py).

A frozen dataclass's generated __init__ sets each field through object.__setattr__ (CPython's
dataclasses module, `_field_init` with frozen=True), about 50 ns a field here; a Budget has 26
fields and one scalar question builds a Job, a Budget and a MemoryBreakdown.
`fast_init` swaps in an __init__ with the same signature that fills the instance's __dict__
directly: the same object (fields, repr, eq, replace, frozen against assignment), built faster.
The quickest build by name stores each field into a new instance's __dict__ in the class's
field order: CPython then keeps one key table for every instance (key-sharing dicts), where a
dict literal allocates a new one each time (a Budget's 27 fields, measured here: 0.6 us stored,
0.8 us for the literal alone, 1.3 us through `of`, 1.8 us as keywords, 0.8 us positional).
calc.budget fills its Budget so, then `defer`s any `Later`s; calc.job fills the parts so.
`cls.of(fields)` builds one from a dict of its fields by name.

`fast_init(lazy=(...))` also lets those fields take a `Later`: a value worked out on its first
read and kept (calc.budget's ranges of arrays of jobs: each figure's low / expected / high are
N-element products made only when read). Until read, the instance's __dict__ holds the `Later`s
under "_later" and a class-level non-data descriptor answers the read, storing the value in
__dict__ (so later reads are plain attribute look-ups, and a field given a value never goes
through the descriptor). Pickles and copies hold the values (`__getstate__` reads every field),
and so do repr, dataclasses.replace and asdict, which read the fields.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T", bound=type)


_MAKING = threading.RLock()  # one value made at a time (a make may read another Later: days read hours)


class Later:
    """A field's value to be worked out on its first read: `make(*args)`, made once and kept."""

    __slots__ = ("args", "make", "value")

    def __init__(self, make: Callable[..., Any], *args: Any) -> None:
        self.make, self.args = make, args

    def get(self) -> Any:
        """The value, made on the first call, under a lock (`make` may consume its arguments: they
        are let go once it is made)."""
        try:
            return self.value
        except AttributeError:
            with _MAKING:
                if not hasattr(self, "value"):
                    self.value = self.make(*self.args)
                    self.args = ()
            return self.value

    def __reduce__(self) -> tuple[Any, tuple[Any]]:
        return _made, (self.get(),)


def _made(value: Any) -> Any:
    return value


class _Deferred:
    """The class attribute of a lazy field: answers a read that the instance's __dict__ does not
    (a field given a `Later`), storing the made value there."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        if obj is None:
            return self
        d = obj.__dict__
        try:
            later = d["_later"][self.name]
        except KeyError:
            raise AttributeError(self.name) from None
        value = d[self.name] = later.get()
        return value


def _getstate(self: Any) -> dict[str, Any]:
    """The instance's fields, every one read (so a pickle or copy holds values, not `Later`s)."""
    return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def fast_init(cls: T | None = None, *, lazy: tuple[str, ...] = ()) -> Any:
    """Decorate a frozen dataclass (no default factories, no slots): the same __init__ signature,
    filling __dict__ directly, then calling its __post_init__ if it has one; the fields named in `lazy` may be given a
    `Later` (see the module doc). `@fast_init` or `@fast_init(lazy=(...))`."""
    if cls is None:
        return lambda c: _fast_init(c, lazy)
    return _fast_init(cls, lazy)


def _fast_init(cls: T, lazy: tuple[str, ...]) -> T:
    fields = [f for f in dataclasses.fields(cls) if f.init]
    if (hasattr(cls, "__slots__")
            or any(f.default_factory is not dataclasses.MISSING for f in fields)):
        raise TypeError(f"fast_init cannot build {cls.__name__}")
    by_name = {f.name: f for f in fields}
    if any(name not in by_name or by_name[name].default is not dataclasses.MISSING for name in lazy):
        raise TypeError(f"fast_init: lazy fields of {cls.__name__} must be fields without defaults")
    defaults = {f"_d_{f.name}": f.default for f in fields if f.default is not dataclasses.MISSING}
    args = ", ".join(f"{f.name}=_d_{f.name}" if f"_d_{f.name}" in defaults else f.name for f in fields)
    body = "".join(
        f"    if type({f.name}) is _Later:\n        d.setdefault('_later', {{}})[{f.name!r}] = {f.name}\n"
        f"    else:\n        d[{f.name!r}] = {f.name}\n" if f.name in lazy else f"    d[{f.name!r}] = {f.name}\n"
        for f in fields)
    namespace = dict(defaults, _Later=Later)
    post = "    self.__post_init__()\n" if hasattr(cls, "__post_init__") else ""
    if post and lazy:
        raise TypeError(f"fast_init: {cls.__name__} has a __post_init__ and lazy fields")
    exec(f"def __init__(self, {args}):\n    d = self.__dict__\n{body}{post}", namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init
    for name in lazy:
        setattr(cls, name, _Deferred(name))
    if lazy:
        cls.__getstate__ = _getstate
    cls.__lazy_fields__ = lazy
    cls.of = classmethod(_builder({f.name: f.default for f in fields if f.default is not dataclasses.MISSING}, lazy))
    return cls


def _builder(defaults: dict[str, Any], lazy: tuple[str, ...]) -> Callable[..., Any]:
    """`cls.of(fields)`: an instance from a dict of its fields by name (the defaults for those left
    out), its `Later`s deferred. No __post_init__."""
    namespace = {"_defaults": defaults, "_new": object.__new__, "_defer": defer}
    deferred = "    _defer(obj)\n" if lazy else ""
    exec("def of(cls, values):\n    obj = _new(cls)\n    d = obj.__dict__\n"
         "    if len(values) < len(cls.__dataclass_fields__):\n        d.update(_defaults)\n"
         f"    d.update(values)\n{deferred}    return obj\n", namespace)
    return namespace["of"]


def defer(obj: Any) -> None:
    """Move the `Later`s among the lazy fields of `obj` (an instance of a fast_init(lazy=...)
    class whose __dict__ was filled directly) to where the fields' descriptors find them."""
    d = obj.__dict__
    for name in type(obj).__lazy_fields__:
        if type(d.get(name)) is Later:
            d.setdefault("_later", {})[name] = d.pop(name)
