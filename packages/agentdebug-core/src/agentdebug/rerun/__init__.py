"""Reruns and the closed loop: fork a run from the blamed step with a directive,
keep the branch beside the original, score it, and go round again if it fails."""

from agentdebug.rerun.branch import (
    branch_debugger,
    checkpoint_before,
    inherited_events,
    start_branch,
)
from agentdebug.rerun.diff import BranchDiff, compare
from agentdebug.rerun.executors import configure_executor, find_executor, load_executor
from agentdebug.rerun.loop import closed_loop
from agentdebug.rerun.score import (
    CallableScorer,
    LLMJudgeScorer,
    OutcomeScorer,
    ReferenceScorer,
    final_answer,
    make_scorer,
)

__all__ = [
    "BranchDiff",
    "CallableScorer",
    "LLMJudgeScorer",
    "OutcomeScorer",
    "ReferenceScorer",
    "branch_debugger",
    "checkpoint_before",
    "closed_loop",
    "compare",
    "configure_executor",
    "final_answer",
    "find_executor",
    "inherited_events",
    "load_executor",
    "make_scorer",
    "start_branch",
]
