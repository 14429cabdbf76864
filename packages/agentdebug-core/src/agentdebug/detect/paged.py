"""A model that went on from the first page of a paginated result.

Asked to close every stale ticket, an agent lists them; the tool answers with four
tickets and ``"next_page": 2`` (seven in all), the model closes those four and says
it closed them all. The run fails on the three it never saw. The tool did its part;
the fault is the model call that acted on part of a result as if it were the whole
(``observation.poor_retrieval``: a result accepted though it says it is not all).

The rule keeps to what it can read for certain, in a failed run: a tool's result
(JSON, at its top level or one level down) that says more pages follow
(``next_page``, ``nextPageToken``, ``next_cursor``, ``has_more: true``, ``page``
under ``total_pages``, a ``next`` link), no later call of that tool (for the next
page, or any), and a failure reason that names a value (an id with digits, a number
of two digits or more) that nothing in the run holds: the part that was never
read. The first model reply after that result is blamed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

from agentdebug.detect.lost import failure_values
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding
from agentdebug.text import compact_json, flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "more_pages_unread"
_READ = 100_000  # characters of an event read
_NEXT = (
    "next_page",
    "nextPage",
    "next_page_token",
    "nextPageToken",
    "next_cursor",
    "nextCursor",
    "next",
    "has_more",
    "hasMore",
    "more_results",
)
_MODEL = frozenset({EventType.LLM_RESPONSE, EventType.LLM_CALL})


def _more(output: Any) -> str | None:
    """What in a tool's result says more pages follow (``'next_page: 2'``), or None."""
    data = output
    if isinstance(output, str):
        try:
            data = orjson.loads(output)
        except orjson.JSONDecodeError:
            return None
    for record in _records(data):
        for key in _NEXT:
            value = record.get(key)
            if value is True or (
                isinstance(value, (str, int)) and not isinstance(value, bool) and value
            ):
                return compact_json({key: value})[1:-1]
        page, pages = record.get("page"), record.get("total_pages", record.get("totalPages"))
        if isinstance(page, int) and isinstance(pages, int) and page < pages:
            return f'"page":{page},"total_pages":{pages}'
    return None


def _records(data: Any) -> Iterator[dict[str, Any]]:
    """The result's object, and the objects one level down (``{"meta": {...}}``)."""
    if isinstance(data, dict):
        yield data
        for value in data.values():
            if isinstance(value, dict):
                yield value


def rule_more_pages_unread(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's model that acted on the first page of a result that had more."""
    run = ctx.trajectory
    wanted = failure_values(run)
    if not wanted:
        return
    events = [e for e in run.events if e.type is not EventType.FINAL_ANSWER]
    held = "\n".join(f"{flatten(e.input, _READ)}\n{flatten(e.output, _READ)}" for e in events)
    unseen = [value for value, pattern in wanted if not pattern.search(held)]
    if not unseen:
        return  # what failed was read: not a page left unread
    for i, event in enumerate(events):
        if event.type is not EventType.TOOL_RESULT or event.error is not None:
            continue
        said = _more(event.output)
        if said is None:
            continue
        tool = (event.metadata or {}).get("tool_name")
        later = events[i + 1 :]
        if any(
            e.type is EventType.TOOL_CALL and (e.metadata or {}).get("tool_name") == tool
            for e in later
        ):
            continue  # it asked again: read on
        model = next((e for e in later if e.type in _MODEL and e.agent_name), None)
        if model is not None:
            yield _finding(model, event, str(tool or "the tool"), said, unseen)
            return


def _finding(
    model: AgentEvent, result: AgentEvent, tool: str, said: str, unseen: list[str]
) -> Finding:
    agent = model.agent_name
    missing = ", ".join(unseen[:3])
    return rule_finding(
        RULE,
        "observation.poor_retrieval",
        model,
        f"{agent} went on from {tool}'s result at step {result.step_index}, which said "
        f"more followed ({said}), without asking for the rest; the failure names "
        f"{missing}, which the run never read",
        confidence=0.65,
        evidence=[quoted(result, "output", said)],
        metadata={
            "fix": (
                f"At step {model.step_index}, {agent}: {tool}'s result at step "
                f"{result.step_index} was one page of more ({said}); call {tool} for the "
                "next pages until none is left before acting on the list."
            )
        },
    )
