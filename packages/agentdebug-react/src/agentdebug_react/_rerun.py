"""Rerun: fork a recorded ReAct run from a step, with the directive in view.

The executor restores the checkpoint taken at the start of the resume step
(messages and the user's state, from the trajectory itself), adds the directive
as a message the model reads (and as ``ctx.directive`` for the step function),
and runs the loop from there. The branch starts with a copy of the original's
events before the resume step, points at the original (``parent_id``,
``branch_from_event_id``, ``metadata['branch']``), and its outcome comes from the
same success check as the original's.

Two ways to get one: ``ReactExecutor(loop)`` (or ``loop.executor()``) from the
user's code, or the registered executor for framework ``react``, which rebuilds
the loop from the ``module:factory`` spec stored on the run.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import sys
import threading
from typing import Any

from agentdebug.capture.debugger import AgentDebug
from agentdebug.errors import AgentDebugError
from agentdebug.rerun.branch import branch_debugger, start_branch
from agentdebug.schema import AgentTrajectory, RerunRequest

from agentdebug_react._loop import ReactLoop
from agentdebug_react._run import ReactRun
from agentdebug_react._snapshot import (
    CHECKPOINT_KEY,
    RestorePoint,
    react_checkpoints,
    restore_point,
    snapshotter_name,
)
from agentdebug_react._step import FRAMEWORK, StepContext

log = logging.getLogger("agentdebug.react")

HOW_TO_PROVIDE = (
    "construct the executor from your code (ReactExecutor(loop) or loop.executor()), "
    "or pass factory='module:make_loop' to ReactLoop so stored runs name how to rebuild "
    "the loop, or give the CLI --executor module:make_executor"
)


class ReactExecutor:
    """Reruns a ReAct run from a step with a directive; returns the branch.

    ``loop`` is the user's :class:`ReactLoop`; without one, the loop is rebuilt
    from ``factory`` or from the ``module:factory`` spec the run recorded
    (``metadata['react']['factory']``). ``debugger`` receives the branch (the
    loop's debugger by default).
    """

    framework = FRAMEWORK

    def __init__(
        self,
        loop: ReactLoop[Any] | None = None,
        *,
        debugger: AgentDebug | None = None,
        factory: str | None = None,
    ) -> None:
        self.loop = loop
        self.debugger = debugger
        self.factory = factory
        self._built: dict[str, ReactLoop[Any]] = {}
        self._lock = threading.Lock()

    def loop_for(self, trajectory: AgentTrajectory) -> ReactLoop[Any]:
        """The loop to rerun ``trajectory`` with; raises AgentDebugError saying how
        to provide one when there is none."""
        if self.loop is not None:
            return self.loop
        recorded = trajectory.metadata.get(FRAMEWORK)
        spec = self.factory or (recorded.get("factory") if isinstance(recorded, dict) else None)
        if not isinstance(spec, str) or not spec:
            raise AgentDebugError(
                f"run '{trajectory.id}' does not say how to rebuild its ReAct loop: {HOW_TO_PROVIDE}"
            )
        with self._lock:
            if spec not in self._built:
                self._built[spec] = load_loop(spec)
            return self._built[spec]

    def preflight(self, trajectory: AgentTrajectory, *, resume_step: int | None = None) -> None:
        """What :meth:`rerun` would refuse that is known without running anything,
        so the closed loop says it before its gate rather than after a person
        approved: no loop and no recorded factory (or one that cannot be imported),
        no ReAct checkpoints, or checkpoints none of which could be restored (state
        the snapshotter could not store when the run was captured); and, given the
        step the plan reruns from, a checkpoint before that step that cannot be
        restored (a run restorable at some steps only). A recorded factory is
        imported, not called. A run with no checkpoints (imported from a
        transcript) is refused for that first: no loop would help it."""
        checkpoints = react_checkpoints(trajectory)
        if not checkpoints:
            restore_point(trajectory, 0)  # (raises, saying why there are none)
        if self.loop is None:
            recorded = trajectory.metadata.get(FRAMEWORK)
            spec = self.factory or (recorded.get("factory") if isinstance(recorded, dict) else None)
            if not isinstance(spec, str) or not spec:
                raise AgentDebugError(
                    f"run '{trajectory.id}' does not say how to rebuild its ReAct loop: "
                    f"{HOW_TO_PROVIDE}"
                )
            _resolve(spec)
        problems = [
            (e.step_index, data.get("problem", "no reason recorded"))
            for e in checkpoints
            if isinstance(data := e.metadata.get(CHECKPOINT_KEY), dict)
            and data.get("restorable") is False
        ]
        if checkpoints and len(problems) == len(checkpoints):
            step, problem = problems[0]
            raise AgentDebugError(
                f"run '{trajectory.id}': no step's state was restorable when it was "
                f"captured (before step {step}: {problem})"
            )
        if resume_step is not None:
            restore_point(trajectory, resume_step)  # (raises, saying what cannot be restored)

    def rerun(self, request: RerunRequest) -> AgentTrajectory:
        """Rerun from ``request.resume_step``. Refuses (AgentDebugError) when the run
        cannot be restored; a step function that raises during the rerun is
        recorded in the branch as its failure, never raised here."""
        point = restore_point(request.trajectory, request.resume_step)
        loop = self.loop_for(request.trajectory)
        if loop.is_async:
            return _run_coroutine(lambda: self._arerun(loop, request, point))
        run = self._branch(loop, request, point)
        with run:
            while not run.done:
                try:
                    run.step()
                except Exception:
                    break  # recorded by the run as the branch's failure
        return run.session.trajectory()

    async def _arerun(
        self, loop: ReactLoop[Any], request: RerunRequest, point: RestorePoint
    ) -> AgentTrajectory:
        run = self._branch(loop, request, point)
        with run:
            while not run.done:
                try:
                    await run.astep()
                except Exception:
                    break
        return run.session.trajectory()

    def _branch(
        self, loop: ReactLoop[Any], request: RerunRequest, point: RestorePoint
    ) -> ReactRun[Any]:
        if point.step != request.resume_step:
            # The run has no checkpoint at the step asked for (the user's question at
            # step 0, or a step the run never reached): resume where the state is known.
            log.info(
                "agentdebug: run %s has no checkpoint at step %d; resuming at step %d",
                request.trajectory.id,
                request.resume_step,
                point.step,
            )
        effective = (
            request
            if point.step == request.resume_step
            else request.model_copy(update={"resume_step": point.step})
        )
        state = _restore_state(loop, point)
        state = _patched(state, request.state_patch, request.trajectory.id)
        recorded = request.trajectory.metadata.get(FRAMEWORK)
        react_meta = {
            **(recorded if isinstance(recorded, dict) else {}),
            **loop.describe(),
            "rerun": {
                "requested_resume_step": request.resume_step,
                "resumed_at_step": point.step,
                "checkpoint_id": point.event.checkpoint.checkpoint_id
                if point.event.checkpoint
                else None,
                "checkpoint_event_id": point.event.id,
            },
        }
        if not loop.factory and isinstance(recorded, dict) and recorded.get("factory"):
            react_meta["factory"] = recorded["factory"]
        # the executor's own debugger, else the store the closed loop named, else the loop's
        debugger = self.debugger or branch_debugger(effective, loop.debugger)
        session = start_branch(
            debugger, effective, framework=FRAMEWORK, metadata={FRAMEWORK: react_meta}
        )
        ctx: StepContext[Any] = StepContext(
            messages=point.messages,
            state=state,
            step=point.step,
            goal=request.trajectory.goal,
            run_id=session.id,
            state_patch=request.state_patch,
        )
        return ReactRun(
            loop,
            session,
            ctx,
            first_step=point.step,
            record_goal=False,
            directive=request.directive,
            diagnose=False,
        )


def _restore_state(loop: ReactLoop[Any], point: RestorePoint) -> Any:
    current = snapshotter_name(loop.snapshotter)
    if point.snapshotter and point.snapshotter != current:
        log.warning(
            "agentdebug: the checkpoint was taken with snapshotter '%s' and is restored with '%s'",
            point.snapshotter,
            current,
        )
    try:
        return loop.snapshotter.restore(point.state_data)
    except Exception as exc:
        raise AgentDebugError(
            f"the loop's snapshotter '{current}' could not restore the state before step "
            f"{point.step}: {type(exc).__name__}: {exc}"
        ) from exc


def _patched(state: Any, patch: dict[str, Any] | None, run_id: str) -> Any:
    """A recoverer's proposed state change, applied where it can be (dict state);
    otherwise it stays on ``ctx.state_patch`` for the step function to apply."""
    if not patch:
        return state
    if isinstance(state, dict):
        return {**state, **patch}
    log.warning(
        "agentdebug: run %s: the state patch is not applied to %s state (only dict state is "
        "patched); the step function finds it on ctx.state_patch",
        run_id,
        type(state).__name__,
    )
    return state


def _run_coroutine(make: Any) -> AgentTrajectory:
    """Run an async rerun to completion from sync code, also from inside a running
    event loop (in a worker thread, since a loop cannot be re-entered)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        result: AgentTrajectory = asyncio.run(make())
        return result
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = asyncio.run(make())
        except BaseException as exc:  # handed back to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=work, name="agentdebug-react-rerun")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    value: AgentTrajectory = box["value"]
    return value


def _import(module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Resolve like `python -m` does: the current directory counts as a root
        # (the `agentdebug` console script does not put it on sys.path).
        cwd = os.getcwd()
        if exc.name and module_name.startswith(exc.name) and cwd not in sys.path:
            sys.path.insert(0, cwd)  # kept, as python -m keeps it: the module may import more
            return importlib.import_module(module_name)
        raise


def _resolve(spec: str) -> Any:
    """The object ``module:attribute`` names, imported but not called."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise AgentDebugError(f"ReAct loop factory '{spec}': expected module:function")
    try:
        target: Any = _import(module_name)
    except ImportError as exc:
        raise AgentDebugError(
            f"ReAct loop factory '{spec}': cannot import {module_name}: {exc}"
        ) from None
    except Exception as exc:  # the user's module failed while importing
        raise AgentDebugError(
            f"ReAct loop factory '{spec}': importing {module_name} failed: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise AgentDebugError(f"ReAct loop factory '{spec}': {module_name} has no '{attr}'")
    return target


def load_loop(spec: str) -> ReactLoop[Any]:
    """The ReactLoop named by ``module:attribute``: a ReactLoop, a ReactExecutor with
    a loop, or a function of no arguments returning either."""
    target = _resolve(spec)
    if not isinstance(target, (ReactLoop, ReactExecutor)) and callable(target):
        try:
            target = target()
        except Exception as exc:
            raise AgentDebugError(
                f"ReAct loop factory '{spec}' failed: {type(exc).__name__}: {exc}"
            ) from exc
    if isinstance(target, ReactExecutor) and target.loop is not None:
        target = target.loop
    if not isinstance(target, ReactLoop):
        raise AgentDebugError(
            f"ReAct loop factory '{spec}' gave {type(target).__name__}; it must be (or "
            "return) a ReactLoop or a ReactExecutor built with one"
        )
    return target
