"""Walks over a payload that JSON cannot hold as it is: a container that holds
itself, nests too deep, has keys that are not strings (some of which read alike
as JSON), or numbers beyond 64 bits; and text of a user's object that never
raises. :mod:`agentdebug.capture.encode` falls back on them; so do integrations
(a framework's own walk over its state takes a :class:`Walk`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

_OPTIONS = orjson.OPT_NON_STR_KEYS
_DEEPEST = 200  # walks below: containers this deep are left as they are
_WALKED = 100_000  # walks below: the most containers one walk visits


def distinct_keys(value: Any, walk: Walk) -> Any:
    """``value`` with a dict key that is not a string, and whose text another key
    of its dict already is (``{1: "a", "1": "b"}``), written with its type
    (``"1 (int)"``): JSON would hold both under one key, and reading it back keep
    only the last. Only dicts with keys that are not strings (or holding such a
    dict) are rebuilt."""
    if isinstance(value, dict):
        if not walk.enter(value):
            return value
        try:
            items = [(k, distinct_keys(v, walk)) for k, v in value.items()]
            if all(k.__class__ is str and v is value[k] for k, v in items):
                return value
            taken = {k for k in value if k.__class__ is str}
            out: dict[Any, Any] = {}
            for k, v in items:
                if k.__class__ is not str:
                    text = _key_text(k)
                    if isinstance(text, str):
                        text = f"{text} ({type(k).__name__})" if text in taken else text
                        taken.add(text)
                    k = text
                out[k] = v
            return out
        finally:
            walk.leave(value)
    if isinstance(value, (list, tuple)):
        if not walk.enter(value):
            return value
        try:
            kept = [distinct_keys(v, walk) for v in value]
            return value if all(a is b for a, b in zip(kept, value, strict=True)) else kept
        finally:
            walk.leave(value)
    return value


def _key_text(key: Any) -> Any:
    """The text orjson writes for a dict key that is not a string; the key itself
    where orjson writes none (a tuple: the encode then fails on it, and the
    coercion that follows writes its text)."""
    try:
        return next(iter(orjson.loads(orjson.dumps({key: 0}, option=_OPTIONS))))
    except Exception:
        return key


class Walk:
    """Where a walk over a value that may refer back to itself is: the containers
    on its way down, and how many more it may visit. :meth:`enter` refuses a
    container already on the way (one that holds itself), one deeper than
    ``deepest``, or one past the first ``most``; so a walk that leaves those as
    they are stays linear however the value refers back to itself."""

    __slots__ = ("cycles", "deepest", "left", "path")

    def __init__(self, deepest: int = _DEEPEST, most: int = _WALKED) -> None:
        self.path: set[int] = set()
        self.deepest = deepest
        self.left = most
        self.cycles = 0  # references back to a container on the way (see uncycled)

    def enter(self, container: Any) -> bool:
        key = id(container)
        if key in self.path or len(self.path) >= self.deepest or self.left <= 0:
            return False
        self.left -= 1
        self.path.add(key)
        return True

    def leave(self, container: Any) -> None:
        self.path.discard(id(container))


def walk_leaves(
    value: Any, leaf: Callable[[Any], Any], key_of: Callable[[Any], Any], walk: Walk
) -> Any:
    """``value`` rebuilt with ``leaf`` applied to its leaves, ``key_of`` to its dict
    keys; a container :class:`Walk` refuses is left as it is."""
    if not isinstance(value, (dict, list, tuple)):
        return leaf(value)
    if not walk.enter(value):
        return value
    try:
        if isinstance(value, dict):
            return {key_of(k): walk_leaves(v, leaf, key_of, walk) for k, v in value.items()}
        return [walk_leaves(v, leaf, key_of, walk) for v in value]
    finally:
        walk.leave(value)


def uncycled(value: Any, walk: Walk) -> Any:
    """``value`` with each reference back to a container that holds it (a state
    whose message points at the state) written as a marker, counted in
    ``walk.cycles``: the structure around it is kept, where JSON could hold none of
    it. Only containers with such a reference in them are rebuilt."""
    if not isinstance(value, (dict, list, tuple)):
        return value
    if id(value) in walk.path:
        walk.cycles += 1
        return f"<cycle: refers back to the {type(value).__name__} that holds it>"
    if not walk.enter(value):
        return value
    try:
        if isinstance(value, dict):
            items = [(k, uncycled(v, walk)) for k, v in value.items()]
            return value if all(v is value[k] for k, v in items) else dict(items)
        kept = [uncycled(v, walk) for v in value]
        return value if all(a is b for a, b in zip(kept, value, strict=True)) else kept
    finally:
        walk.leave(value)


def safe_str(value: Any) -> str:
    """``str(value)``, or its ``repr`` if that raises, or ``<unprintable Type>``:
    text of a user's object that never raises (for integrations too)."""
    text = printed(str, value)
    return text if text is not None else safe_repr(value)


def safe_repr(value: Any) -> str:
    """``repr(value)``, or ``<unprintable Type>`` if it raises."""
    text = printed(repr, value)
    return text if text is not None else f"<unprintable {type(value).__name__}>"


def printed(how: Any, value: Any) -> str | None:
    """``how(value)``, or None if it raises (a user's ``__str__``/``__repr__`` may
    raise anything, even SystemExit; a Ctrl-C is let through)."""
    try:
        text: str = how(value)
        return text
    except KeyboardInterrupt:
        raise
    except BaseException:
        return None


CUT_DEPTH = 100  # levels of a value with neither a JSON form nor a repr that are kept


def cut(value: Any, walk: Walk) -> Any:
    """``value`` as JSON data down to ``walk.deepest`` levels, a container below
    them (or one that holds itself) a text saying so, a leaf JSON lacks its repr:
    what is kept of a value with neither a JSON form nor a repr, so that the rest
    of it (the keys beside the part nested too deep) is not lost."""
    if isinstance(value, (dict, list, tuple)):
        if not walk.enter(value):
            return f"<{type(value).__name__} left out, {len(walk.path)} levels down>"
        try:
            if isinstance(value, dict):
                return {_coerced_key(k): cut(v, walk) for k, v in value.items()}
            return [cut(v, walk) for v in value]
        finally:
            walk.leave(value)
    if value is None or isinstance(value, (str, bool, float)):
        return value
    return _coerced_leaf(value) if isinstance(value, int) else safe_repr(value)


def coerced(value: Any) -> Any:
    """``value`` with what JSON cannot hold written as text: dict keys that are not
    strings (tuples, say), integers beyond 64 bits (see :func:`_walk` for how far)."""
    return walk_leaves(value, _coerced_leaf, _coerced_key, Walk())


def _coerced_leaf(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return value if -(2**63) <= value < 2**64 else str(value)
    return value


def _coerced_key(key: Any) -> Any:
    return key if isinstance(key, str) else safe_str(key)
