"""A LangGraph agent fails, agentdebug explains why and proves it by rerunning the graph.

    python3 dev.py run agentdebug-langgraph examples/langgraph/run.py [--home PATH] [--keep]

1. capture: the refund agent (examples/langgraph/refund_agent.py) runs with one
   extra line, ``config={"callbacks": [AgentDebugCallback(...)]}``; its final
   state fails the success check (it claims a refund it never issued);
2. diagnosis: the callback diagnoses the failed run on the spot (free tier: rules
   and heuristic attribution, no model) and blames the agent's first tool choice;
3. fork: the closed loop asks the LangGraph executor to rerun from the blamed
   node; it finds the checkpoint before that node in the graph's SQLite
   checkpointer, forks it with ``update_state`` (the fix as a message) and runs
   ``invoke(None, fork_config)``;
4. the corrected branch issues the refund; the diff shows where the runs part.

The store and the checkpoints live in a temporary folder, removed at the end,
unless --home names one (or --keep keeps it, to try the printed commands).
Exit status 0 when the rerun verified the diagnosis, 1 otherwise.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # so "examples.langgraph.refund_agent:build_graph" resolves

from agentdebug import AgentDebug, AgentTrajectory  # noqa: E402
from agentdebug.report import render_text  # noqa: E402
from agentdebug.rerun import closed_loop, compare  # noqa: E402
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402

from examples.langgraph.refund_agent import (  # noqa: E402
    REFERENCE_ANSWER,
    REQUEST,
    build_graph,
    refund_issued,
)

FACTORY = "examples.langgraph.refund_agent:build_graph"


def heading(text: str) -> None:
    print(f"\n=== {text} " + "=" * max(0, 76 - len(text)), flush=True)


def show_events(run: AgentTrajectory, *, from_step: int = 0) -> None:
    for event in (run.events[i] for i in run.step_order()):  # as `agentdebug show` lists them
        if event.step_index < from_step:
            continue
        value: Any = event.error.message if event.error else event.output or event.input
        if isinstance(value, dict) and value.get("tool_calls"):
            value = ", ".join(f"{c['name']}({c['args']})" for c in value["tool_calls"])
        elif isinstance(value, dict) and "content" in value:
            value = value["content"]
        text = " ".join(str(value).split()) if value is not None else ""
        where = event.agent_name or "graph"
        mark = f" [checkpoint {event.checkpoint.checkpoint_id[-12:]}]" if event.checkpoint else ""
        print(f"  step {event.step_index:>2}  {event.type.value:<13} {where:<6} {text[:70]}{mark}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", help="agentdebug store folder (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary store")
    args = parser.parse_args(argv)
    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="agentdebug-lg-"))
    os.environ["AGENTDEBUG_HOME"] = str(home)  # the store and the graph's checkpoints
    os.environ.setdefault("OTEL_SDK_DISABLED", "true")
    logging.basicConfig(level=logging.WARNING, format="[%(name)s] %(message)s")
    try:
        return demo(home, keep=args.keep or bool(args.home))
    finally:
        if not (args.keep or args.home):
            shutil.rmtree(home, ignore_errors=True)


def demo(home: Path, *, keep: bool) -> int:
    dbg = AgentDebug(home)
    graph = build_graph()  # SQLite checkpointer in the home folder
    thread = f"refund-{uuid.uuid4().hex[:8]}"

    heading("1. Capture: the graph runs with AgentDebugCallback in its config")
    callback = AgentDebugCallback(
        dbg,
        success_check=refund_issued,
        reference_answer=REFERENCE_ANSWER,
        graph_factory=FACTORY,
    )
    final = graph.invoke(
        {"messages": [HumanMessage(REQUEST)]},
        config={"configurable": {"thread_id": thread}, "callbacks": [callback]},
    )
    original = callback.trajectory()
    print(f"run {original.id} (thread {thread}): {len(original.events)} events")
    show_events(original)
    print(f"final answer: {final['messages'][-1].content!r}")
    print(f"outcome: {original.outcome.status.value} ({original.outcome.reason})")
    if not callback.reports:
        print("expected a failed run and its diagnosis; the scenario is broken")
        return 1
    report = callback.reports[0]

    heading("2. Diagnosis, made automatically when the run failed (free tier)")
    print(render_text(report, original))
    root = report.root_cause

    heading("3. Fork from the blamed node's checkpoint and rerun (closed loop)")
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=refund_issued)
    loop = closed_loop(
        original,
        debugger=dbg,
        executor=executor,
        report=report,
        recoverer="native",
        policy="auto",
        progress=print,
    )
    branch_id = loop.attempts[-1].branch_id if loop.attempts else None
    if branch_id is None:
        print(f"no branch was run ({loop.status}): {loop.detail}")
        return 1
    store = dbg.store
    assert store is not None
    branch = store.load_trajectory(branch_id)
    fork = branch.metadata["langgraph"]["fork"]
    print(
        f"\nLangGraph fork: checkpoint {fork['checkpoint_id']} in thread {fork['thread_id']}, "
        f"child of {fork['from_checkpoint_id']} (the state before node "
        f"{', '.join(fork['nodes'])} at step {fork['resume_step']}), "
        f"written as node {fork['as_node']!r}"
    )
    history = list(graph.get_state_history({"configurable": {"thread_id": fork["thread_id"]}}))
    forked = next(
        s for s in history if s.config["configurable"]["checkpoint_id"] == fork["checkpoint_id"]
    )
    assert forked.parent_config is not None
    print(
        "get_state_history agrees: the fork's parent is "
        f"{forked.parent_config['configurable']['checkpoint_id']}"
    )
    mine = graph.get_state({"configurable": {"thread_id": thread}})
    print(
        f"your thread {thread!r} is as the run left it: its last message is still "
        f"{mine.values['messages'][-1].content!r} (the branch ran in its own thread)"
    )

    heading("4. The corrected branch")
    print(f"branch {branch.id} (parent {branch.parent_id}): events from step {fork['resume_step']}")
    show_events(branch, from_step=fork["resume_step"])
    print(f"outcome: {branch.outcome.status.value} ({branch.outcome.reason})")
    print()
    print(compare(original, branch).render())

    heading("Try it with the agentdebug command")
    if keep:
        exe = REPO / ".venvs" / "agentdebug-langgraph" / "bin" / "agentdebug"
        prefix = f"AGENTDEBUG_HOME={home} PYTHONPATH={REPO} {exe}"
        print(f"{prefix} show {original.id}")
        print(f"{prefix} act {original.id} --recover native --rerun --policy auto")
        print(f"{prefix} diff {original.id} {branch.id}")
    else:
        print("rerun this with --keep (or --home PATH) to keep the store and get the commands")

    verified = loop.status == "succeeded" and bool(loop.verified_by_rerun)
    print(
        f"\nBlamed: {root.agent_name if root else None} at step "
        f"{root.step_index if root else None}; branch {branch.outcome.status.value}: "
        + ("the diagnosis is verified by rerun." if verified else "NOT verified.")
    )
    return 0 if verified else 1


if __name__ == "__main__":
    sys.exit(main())
