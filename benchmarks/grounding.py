#!/usr/bin/env python3
"""Recall of the grounding check on quotes that people wrote about real traces.

    python3 dev.py python benchmarks/grounding.py [--examples 8] [--min-chars 8]

Who&When: the quoted spans of each file's ``mistake_reason`` (kept in the label:
``import_file(path)[0].label.reason``), searched in that trace with the label's step
as the cited step. TRAIL: each annotation's ``evidence`` (its quoted spans, or the
whole text when it quotes nothing), searched with the annotated span (``location``)
as the cited event. For each set: how many quotes each kind of match found, how many
at the cited place and how many elsewhere (in the task or reference answer
included), and the time grounding took; then a few quotes that were not found, with
the best share of their word 3-grams in any one event (a paraphrase has some, an
absent quote none).

Then timing: every rule finding of every trace grounded (all must ground), and the
worst case, a trace of ~4 M characters (TRAIL's events stacked, since the traces
here are under 400 KB) searched for quotes that are nowhere, which normalises and
splits every event: the first such quote pays for it, the next ones reuse it.
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from agentdebug.detect import RulePack
from agentdebug.evidence import Grounder, Match, MatchKind, extract_quotes, ground_findings
from agentdebug.io import import_file, load_trail_annotations
from agentdebug.schema import AgentEvent, AgentTrajectory
from agentdebug.text import flatten, shorten

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
WHOWHEN = DATA / "whowhen"
TRAIL = DATA / "trail" / "gaia"
KINDS = list(MatchKind)


@dataclass
class Case:
    source: str  # file name
    quote: str
    cited: str  # where the quote is cited, in words
    match: Match
    whole: bool = False  # the whole evidence text (no quoted span in it)


def whowhen_cases(min_chars: int) -> tuple[list[Case], float, int]:
    cases: list[Case] = []
    spent, no_quote = 0.0, 0
    for subset in ("Algorithm-Generated", "Hand-Crafted"):
        for path in sorted((WHOWHEN / subset).glob("*.json"), key=lambda p: int(p.stem)):
            run = import_file(path)[0]
            assert run.label is not None
            quotes = extract_quotes(run.label.reason or "", min_chars=min_chars)
            if not quotes:
                no_quote += 1
                continue
            started = time.perf_counter()
            grounder = Grounder(run.trajectory)
            step = run.label.step_index
            found = [grounder.find(q, step_index=step) for q in quotes]
            spent += time.perf_counter() - started
            name = f"{subset[:4]}/{path.name}"
            cases += [Case(name, q, f"step {step}", m) for q, m in zip(quotes, found, strict=True)]
    return cases, spent, no_quote


def trail_cases(min_chars: int) -> tuple[list[Case], float, int]:
    cases: list[Case] = []
    spent, no_quote = 0.0, 0
    for path in sorted((TRAIL / "annotations").glob("*.json")):
        label = load_trail_annotations(path)
        trajectory = import_file(TRAIL / "traces" / path.name)[0].trajectory
        started = time.perf_counter()
        grounder = Grounder(trajectory)
        for error in label.errors:
            evidence = str(error.get("evidence") or "")
            quotes = extract_quotes(evidence, min_chars=min_chars)
            whole = not quotes
            no_quote += whole
            location = error["location"]
            for q in quotes or ([evidence] if evidence.strip() else []):
                m = grounder.find(q, event_id=location)
                cases.append(Case(path.stem[:12], q, f"span {location}", m, whole))
        spent += time.perf_counter() - started
    return cases, spent, no_quote


def table(name: str, cases: list[Case], spent: float, note: str) -> None:
    kinds = Counter(c.match.kind for c in cases)
    total = len(cases)
    found = sum(1 for c in cases if c.match.grounded)
    at_cited = sum(1 for c in cases if c.match.grounded and not c.match.elsewhere)
    task = sum(1 for c in cases if c.match.source in ("goal", "reference"))
    print(f"\n{name}: {total} quotes ({note})")
    print("  " + "  ".join(f"{k.value} {kinds[k]}" for k in KINDS))
    pct = f"{found / total:.1%}" if total else "-"
    print(
        f"  found {found}/{total} ({pct}): at the cited place {at_cited}, "
        f"elsewhere {found - at_cited} (of which in the task or reference {task})"
    )
    print(f"  grounding time {spent * 1000:.1f} ms (Grounder built per trace, cold)")


def examples(cases: list[Case], n: int) -> None:
    missing = [c for c in cases if not c.match.grounded]
    if not missing:
        return
    print(f"\nnot found ({len(missing)}), e.g. (best share of 3-grams in one event):")
    # Half the examples with the highest share (paraphrases), half with the lowest.
    ranked = sorted(missing, key=lambda c: -c.match.coverage)
    picks = ranked[: (n + 1) // 2] + ranked[len(ranked) - n // 2 :] if len(ranked) > n else ranked
    for c in picks:
        if not c.match.checked:
            why = "too short to check"
        elif len(re.findall(r"\w+", c.quote)) < 6:
            why = "under 6 words: no partial match possible"
        else:
            why = f"best event holds {c.match.coverage:.0%} of its word 3-grams"
        whole = " [whole evidence]" if c.whole else ""
        print(f"  {c.source} {c.cited}{whole}: {why}")
        print(f"      quote: {shorten(c.quote, 150)!r}")


def rules_timing() -> None:
    paths = sorted((WHOWHEN / "Algorithm-Generated").glob("*.json"))
    paths += sorted((WHOWHEN / "Hand-Crafted").glob("*.json"))
    trail = sorted((TRAIL / "traces").glob("*.json"))
    trajectories = [import_file(p)[0].trajectory for p in paths + trail]
    pack = RulePack()
    findings = [pack.detect(t) for t in trajectories]
    started = time.perf_counter()
    grounded = [ground_findings(f, t) for f, t in zip(findings, trajectories, strict=True)]
    spent = time.perf_counter() - started
    evidence = [e for fs in grounded for f in fs for e in f.evidence if e.quote]
    ok = sum(1 for e in evidence if e.grounded)
    print(
        f"\nrule findings of {len(trajectories)} traces (Who&When and TRAIL): "
        f"{ok}/{len(evidence)} quotes grounded, in {spent * 1000:.1f} ms"
    )
    # The worst case: a trace of ~4 MB of text (the TRAIL traces here are under
    # 400 KB, so their events are stacked into one), and quotes that are nowhere,
    # so every event is normalised and split into words.
    events: list[AgentEvent] = []
    size = 0
    for t in trajectories[len(paths) :]:
        for e in t.events:
            events.append(e.model_copy(update={"id": f"x{len(events)}", "step_index": len(events)}))
            size += len(flatten(e.input)) + len(flatten(e.output))
        if size > 4_000_000:
            break
    big = AgentTrajectory(id="stacked", events=events)
    middle = events[len(events) // 2]
    text = flatten(middle.output) or flatten(middle.input)
    words = flatten(events[len(events) // 3].input).split()[:30]
    quotes = [
        ("a verbatim quote at its cited event", text[:120], middle.id),
        ("an invented 15-word sentence", INVENTED, None),
        ("30 real words of the trace, reversed", " ".join(reversed(words)), None),
        ("another invented sentence", INVENTED.replace("Miami", "Boston"), None),
    ]
    grounder = Grounder(big)
    print(
        f"stacked trace of {len(events)} events, {size / 1e6:.1f} M characters of text "
        f"(flattened input and output):"
    )
    total = 0.0
    for label, quote, event_id in quotes:
        started = time.perf_counter()
        m = grounder.find(quote, event_id=event_id, step_index=None if event_id else 3)
        took = time.perf_counter() - started
        total += took
        print(f"  {label:<40} {took * 1000:>7.1f} ms -> {m.kind.value}")
    print(f"  all four, one Grounder                   {total * 1000:>7.1f} ms")


INVENTED = "The agent booked a first class seat to Miami and paid for it with a card"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=8, help="not-found quotes to show")
    parser.add_argument("--min-chars", type=int, default=8, help="shortest quoted span kept")
    args = parser.parse_args()
    if not WHOWHEN.is_dir() or not TRAIL.is_dir():
        raise SystemExit(f"benchmark data not found under {DATA}")
    print(
        f"grounding recall on human-written quotes (quoted spans of {args.min_chars}+ characters)"
    )
    ww, ww_time, ww_none = whowhen_cases(args.min_chars)
    table("Who&When mistake_reason", ww, ww_time, f"{ww_none} of the reasons quote nothing")
    examples(ww, args.examples)
    tr, tr_time, tr_whole = trail_cases(args.min_chars)
    table(
        "TRAIL annotation evidence",
        tr,
        tr_time,
        f"{tr_whole} evidence texts quote nothing and are searched whole",
    )
    examples(tr, args.examples)
    rules_timing()


if __name__ == "__main__":
    main()
