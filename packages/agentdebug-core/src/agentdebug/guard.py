"""The detectors, each run under its own guard, and what strategies return checked.

Detectors and attributors are often a plugin's. One that raises, or returns
something other than what its protocol says (dicts instead of Findings, one
Finding instead of a list), is named in the report's notes with what it did, and
the rest of the diagnosis goes on; so is a finding of a failure mode that no
installed plugin registers, which is kept but not used to name the root cause.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence

from agentdebug.audit import note
from agentdebug.audit import record as record_audit
from agentdebug.errors import AgentDebugError
from agentdebug.llm import LLMError
from agentdebug.plugins import Registry
from agentdebug.schema import AgentTrajectory, AuditEntry, Finding, Hypothesis
from agentdebug.stages import Detector

log = logging.getLogger("agentdebug.diagnose")

#: ``Finding.metadata`` key marking a finding whose ``mode_id`` no plugin registers.
UNKNOWN_MODE = "unknown_mode"

# the hooks whose problems leave a diagnosis short of something (a plugin that
# could not be loaded at all: None)
_DIAGNOSIS_HOOKS = (
    None,
    "agentdebug_failure_modes",
    "agentdebug_detectors",
    "agentdebug_attributors",
)


def audit_entry(
    stage: str, strategy: str, started: float, *, outcome: str = "ok", detail: str | None = None
) -> AuditEntry:
    return AuditEntry(
        stage=stage,
        strategy=strategy,
        outcome=outcome,
        latency_ms=round((time.perf_counter() - started) * 1000, 3),
        detail=detail,
    )


def run_detectors(
    trajectory: AgentTrajectory, chosen: Sequence[Detector], reg: Registry, strict: bool
) -> list[Finding]:
    """Every detector's findings; one that fails is noted (its findings missing) and
    the others go on. Audit entries and notes go to the current audit scope."""
    findings: list[Finding] = []
    for det in chosen:
        started = time.perf_counter()
        try:
            found, wrong = _findings(det.detect(trajectory))
        except LLMError as exc:
            if strict:
                raise
            note("diagnose", f"detector '{det.name}' failed: {exc}; its findings are missing")
            record_audit(audit_entry("detect", det.name, started, outcome="error", detail=str(exc)))
            continue
        except AgentDebugError:
            raise
        except Exception as exc:
            log.debug("detector %s failed", det.name, exc_info=True)  # (the note says it)
            note(
                "diagnose",
                f"detector '{det.name}' failed ({type(exc).__name__}: {exc}); its findings are missing",
            )
            record_audit(audit_entry("detect", det.name, started, outcome="error", detail=str(exc)))
            continue
        if wrong is not None and not found:
            note("diagnose", f"detector '{det.name}' failed ({wrong}); its findings are missing")
            record_audit(audit_entry("detect", det.name, started, outcome="error", detail=wrong))
            continue
        if wrong is not None:
            note(
                "diagnose",
                f"detector '{det.name}' returned {wrong}; those are missing, "
                f"its {len(found)} finding(s) are kept",
            )
        found = _marked(det.name, found, reg)
        findings.extend(found)
        record_audit(audit_entry("detect", det.name, started, detail=f"{len(found)} finding(s)"))
    return findings


def _findings(returned: object) -> tuple[list[Finding], str | None]:
    """The Findings a detector returned, and what else it returned (None: nothing
    else). Its items are read here, so a generator's bug raises here too."""
    if (
        returned is None
        or isinstance(returned, Finding | str | bytes | Mapping)
        or not isinstance(returned, Iterable)
    ):
        return [], f"it returned {describe(returned)}, not a list of Findings"
    items = list(returned)
    found = [item for item in items if isinstance(item, Finding)]
    wrong = [item for item in items if not isinstance(item, Finding)]
    if not wrong:
        return found, None
    kinds = ", ".join(dict.fromkeys(type(item).__name__ for item in wrong))
    if not found:
        return [], f"it returned {kinds} items, not Findings"
    return found, f"{len(wrong)} {kinds} item(s) that are not Findings"


def _marked(name: str, found: list[Finding], reg: Registry) -> list[Finding]:
    """``found``, each finding of a failure mode no plugin registers marked
    :data:`UNKNOWN_MODE` (with a note): a mode no one defined has no meaning or
    remedy to give, so it is not let outrank the registered ones."""
    unknown = sorted({f.mode_id for f in found if f.mode_id not in reg.failure_modes})
    for mode in unknown:
        note(
            "diagnose",
            f"detector '{name}' reported failure mode '{mode}', which no installed plugin "
            f"registers: its finding(s) are kept, marked {UNKNOWN_MODE}, but not used to "
            "name the root cause",
        )
    if not unknown:
        return found
    return [
        f.model_copy(update={"metadata": {**f.metadata, UNKNOWN_MODE: True}})
        if f.mode_id in unknown
        else f
        for f in found
    ]


def attributable(findings: Sequence[Finding]) -> list[Finding]:
    """The findings an attributor is given: those of registered failure modes."""
    return [f for f in findings if not f.metadata.get(UNKNOWN_MODE)]


def hypotheses_of(returned: object) -> list[Hypothesis]:
    """An attributor's answer, checked: a ``TypeError`` saying what it returned
    when that is not a list of Hypothesis objects."""
    if returned is None or isinstance(returned, Hypothesis | str | bytes | Mapping):
        raise TypeError(f"it returned {describe(returned)}, not a list of Hypothesis objects")
    if not isinstance(returned, Iterable):
        raise TypeError(f"it returned {describe(returned)}, not a list of Hypothesis objects")
    items = list(returned)
    wrong = [item for item in items if not isinstance(item, Hypothesis)]
    if wrong:
        kinds = ", ".join(dict.fromkeys(type(item).__name__ for item in wrong))
        raise TypeError(f"it returned {kinds} items, not Hypothesis objects")
    return items


def plugin_notes(reg: Registry) -> list[str]:
    """What a report must say of the plugins that could not contribute to it."""
    return [str(p) for p in reg.problems if p.broken and p.hook in _DIAGNOSIS_HOOKS]


def describe(value: object) -> str:
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
