"""The contracts between the stages of the loop: one small protocol per stage.

A new strategy is one class that satisfies one of these; register it through the
pluggy hooks in :mod:`agentdebug.plugins` and every command can use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from agentdebug.schema import (
    AgentTrajectory,
    DiagnosticReport,
    Finding,
    GoldLabel,
    Hypothesis,
    RecoveryPlan,
    RerunRequest,
    Score,
)


@runtime_checkable
class Detector(Protocol):
    """Finds what went wrong; reads a trajectory, returns findings."""

    name: str

    def detect(self, trajectory: AgentTrajectory) -> Iterable[Finding]: ...


@runtime_checkable
class Attributor(Protocol):
    """Names the responsible agent and step; returns hypotheses, best first."""

    name: str

    def attribute(
        self, trajectory: AgentTrajectory, findings: Sequence[Finding]
    ) -> list[Hypothesis]: ...


@dataclass(frozen=True)
class ImportedRun:
    """One run read from a file, with the benchmark's answer kept apart."""

    trajectory: AgentTrajectory
    label: GoldLabel | None = None


@dataclass
class Source:
    """A file being imported, parsed once and shared by every importer's sniff.

    ``document`` is the parsed JSON when the whole file is one JSON value;
    ``records`` is the parsed lines when it is JSON Lines; ``text`` is the decoded
    text of a plain-text file (``.txt``, ``.log``, or a suffix an importer declares
    in its ``suffixes``), which is not parsed as JSON, for importers of text
    formats (ReAct transcripts, say). At most one is set.
    """

    path: Path
    document: Any = None
    records: list[Any] | None = None
    text: str | None = None

    @property
    def name(self) -> str:
        return str(self.path)


@runtime_checkable
class Importer(Protocol):
    """Reads one file format into trajectories.

    An importer may also have ``suffixes``: the file name suffixes of its format
    (``(".pipelog", ".log")``, compared without case). ``ingest`` of a folder then
    picks those files up beside ``*.json``, ``*.jsonl`` and ``*.ndjson`` (with
    ``--format NAME``, only the named importer's), and a file with such a suffix
    that is not JSON reaches ``sniff`` as text (``Source.text``) rather than as
    a JSON error; ``agentdebug plugins`` lists them. Without it, a file of its
    format is read when named, and with ``--format NAME`` a file that is not
    JSON is handed to it as text."""

    name: str
    description: str

    def sniff(self, source: Source) -> str | None:
        """None when this importer accepts the source, otherwise why it refuses."""
        ...

    def load(self, source: Source) -> Iterator[ImportedRun]: ...


@runtime_checkable
class Recoverer(Protocol):
    """Turns a report into a suggested correction (a retry directive and the step to
    rerun from). Suggest-only: the policy gate decides whether anything runs."""

    name: str

    def recover(self, trajectory: AgentTrajectory, report: DiagnosticReport) -> RecoveryPlan: ...


@runtime_checkable
class RerunExecutor(Protocol):
    """Reruns a framework's agent from a step with a directive, through the
    framework's own state restore; returns the branch trajectory (linked to the
    original by ``parent_id``, with ``metadata['branch']`` from the request).

    An executor may also have ``preflight(trajectory) -> None``, raising an
    ``AgentDebugError`` that says why when it can tell without running anything
    that it cannot rerun the run (no state kept to restore, no way to rebuild the
    agent): the closed loop calls it before its gate, so no one is asked to
    approve a rerun that cannot run; a ``preflight`` that takes a keyword ``scorer``
    is told the name of the scorer that will judge the branch ("default",
    "outcome", "reference", "llm", or a callable's), one that takes a keyword
    ``resume_step`` the step the plan reruns from, and one that takes
    ``state_patch`` too the plan's state patch with it (``{}`` when the plan has
    none: the directive alone must reach the agent). And ``with_options(options) ->
    RerunExecutor``:
    a copy configured by the CLI's ``--executor-option KEY=VALUE`` pairs (text),
    raising an ``AgentDebugError`` naming an option it does not take or a value
    it cannot use. And ``plan_notes(trajectory, plan) -> list[str]``: what the
    rerun will do beside the plan that whoever approves it should know (answers
    a person gave the original run that the branch will be given again): the
    loop adds them to the plan's notes before its gate, which shows them."""

    framework: str

    def rerun(self, request: RerunRequest) -> AgentTrajectory: ...


@runtime_checkable
class Scorer(Protocol):
    """Says whether a branch reached the run's goal."""

    name: str

    def score(self, branch: AgentTrajectory, original: AgentTrajectory) -> Score: ...
