"""AutoManual: rules distilled from failures, kept in a per-project manual and
offered to later runs (after Chen et al., 2024, who build an agent's manual from
its own interactions).

The manual is a JSON file (``<AGENTDEBUG_HOME>/manual.json`` by default, or
``AGENTDEBUG_MANUAL``). A plan proposes new rules; they are kept, with where they
came from, only when the gate approves the plan (suggest-only: a suggestion
nobody approved changes nothing). The plan's directive carries the manual's rules
for the run's framework, and any later run can ask :meth:`Manual.directive_for`
(the ReAct plugin's ``manual=`` option does).
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agentdebug.errors import InputError
from agentdebug.recover.base import ask, plan, resume_point
from agentdebug.schema import AgentTrajectory, DiagnosticReport, RecoveryPlan
from agentdebug.store.base import default_home

_lock = threading.Lock()


def default_manual_path() -> Path:
    env = os.environ.get("AGENTDEBUG_MANUAL")
    return Path(env) if env else default_home() / "manual.json"


@dataclass(frozen=True)
class Rule:
    text: str
    framework: str | None
    mode_id: str | None
    source_run: str | None
    created_at: str


class Manual:
    """The project's manual of rules; reads and writes one JSON file atomically."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_manual_path()

    def rules(self) -> list[Rule]:
        if not self.path.exists():
            return []
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"manual is not readable JSON: {exc}", source=str(self.path)) from None
        items = doc.get("rules") if isinstance(doc, dict) else None
        if not isinstance(items, list):
            raise InputError("expected an object with a 'rules' list", source=str(self.path))
        out = []
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("text"), str):
                raise InputError(
                    "a rule must be an object with a 'text' string",
                    source=str(self.path),
                    record=i,
                    field="text",
                )
            out.append(
                Rule(
                    text=item["text"],
                    framework=item.get("framework"),
                    mode_id=item.get("mode_id"),
                    source_run=item.get("source_run"),
                    created_at=str(item.get("created_at", "")),
                )
            )
        return out

    def rules_for(self, framework: str | None) -> list[Rule]:
        """Rules that apply to runs of ``framework`` (and those for any framework)."""
        return [r for r in self.rules() if r.framework in (None, framework)]

    def directive_for(self, framework: str | None) -> str | None:
        """The rules as a text to give an agent at the start of a run, or None."""
        rules = self.rules_for(framework)
        if not rules:
            return None
        return "Rules learnt from earlier failures:\n" + "\n".join(f"- {r.text}" for r in rules)

    def add(
        self,
        texts: list[str],
        *,
        framework: str | None,
        mode_id: str | None,
        source_run: str | None,
    ) -> list[Rule]:
        """Append the rules not already in the manual; returns those added."""
        with _lock:
            current = self.rules()
            known = {_norm(r.text) for r in current}
            now = datetime.now(UTC).isoformat()
            added = []
            for text in texts:
                text = text.strip()
                if not text or _norm(text) in known:
                    continue
                known.add(_norm(text))
                added.append(Rule(text, framework, mode_id, source_run, now))
            if added:
                self._write(current + added)
            return added

    def _write(self, rules: list[Rule]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        doc: dict[str, Any] = {"version": 1, "rules": [r.__dict__ for r in rules]}
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".manual-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2, ensure_ascii=False)
        os.replace(tmp, self.path)


def _norm(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".")


class ManualAnswer(BaseModel):
    rules: list[str] = Field(min_length=1, max_length=3)
    directive: str = Field(min_length=1)


class AutoManualRecoverer:
    name = "automanual"
    requires_model = True

    def __init__(self, manual: Manual | None = None) -> None:
        self._manual = manual

    @property
    def manual(self) -> Manual:
        return self._manual or Manual()

    def recover(self, trajectory: AgentTrajectory, report: DiagnosticReport) -> RecoveryPlan:
        step, _, _ = resume_point(report)
        manual = self.manual
        existing = manual.rules_for(trajectory.framework)
        answer, audit = ask(
            self.name,
            "recover_automanual",
            trajectory,
            report,
            ManualAnswer,
            step=step,
            purpose="rules from the failure",
            manual="\n".join(f"- {r.text}" for r in existing) or "(none yet)",
        )
        known = {_norm(r.text) for r in existing}
        new = [t.strip() for t in answer.rules if t.strip() and _norm(t) not in known]
        rules = [r.text for r in existing] + new
        lines = [answer.directive.strip()]
        if rules:
            lines.append("Rules from the project's manual:")
            lines += [f"- {text}" for text in rules]
        return plan(
            self.name,
            trajectory,
            report,
            "\n".join(lines),
            rationale=f"{len(new)} new rule(s), kept in {manual.path} if the plan is approved",
            audit=audit,
            rules=rules,
            new_rules=new,
        )

    def approved(self, plan: RecoveryPlan, trajectory: AgentTrajectory) -> None:
        """The gate approved the plan: keep its new rules in the manual, for later runs.
        A suggestion that nobody approved changes nothing."""
        self.manual.add(
            plan.new_rules,
            framework=trajectory.framework,
            mode_id=plan.mode_id,
            source_run=trajectory.id,
        )
