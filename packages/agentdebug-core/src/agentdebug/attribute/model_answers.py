"""Reading a model's answer: keep what is valid, mend or drop the rest, say so.

A schema narrowed to the run (the steps and agents that exist, the failure modes
of the taxonomy) is what a constrained decoder needs, but a server that does not
constrain returns what its model wrote, and one bad field used to cost the whole
answer: a correct agent and step thrown away for a made-up failure mode, every
finding of the judge for one at a step that does not exist, ``"step": "3"`` and
``"confidence": 85`` refused. Here:

- a choice (step, agent, failure mode) is matched leniently: ``"3"`` is step 3,
  ``"Searcher"`` the agent ``searcher``, ``malformed_tool_call`` the mode
  ``action.malformed_tool_call``; a step that is only a tool's output, or a
  name that only gave input or tool output, is accepted though not offered, for
  the hypothesis to blame the decision that produced it;
- an unknown failure mode is left unset, the rest of the answer kept;
- a confidence written as a percentage (``85``, ``"85%"``) is read as 0.85;
- an item of a list that is not valid (a finding at a step that does not exist)
  is left out, the other items kept; items beyond the list's limit too;
- what cannot be mended (an agent that is not in the run) is refused, and the
  repair message lists every valid value, however many there are.

Every mend becomes a note in the report (through the audit trail), made once the
whole answer is valid, so an answer that is asked again leaves no stray note.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Annotated, Any, Literal, TypeVar, cast, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ValidationError, WithJsonSchema, create_model
from pydantic import model_validator as _model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from agentdebug.audit import note

_M = TypeVar("_M", bound=BaseModel)
_MENDS: ContextVar[list[str] | None] = ContextVar("agentdebug_answer_mends", default=None)
#: Fields read as a probability, where a model may write a percentage.
PROBABILITIES = ("confidence", "error_probability")


def mended(text: str) -> None:
    """Record that part of the answer being read was mended (or dropped)."""
    pending = _MENDS.get()
    if pending is not None:
        pending.append(text)


class Steps(list[int]):
    """Step indices offered to a model, and ``also``: steps it may name though
    they are not offered (a tool's output, which Who&When labels too)."""

    def __init__(self, steps: Sequence[int], also: Sequence[int] = ()):
        super().__init__(steps)
        self.also = list(also)


class LenientAnswer(BaseModel):
    """Base of every answer schema: percentages read as fractions, and the notes of
    what was mended made once the outermost answer is valid."""

    @_model_validator(mode="wrap")
    @classmethod
    def _read_leniently(cls, data: Any, handler: Callable[[Any], Any]) -> Any:
        if _MENDS.get() is not None:  # (a part of a larger answer)
            return handler(_fractions(data))
        token = _MENDS.set([])
        try:
            value = handler(_fractions(data))
            mends = list(_MENDS.get() or [])
        finally:
            _MENDS.reset(token)
        for text in dict.fromkeys(mends):
            note("model answer", text)
        return value


def _fractions(data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for key in PROBABILITIES:
        given = out.get(key)
        value: Any = given
        percent = False
        if isinstance(given, str):
            text = given.strip()
            percent = text.endswith("%")
            value = _number(text.rstrip("%").strip())
            if value is None:
                continue
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        if percent or 1 < value <= 100:
            value = value / 100
            mended(f"{key} {given!r} was read as a percentage, {value:.2f}")
        out[key] = value
    return out


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


# -- choices ----------------------------------------------------------------------------


def listed(values: Sequence[Any]) -> str:
    """Every value, compactly: integers as runs (``0–4, 6, 9–12``), text in quotes,
    a long list of ids ``category.name`` grouped (``action.{wrong_tool, ...}``),
    so that a repair message (cut at 1,000 characters) can list them all."""
    if values and all(isinstance(v, int) for v in values):
        runs: list[list[int]] = []
        for v in sorted(values):
            if runs and v == runs[-1][-1] + 1:
                runs[-1].append(v)
            else:
                runs.append([v])
        return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)
    flat = ", ".join(f"'{v}'" for v in values)
    texts = [str(v) for v in values]
    if len(flat) <= 600 or not all("." in v for v in texts):
        return flat
    groups: dict[str, list[str]] = {}
    for v in texts:
        head, tail = v.split(".", 1)
        groups.setdefault(head, []).append(tail)
    return "; ".join(f"{head}.{{{', '.join(tails)}}}" for head, tails in groups.items())


def _key(value: str) -> str:
    return re.sub(r"[\s_-]+", "_", value.strip().casefold())


def _integer(value: Any) -> Any:
    if isinstance(value, str) and re.fullmatch(r"\s*(step\s*)?-?\d+\s*", value, re.I):
        return int(re.sub(r"\D", "", value) or 0) * (-1 if "-" in value else 1)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _matching(value: str, candidates: Sequence[str]) -> str | None:
    """The one candidate ``value`` means: the same but for case and spacing, or the
    same id without its category (``wrong_tool`` for ``action.wrong_tool``)."""
    key = _key(value)
    same = [c for c in candidates if _key(c) == key]
    if len(same) == 1:
        return same[0]
    tail = [c for c in candidates if "." in c and _key(c.rsplit(".", 1)[1]) == key]
    return tail[0] if len(tail) == 1 else None


def choice_check(
    values: Sequence[Any], *, also: Sequence[Any] = (), what: str = "values"
) -> Callable[[Any], Any]:
    """A validator for a field that must hold one of ``values`` (or of ``also``,
    accepted but not offered): it mends what it can and refuses the rest with
    every valid value listed."""
    allowed = list(values)
    also = [*also, *(values.also if isinstance(values, Steps) else [])]
    numeric = bool(allowed) and all(isinstance(v, int) for v in allowed)

    def check(given: Any) -> Any:
        value = _integer(given) if numeric else given
        if value in allowed or value in also:
            return value
        if isinstance(value, str) and not numeric:
            found = _matching(value, [*allowed, *also])
            if found is not None:
                return found
        raise PydanticCustomError(
            "choice",
            "must be one of the {what}: {allowed}",
            {"what": what, "allowed": listed(allowed)},
        )

    return check


def enum_of(values: Sequence[Any], *, what: str = "values") -> Any:
    """A field type that holds one of ``values``: an enum of them in the JSON
    schema, read leniently (see :func:`choice_check`)."""
    extra = values.also if isinstance(values, Steps) else []
    kind = "integer" if all(isinstance(v, int) for v in values) else "string"
    return Annotated[
        Literal[tuple([*values, *extra])],
        BeforeValidator(choice_check(values, what=what)),
        WithJsonSchema({"enum": list(values), "type": kind}),
    ]


#: What an agent field holds when the answer named no agent of the run.
NO_SUCH_AGENT = ""


def agent_of(agents: Sequence[str], others: Sequence[str]) -> Any:
    """An agent field: one of ``agents`` offered; a speaker of ``others`` (a tool,
    the user) accepted, for :func:`hypothesis` to read as whoever acted there; a
    name that is not in the run at all read as :data:`NO_SUCH_AGENT`, with a note
    (the step the answer names still stands)."""
    known = choice_check(agents, also=others, what="agents")

    def check(given: Any) -> Any:
        try:
            return known(given)
        except PydanticCustomError:
            if not isinstance(given, str):
                raise
            mended(
                f"the agent {given!r} is not in the run; the agent acting at the step "
                "the answer names is named instead"
            )
            return NO_SUCH_AGENT

    return Annotated[
        str,
        BeforeValidator(check),
        WithJsonSchema({"enum": list(agents), "type": "string"}),
    ]


def mode_of(modes: Sequence[str], names: Mapping[str, str] | None = None) -> Any:
    """An optional failure-mode field: one of ``modes``, matched leniently (by id,
    id without its category, or the mode's name); anything else is left unset
    with a note, and the rest of the answer is kept."""
    by_name = {_key(name): mode for mode, name in (names or {}).items()}

    def check(given: Any) -> str | None:
        if given is None or (isinstance(given, str) and _key(given) in ("", "null", "none")):
            return None
        if given in modes:
            return str(given)
        if isinstance(given, str):
            found = _matching(given, modes) or by_name.get(_key(given))
            if found is not None:
                return found
        mended(
            f"the failure mode {given!r} is not in the taxonomy; it was left unset "
            "and the rest of the answer kept"
        )
        return None

    schema = {"anyOf": [{"enum": list(modes), "type": "string"}, {"type": "null"}]}
    return Annotated[str | None, BeforeValidator(check), WithJsonSchema(schema)]


# -- lists and schemas ------------------------------------------------------------------


def _max_length(info: Any) -> int | None:
    if isinstance(info, FieldInfo):
        for meta in info.metadata:
            limit = getattr(meta, "max_length", None)
            if isinstance(limit, int):
                return limit
    return None


def keep_valid(model: type[BaseModel], field: str, limit: int | None) -> Callable[[Any], Any]:
    """A list validator that leaves out the items that are not valid (and any
    beyond ``limit``), each with a note, and keeps the rest."""

    def check(given: Any) -> Any:
        if not isinstance(given, list):
            return given
        kept: list[BaseModel] = []
        for i, item in enumerate(given):
            pending = _MENDS.get()
            mark = len(pending) if pending is not None else 0
            try:
                kept.append(model.model_validate(item))
            except ValidationError as exc:
                if pending is not None:
                    del pending[mark:]
                mended(
                    f"item {i + 1} of the answer's {field} was left out ({_problem(exc)}); "
                    "the other items were kept"
                )
        if limit is not None and len(kept) > limit:
            mended(f"{len(kept) - limit} of the answer's {field} beyond the first {limit} left out")
            kept = kept[:limit]
        return kept

    return check


def _problem(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "the item"
        given = err.get("input")
        if err["type"] == "choice":  # (a note need not list every valid value)
            what = (err.get("ctx") or {}).get("what", "values")
            parts.append(f"{where} {given!r} is not one of the {what}")
            continue
        got = "" if isinstance(given, dict | list) else f" (got {given!r})"
        parts.append(f"{where} {err['msg']}{got}"[:300])
    return "; ".join(parts)


def _lenient_type(tp: Any, field: str, info: Any) -> Any:
    """``list[Model]`` as a list that keeps its valid items; anything else as is."""
    args = get_args(tp)
    if get_origin(tp) is list and len(args) == 1 and isinstance(args[0], type):
        item = args[0]
        if issubclass(item, BaseModel):
            return Annotated[tp, BeforeValidator(keep_valid(item, field, _max_length(info)))]
    return tp


def narrowed(base: type[_M], name: str, **fields: Any) -> type[_M]:
    """``base`` with some fields narrowed (enums of valid values), read leniently:
    a list of answers keeps its valid items, a percentage is read as a fraction,
    and what was mended is noted (see the module)."""
    spec: dict[str, Any] = {
        key: (_lenient_type(value[0], key, value[1]), value[1])
        if isinstance(value, tuple)
        else value
        for key, value in fields.items()
    }
    bases: Any = base if issubclass(base, LenientAnswer) else (base, LenientAnswer)
    model: Any = create_model(name, __base__=bases, **spec)
    return cast("type[_M]", model)


# -- a model's own fix ------------------------------------------------------------------

# Terms specific enough to tie a fix to a run: identifiers, numbers, dates, paths,
# quoted text; ordinary words ("check", "carefully") tie it to nothing.
_SPECIFIC = re.compile(
    r"\"([^\"]{3,})\"|'([^'\s][^']{1,}[^'\s])'|`([^`]{2,})`"
    r"|(\b[\w.-]*\d[\w.:/-]*)|(\b\w+_\w+\b)|(\b[A-Z][A-Z0-9]{1,}[\w-]*)"
    r"|(\b\w+(?:[-/.]\w+)+\b)"
    # a name as prose writes it, inside a clause or after a colon ("state the Eiffel
    # Tower is in Paris", "name the capital: Canberra", "Hauptstraße"; not a word
    # opening a clause, "Be careful, Check twice")
    r"|(?<=[^\W_][ ]|[:] )([A-ZÀ-ÖØ-Þ][^\W\d_]+(?: [A-ZÀ-ÖØ-Þ][^\W\d_]+)*)"
)


def specific_terms(text: str) -> list[str]:
    """Identifiers, values, quoted text and names inside a sentence in ``text``
    (not step numbers, not numbers under three digits: every run holds those)."""
    out: dict[str, None] = {}
    for m in _SPECIFIC.finditer(re.sub(r"\bsteps?\s+\d+", " ", text, flags=re.I)):
        term = next((g for g in m.groups() if g), "").strip(" .,;:")
        if len(term) >= 3 or (len(term) == 2 and not term.isdigit()):
            out.setdefault(term, None)
    return list(out)


def fix_terms_in_run(fix: str, run_text: str) -> list[str]:
    """The specific terms of ``fix`` that the run's text holds (case folded, as
    whole words: "Use" is not in "user")."""
    haystack = " ".join(run_text.split()).casefold()
    return [
        t
        for t in specific_terms(fix)
        if re.search(rf"(?<!\w){re.escape(' '.join(t.split()).casefold())}(?!\w)", haystack)
    ]
