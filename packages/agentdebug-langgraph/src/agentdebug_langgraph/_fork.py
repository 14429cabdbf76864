"""The fork a rerun starts from: a state update on the checkpoint before the
blamed step, made as the node(s) that wrote it (so LangGraph's edges lead to the
blamed super-step again), and the check that the correction reaches the blamed
node before anything runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from agentdebug import EventType
from agentdebug.errors import AgentDebugError
from agentdebug.schema import AgentTrajectory, RerunRequest
from langchain_core.messages import BaseMessage, HumanMessage

from agentdebug_langgraph._checkpoints import (
    COMMAND_FORK,
    ResumePoint,
    require_saved_thread,
    writers_of,
)
from agentdebug_langgraph._graph_errors import OUT_OF_STEPS

# how a directive_update is given to `agentdebug act --rerun`
BY_CLI = " (on the command line: --executor-option directive_update=module:function)"


def directive_text(request: RerunRequest) -> str:
    """The correction as the model reads it: what went wrong last time, and the fix.
    The branch resumes before the mistake, so without the first part the model
    would not know what the fix is about."""
    why = request.plan.rationale.strip() if request.plan and request.plan.rationale else ""
    text = f"A previous attempt at this task went wrong from here. Fix: {request.directive}"
    return f"{text} (What went wrong: {why})" if why else text


def fork(
    graph: Any,
    snap: Any,
    values: dict[str, Any],
    point: ResumePoint,
    *,
    routed_by_command: bool | str = False,
) -> tuple[Any, str]:
    """A state update on ``snap`` made as the node(s) that wrote it, so that the
    edges LangGraph re-evaluates lead to the same tasks again: the blamed nodes and
    every sibling of their super-step (parallel nodes, each ``Send`` branch).

    When several nodes wrote ``snap``, one super-step of updates, one per writer
    (``bulk_update_state``), keeps all their edges; a single ``update_state`` as
    one of them would re-run only that one's edges and drop the others' tasks.
    Each candidate is checked against ``snap``'s own pending tasks (as a multiset)
    before it is used; the first that keeps them all is the fork."""
    from langgraph.types import Command, StateUpdate

    # (a router a loop's earlier round forked as: its name, routed_by_command)
    writers = [routed_by_command] if isinstance(routed_by_command, str) else writers_of(graph, snap)
    wanted = Counter(str(n) for n in snap.next)
    attempts: list[tuple[str, Callable[[], Any]]] = []
    if len(writers) > 1:
        updates = [StateUpdate(values, writers[0], None)]
        updates += [StateUpdate(None, w, None) for w in writers[1:]]
        attempts.append(
            (
                f"all of {', '.join(writers)}",
                lambda: graph.bulk_update_state(snap.config, [updates]),
            )
        )

    def as_one(node: str | None, update: Any = values) -> Callable[[], Any]:
        return lambda: graph.update_state(snap.config, update, as_node=node)

    for as_node in dict.fromkeys([*writers, None]):
        attempts.append((as_node or "(inferred)", as_one(as_node)))
    # A writer that routed with Command(goto=...) (a supervisor, a handoff: the run
    # recorded it ending with one) wrote the route itself, which a plain update made
    # as it does not write again: the update goes to the same nodes as a Command.
    # Only then: a Command would override the routing of an edge, which the check
    # below could not tell. (Send packets a Command carried cannot be made again
    # this way: they hold arguments the snapshot does not.)
    pulls = [str(t.name) for t in snap.tasks if t.path and t.path[0] == _PULL]
    if routed_by_command and pulls and len(pulls) == len(snap.tasks):
        routed = Command(goto=pulls if len(pulls) > 1 else pulls[0], update=values)
        for as_node in writers:
            attempts.append((f"{as_node}{COMMAND_FORK}", as_one(as_node, routed)))
    tried: list[str] = []
    dropped: set[str] = set()
    for label, make in attempts:
        try:
            config = make()
        except Exception as exc:
            tried.append(f"as {label}: {type(exc).__name__}: {exc}")
            continue
        pending = Counter(str(n) for n in graph.get_state(config).next)
        missing = wanted - pending
        if set(point.nodes) <= set(pending) and not missing:
            unwritten = _unwritten(graph, snap.config, config, values)
            if not unwritten:
                return config, label
            dropped.update(unwritten)
            tried.append(f"as {label}: LangGraph dropped {', '.join(map(repr, unwritten))}")
            continue
        lost = f", without {', '.join(sorted(missing.elements()))}" if missing else ""
        tried.append(f"as {label}: next would be {sorted(pending.elements()) or 'END'}{lost}")
    if dropped:
        raise AgentDebugError(
            f"cannot fork before node {', '.join(point.nodes)}: the update that carries "
            f"the correction loses {', '.join(map(repr, sorted(dropped)))} ({'; '.join(tried)}). "
            "An update made as the node(s) that wrote the checkpoint writes only what "
            "they can write: at the graph's start, only the keys of its input schema "
            "(StateGraph(..., input_schema=...)). Give LangGraphRerunExecutor a "
            "directive_update(request, snapshot) that puts the correction in keys "
            "they write, or the rerun request such a state_patch"
            f"{BY_CLI}"
        )
    sent = (
        ""
        if len(pulls) == len(snap.tasks)
        else (
            " Some of its tasks are Send packets: a fork makes them again only through the "
            "edge that sent them, not after a node that sent them with Command(goto=[Send(...)])."
        )
    )
    raise AgentDebugError(
        f"cannot fork before node {', '.join(point.nodes)}: no state update leaves its "
        f"super-step's tasks pending ({'; '.join(tried)}).{sent} The edges into it depend "
        "on the state being patched; propose a state_patch that keeps them, or rerun "
        "from an earlier step"
    )


def _unwritten(graph: Any, before: Any, after: Any, values: dict[str, Any]) -> list[str]:
    """The state keys of ``values`` the update that made checkpoint ``after`` from
    ``before`` did not write (their channel's version unchanged): LangGraph drops
    without a word a key the node an update is made as cannot write (one outside
    the input schema, for an update made as ``__start__``), and the branch would
    run without the correction. Empty when the checkpointer does not say."""
    channels = getattr(graph, "channels", None) or {}
    keys = [k for k in values if k in channels]
    if not keys:
        return []  # (a one-value state, or a graph that does not say)
    try:
        was = graph.checkpointer.get_tuple(before).checkpoint["channel_versions"]
        now = graph.checkpointer.get_tuple(after).checkpoint["channel_versions"]
    except Exception:
        return []
    return sorted(str(k) for k in keys if now.get(k) == was.get(k))


_PULL = "__pregel_pull"  # the first element of a task path: a node started by its edges
_TASKS = "__pregel_tasks"  # the channel holding a checkpoint's pending Send packets


def require_delivered(
    graph: Any, fork_config: Any, original: AgentTrajectory, point: ResumePoint, text: str
) -> None:
    """Refuse a fork whose directive cannot reach the blamed node: one started by a
    ``Send`` whose packet does not carry the state's messages (a map-reduce worker
    given ``{"order_id": ...}``). The sending edge made the fork's packets from the
    patched state (they are in the fork checkpoint's tasks channel); if none of the
    blamed node's holds the directive, the branch would rerun as before and
    discredit a diagnosis that may be right."""
    blamed = _blamed_node(original, point)
    try:
        saved = graph.checkpointer.get_tuple(fork_config)
        sends = saved.checkpoint["channel_values"].get(_TASKS) or []
    except Exception:  # a checkpointer that does not say: let the branch run
        return
    packets = [send.arg for send in sends if getattr(send, "node", None) == blamed]
    if not packets or any(_carries(arg, text) for arg in packets):
        return  # not a Send branch (it reads the state), or the directive is in its packet
    arg = packets[0]
    what = (
        f"keys {', '.join(sorted(map(str, arg)))}"
        if isinstance(arg, dict)
        else (type(arg).__name__)
    )
    raise AgentDebugError(
        f"cannot carry the directive to node '{blamed}' at step {point.requested_step}: "
        f"a Send starts it with a packet ({what}) that the sending edge builds without "
        "the state's messages, so the correction added to them does not reach it. Give "
        "LangGraphRerunExecutor a directive_update(request, snapshot) that puts the "
        "correction where that edge reads it, or the rerun request a state_patch"
        f"{BY_CLI}"
    )


def require_subgraph_reads(
    graph: Any, original: AgentTrajectory, point: ResumePoint, key: str
) -> None:
    """Refuse a fork whose directive cannot reach inside the subgraph the blamed
    step runs in: the blamed root-level node is a compiled graph added as the node
    itself, and ``key`` (where the directive goes) is not in its input schema, so
    LangGraph never hands it in and the branch would rerun as before, discrediting
    a diagnosis that may be right. (A subgraph a node function invokes gets what
    the function gives it, which cannot be told beforehand.)"""
    node = _blamed_node(original, point)
    spec = getattr(getattr(graph, "builder", None), "nodes", {}).get(node)
    sub = getattr(getattr(spec, "runnable", None), "builder", None)
    schemas = getattr(sub, "schemas", None)
    if not isinstance(schemas, dict):
        return  # not a compiled StateGraph added as the node
    keys = schemas.get(getattr(sub, "input_schema", None))
    state = schemas.get(getattr(sub, "state_schema", None))
    if not isinstance(keys, dict) or not isinstance(state, dict):
        return
    if key in keys and key in state:  # (given in, and kept where its nodes read it)
        return
    which = "input"
    if key in keys:  # (its input takes the key, its state does not keep it)
        keys, which = state, "state"
    inner = next(
        (
            e.agent_name
            for e in original.events
            if e.type is EventType.AGENT_START and e.step_index == point.requested_step
        ),
        None,
    )
    where = (
        f"node '{inner}', in subgraph '{node}',"
        if inner and inner != node
        else f"subgraph '{node}'"
    )
    raise AgentDebugError(
        f"cannot carry the directive to {where} at step {point.requested_step}: the "
        f"subgraph's {which} schema "
        f"({', '.join(map(str, keys)) or 'no keys'}) has no "
        f"'{key}', so the correction added to the parent's '{key}' does not reach inside "
        "it. Give LangGraphRerunExecutor a directive_update(request, snapshot) that puts "
        "the correction in a key the subgraph reads, or the rerun request a state_patch"
        f"{BY_CLI}"
    )


def _blamed_node(original: AgentTrajectory, point: ResumePoint) -> str | None:
    """The root-level node of the blamed step (a subgraph node's parent-graph node)."""
    starts = {
        e.step_index: e
        for e in original.events
        if e.type is EventType.AGENT_START and "node" in e.metadata
    }
    event = starts.get(point.requested_step)
    if event is None:
        return point.nodes[0] if point.nodes else None
    root = starts.get(event.metadata.get("root_step", event.step_index), event)
    return str(root.metadata["node"])


def _carries(value: Any, text: str, depth: int = 0) -> bool:
    """Whether ``text`` is somewhere in a packet (a message's content, a string)."""
    if depth > 8:
        return False
    if isinstance(value, str):
        return text in value
    if isinstance(value, BaseMessage):
        return _carries(value.content, text, depth + 1)
    if isinstance(value, dict):
        return any(_carries(v, text, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_carries(v, text, depth + 1) for v in value)
    fields = getattr(value, "__dict__", None)  # a dataclass or pydantic packet
    return isinstance(fields, dict) and _carries(fields, text, depth + 1)


def _root_steps(events: Any) -> list[int]:
    return [
        step
        for e in events
        if e.type is EventType.AGENT_START
        and "node" in e.metadata
        and "namespace" not in e.metadata
        and not e.metadata.get("inherited_from")
        and isinstance(step := e.metadata.get("langgraph_step"), int)
        and not isinstance(step, bool)
    ]


def remaining_budget(original: AgentTrajectory, source_step: Any) -> tuple[int, int] | None:
    """For a run that stopped at its recursion limit: (the limit its branch gets, the
    super-steps the run had left from the one the branch redoes). LangGraph counts
    the limit per invocation, from the checkpoint it starts at; given the run's own
    limit, a branch would get it afresh, run past where the run had to stop, and
    pass for that alone. So the branch gets what was left (at least 1: LangGraph's
    smallest limit lets it run a super-step or two more than that), and a branch
    that passes only after more super-steps than were left does not pass
    (:func:`over_budget`). A branch of such a branch (the loop's next round) is
    kept to what was left of that. ``source_step``: the LangGraph step of the
    checkpoint the fork was made from. None for a run that did not hit its limit,
    and for one whose subgraph hit it (:func:`_limit_was_a_subgraphs`)."""
    if not isinstance(source_step, int):
        return None
    lg = original.metadata.get("langgraph")
    forked = lg.get("fork") if isinstance(lg, dict) else None
    given = forked.get("steps_left") if isinstance(forked, dict) else None
    steps = _root_steps(original.events)
    if isinstance(given, int) and steps:  # a branch kept to what its run had left
        # its own steps come one after the run's (the fork's update took a step
        # number); a point before them is in the run's numbering
        first = min(steps)
        left = given + first - (1 if source_step + 1 >= first else 2) - source_step
    else:
        error = original.outcome.error
        raised = error is not None and error.type == "GraphRecursionError"
        # or the prebuilt agent stopped itself a super-step before the limit's last
        stopped = not raised and any(
            e.metadata.get("langgraph_event") == OUT_OF_STEPS for e in original.events
        )
        if not (raised or stopped) or not steps or _limit_was_a_subgraphs(original.events):
            return None
        # its super-steps source_step + 1 .. the limit's last (the last it ran, when
        # LangGraph raised; the one after, when the agent stopped short of it)
        left = max(steps) + (1 if stopped else 0) - source_step
    # a branch runs its limit + 2 super-steps from the fork (whose update takes one)
    return max(1, left - 2), max(0, left)


def _limit_was_a_subgraphs(events: Any) -> bool:
    """Whether the recursion limit the run hit was a subgraph's: LangGraph counts
    it per invocation, a subgraph's too, so a subgraph that ran out (a tool loop
    raising ``GraphRecursionError``, recorded at the node that ran it; the prebuilt
    agent as a node, saying it needs more steps at a node of its own) had the whole
    limit, and so has the subgraph the branch runs again under the run's limit. The
    top-level graph's steps did not run out, so there is nothing to hold it to."""
    inside = {
        e.step_index
        for e in events
        if e.type is EventType.AGENT_START and "node" in e.metadata and "namespace" in e.metadata
    }
    for e in reversed(events):
        if e.type is not EventType.ERROR:
            continue
        if e.metadata.get("langgraph_error") == "recursion_limit":
            return bool(e.module == "langgraph.node")  # (the graph's own: langgraph.graph)
        if e.metadata.get("langgraph_event") == OUT_OF_STEPS:
            return e.step_index in inside
    return False


def over_budget(branch: AgentTrajectory, left: int) -> str | None:
    """Why a branch that passed does not count, when it ran more super-steps than
    the run had left under its recursion limit."""
    ran = len(set(_root_steps(branch.events)))
    if ran <= left:
        return None
    return (
        f"it finished only after {ran} super-step{'' if ran == 1 else 's'}, and the run had "
        f"{left} left under its recursion limit"
    )


def require_state_keys(
    graph: Any, patch: dict[str, Any], run_id: str, what: str = "the state patch"
) -> None:
    """Refuse a state patch that names keys the graph's state does not have:
    ``update_state`` drops them without a word, and the branch would run as the
    run did, discrediting a diagnosis that may be right."""
    declared = getattr(getattr(graph, "builder", None), "channels", None)
    if not isinstance(declared, dict) or not declared or "__root__" in declared:
        return  # (a graph that does not say, or whose state is one value: as it is)
    unknown = sorted(str(k) for k in patch if k not in declared)
    if unknown:
        raise AgentDebugError(
            f"cannot rerun run '{run_id}' with {what}: the graph's state has no "
            f"{', '.join(repr(k) for k in unknown)} (its keys: {', '.join(sorted(declared))}); "
            "LangGraph would drop them and run the branch unchanged"
        )


def state_keys(graph: Any) -> set[str]:
    """The keys of the graph's state: its state schema's (not the keys of a node's
    input schema, which LangGraph adds as channels too)."""
    builder = getattr(graph, "builder", None)
    schemas = getattr(builder, "schemas", None) or {}
    channels = schemas.get(getattr(builder, "state_schema", None)) or getattr(graph, "channels", {})
    return {str(k) for k in channels or () if not str(k).startswith("__") and ":" not in str(k)}


def replaced_by_updates(graph: Any, key: str) -> bool:
    """Whether an update to state ``key`` replaces its value (a key declared without
    a reducer, ``messages: list``, whose nodes return the whole list) rather than
    adding to it."""
    from langgraph.channels import LastValue

    channel = getattr(graph, "channels", {}).get(key)
    return isinstance(channel, LastValue)


def as_held(held: Any, text: str) -> Any:
    """The directive as one more of the messages the state holds, in their form: a
    ``{"role": "user", "content": ...}`` dict among OpenAI-style dicts, a string
    among strings, else a ``HumanMessage`` (what add_messages makes of any of them).
    A node that reads ``m["content"]`` must not be handed a message object it
    cannot read: the branch would fail on the correction itself."""
    last = held[-1] if isinstance(held, list | tuple) and held else None
    if isinstance(last, dict) and "role" in last and "content" in last:
        return {"role": "user", "content": text}
    if isinstance(last, str):
        return text
    return HumanMessage(content=text)


def directive_message(graph: Any, snap: Any, key: str, request: RerunRequest) -> dict[str, Any]:
    """The update that adds the directive to the messages under ``key`` as one more
    message (to those the state holds, for a key without a reducer, which an update
    replaces); refused for a key the state has not, or one holding a value that is
    no list of messages."""
    values = snap.values if isinstance(snap.values, dict) else {}
    if key not in values and key not in state_keys(graph):
        raise no_key(key, state_keys(graph) | set(values))
    held = values.get(key)  # (a key the state declares, not filled yet: none held)
    if held is not None and not isinstance(held, list | tuple):
        # (a text, a number: the directive in its place would replace the user's value)
        raise AgentDebugError(
            f"the state key '{key}' holds {type(held).__name__}, not a list of messages, "
            "so the directive cannot be added to it as a message without replacing what "
            "it holds; name a key that holds the messages, or give a state_patch or "
            f"LangGraphRerunExecutor(directive_update=...){BY_CLI}"
        )
    said = [as_held(held, directive_text(request))]
    whole = "__root__" in (getattr(graph, "channels", None) or {})
    if whole or replaced_by_updates(graph, key):
        said = [*held, *said] if isinstance(held, list | tuple) else said
    if whole:  # (a graph whose state is one value, StateGraph(dict): an update replaces
        return {**values, key: said}  # all of it, so the rest of it goes along)
    return {key: said}


def no_key(key: str, keys: set[str]) -> AgentDebugError:
    """The refusal of a directive key the graph's state does not have."""
    return AgentDebugError(
        f"the graph's state has no '{key}' key to carry the directive as a message (its "
        f"keys: {', '.join(sorted(keys)) or 'none'}); give the rerun request a state_patch, "
        "or LangGraphRerunExecutor(directive_key=... or directive_update=...) (on the "
        "command line: --executor-option directive_key=KEY, a key that holds the messages, "
        "or directive_update=module:function)"
    )


def require_rerunnable(graph: Any, run: Any, directive_key: str | None) -> None:
    """What a rerun of ``run`` on ``graph`` would be refused for, known without
    forking: a graph that ran none of the run's nodes or holds nothing of its thread
    (:func:`require_saved_thread`), a ``directive_key`` its state does not have."""
    require_saved_thread(graph, run)
    channels = state_keys(graph) | set(getattr(graph, "channels", None) or ())
    if directive_key is not None and directive_key not in channels:
        raise no_key(directive_key, state_keys(graph))
