"""The whole loop on a hand-written ReAct agent, in one command:

    python3 dev.py run agentdebug-react examples/react/run.py [--home PATH] [--keep]

1. the agent runs and fails (a wrong answer, decided at step 1), captured;
2. the automatic free-tier diagnosis (rules + heuristic attribution, no model)
   blames step 1 and proposes a directive;
3. the closed loop reruns the agent from step 1 with the directive (gate: auto);
4. the branch succeeds, and the diff shows where the two runs part.

The store is a temporary folder, removed at the end, unless --home names one
(or --keep keeps the temporary one, to try the agentdebug commands printed at
the end). Exit status 0 when the rerun verified the diagnosis, 1 otherwise.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # so the factory spec examples.react.agent:make_loop resolves

from agentdebug import AgentDebug  # noqa: E402
from agentdebug.report import render_text  # noqa: E402
from agentdebug.rerun import closed_loop, compare  # noqa: E402

from examples.react.agent import make_executor, run_agent  # noqa: E402


def heading(text: str) -> None:
    print(f"\n=== {text} " + "=" * max(0, 76 - len(text)), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", help="agentdebug store folder (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary store")
    args = parser.parse_args(argv)
    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="agentdebug-react-"))
    os.environ["AGENTDEBUG_HOME"] = str(home)  # the factories' default store is this one too
    logging.basicConfig(level=logging.WARNING, format="[%(name)s] %(message)s")
    try:
        return demo(home, keep=args.keep or bool(args.home))
    finally:
        if not (args.keep or args.home):
            shutil.rmtree(home, ignore_errors=True)


def demo(home: Path, *, keep: bool) -> int:
    dbg = AgentDebug(home)

    heading("1. The agent runs (captured by agentdebug-react)")
    result = run_agent(dbg)  # the automatic diagnosis logs its summary when the run fails
    original = result.trajectory()
    print(f"run {result.run_id}: {result.steps} steps, final answer {result.answer!r}")
    print(f"success check: {'passed' if result.ok else 'FAILED'} ({result.reason})")
    if result.ok or result.report is None:
        print("expected a failing run with a diagnosis; the scenario is broken")
        return 1

    heading("2. Automatic diagnosis (free tier: rules + heuristic attribution)")
    print(render_text(result.report, original))
    root = result.report.root_cause

    heading("3. Closed loop: recover (native), gate (auto), rerun from the blamed step")
    loop = closed_loop(
        original,
        debugger=dbg,
        executor=make_executor(dbg),
        recoverer="native",
        policy="auto",
        progress=print,
    )
    print(f"loop status: {loop.status}; verified by rerun: {loop.verified_by_rerun}")
    branch_id = loop.attempts[-1].branch_id if loop.attempts else None
    if branch_id is None:
        print(f"no branch was run: {loop.detail}")
        return 1

    heading("4. Original vs branch")
    store = dbg.store
    assert store is not None
    branch = store.load_trajectory(branch_id)
    print(compare(original, branch).render())

    heading("Try it with the agentdebug command")
    if keep:
        prefix = f"AGENTDEBUG_HOME={home} python3 dev.py run agentdebug-react -m agentdebug"
        print(f"{prefix} show {original.id}")
        print(
            f"{prefix} act {original.id} --recover native --rerun --policy auto "
            "--executor examples.react.agent:make_executor"
        )
        print(f"{prefix} diff {original.id} {branch_id}")
    else:
        print("rerun this with --keep (or --home PATH) to keep the store and get the commands")

    verified = loop.status == "succeeded" and root is not None and root.step_index == 1
    print(
        f"\nBlamed step {root.step_index if root else None}; "
        f"branch {branch.outcome.status.value}: "
        + ("the diagnosis is verified by rerun." if verified else "NOT verified.")
    )
    return 0 if verified else 1


if __name__ == "__main__":
    sys.exit(main())
