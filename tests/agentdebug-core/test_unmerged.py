"""A step's update its state dropped (a key the state lacks) or merged away (a reducer
that kept the old value) is blamed on that step, when the run's ``state_schema``
says what the state holds."""

from __future__ import annotations

from typing import Any

from agentdebug.detect import RulePack
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, node, traj

SCHEMA = {"keys": ["change", "prefs", "plan"], "reducers": {"prefs": "merge_prefs"}}
OLD = {"diet": "omnivore", "exclude": [], "servings": 2}
NEW = {"diet": "vegan", "exclude": ["shellfish"]}
REASON = "changed to vegan with no shellfish and got chicken and shrimp"


def box(
    *updates: tuple[str, Any],
    final: Any = None,
    reason: str = REASON,
    schema: Any = SCHEMA,
    status: OutcomeStatus = OutcomeStatus.FAILURE,
) -> AgentTrajectory:
    """load_profile, then each (agent, update), then a model that plans, then the
    final state."""
    events = [ev(0, EventType.USER_INPUT, None, input={"change": NEW})]
    events += node(1, "load_profile", {"prefs": OLD})
    for i, (agent, update) in enumerate(updates, start=2):
        events += node(i, agent, update)
    n = len(updates) + 2
    events += [
        ev(n, EventType.LLM_RESPONSE, "plan_menu", output={"content": "chicken, shrimp, tacos"}),
        ev(n + 1, EventType.FINAL_ANSWER, None,
           output=final if final is not None else {"change": NEW, "prefs": OLD, "plan": "x"}),
    ]  # fmt: skip
    run = traj(*events)
    metadata = {"state_schema": schema} if schema is not None else {}
    return run.model_copy(
        update={"outcome": Outcome(status=status, reason=reason), "metadata": metadata}
    )


def found(run: AgentTrajectory) -> list[Any]:
    return [f for f in RulePack().detect(run) if f.rule_id == "update_not_merged"]


def test_an_update_a_reducer_merged_away_is_blamed() -> None:
    run = box(("apply_change", {"prefs": NEW}))
    (finding,) = found(run)
    assert (finding.agent_name, finding.step_index) == ("apply_change", 2)
    assert finding.message == (
        'apply_change\'s update at step 2 of \'prefs\' held {"diet":"vegan","exclude":'
        "[\"shellfish\"]}, which the state the run ended with does not: it holds 'prefs' as "
        'before the update, {"diet":"omnivore","exclude":[],"servings":2}, and '
        "nothing after the step wrote 'prefs': the key's reducer, merge_prefs, kept the old value"
    )
    root = diagnose(run).root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("apply_change", 2)


def test_a_merge_that_kept_the_update_or_a_reason_that_does_not_name_it_is_no_finding() -> None:
    merged = {"change": NEW, "prefs": {**OLD, **NEW}, "plan": "x"}
    assert found(box(("apply_change", {"prefs": NEW}), final=merged)) == []
    assert found(box(("apply_change", {"prefs": NEW}), reason="the box shipped late")) == []
    # (the reason naming only the key, not what was written, is not enough)
    assert found(box(("apply_change", {"prefs": NEW}), reason="prefs were wrong")) == []


def test_a_later_write_of_the_key_or_a_message_list_is_left_alone() -> None:
    later = box(("apply_change", {"prefs": NEW}), ("reset", {"prefs": OLD}))
    assert found(later) == []
    chat = {"keys": ["messages"], "reducers": {"messages": "add_messages"}}
    said = [{"role": "assistant", "content": "vegan box booked"}]
    run = box(("reply", {"messages": said}), schema=chat, final={"messages": []},
              reason="it said vegan box booked but nothing was")  # fmt: skip
    assert found(run) == []


def test_a_key_the_state_lacks_is_blamed_when_it_misses_one_or_is_named() -> None:
    run = box(("apply_change", {"pref": NEW}), reason="the box ignored the change")
    (finding,) = found(run)
    assert finding.agent_name == "apply_change"
    assert "(the state's key is 'prefs')" in finding.message
    assert finding.metadata["fix"] == (
        "At step 2, apply_change: return the update under 'prefs', the state's key, not 'pref'."
    )
    cased = box(("apply_change", {"Prefs": NEW}), reason="the box ignored the change")
    assert [f.metadata["key"] for f in found(cased)] == ["Prefs"]
    named = box(("apply_change", {"diet_update": NEW}), reason="the diet_update was never applied")
    (finding,) = found(named)
    assert finding.metadata["fix"] == (
        "At step 2, apply_change: add 'diet_update' to the graph's state (its schema), or "
        "return the update under the key the next steps read."
    )
    # a key of another name the failure does not mention: no telling it mattered
    assert found(box(("apply_change", {"audit": "done"}), reason="the box ignored it")) == []


def test_nothing_without_the_state_s_schema_in_a_passing_run_or_for_outer_nodes() -> None:
    assert found(box(("apply_change", {"pref": NEW}), schema=None)) == []
    ok = box(("apply_change", {"pref": NEW}), status=OutcomeStatus.SUCCESS)
    assert found(ok) == []
    # a subgraph node's end echoes the subgraph's state, private keys and all
    run = box(("profile/load", {"pref": NEW}), ("profile", {"pref": NEW, "prefs": OLD}))
    assert found(run) == []
    # an imported step with no start recorded is not read
    no_start = box()
    no_start.events.insert(2, ev(9, EventType.AGENT_END, "apply_change", output={"pref": NEW}))
    assert found(no_start) == []


# -- faults a review found: each a test --------------------------------------------


def test_a_command_s_update_is_read_inside_it() -> None:
    wrapped = {"command": True, "update": {"pref": NEW}, "goto": "plan_menu"}
    (finding,) = found(box(("apply_change", wrapped), reason="the box ignored the change"))
    assert finding.metadata["key"] == "pref"  # (not "update", the record's own field)
    schema = {**SCHEMA, "keys": [*SCHEMA["keys"], "updates"]}
    routed = {"command": True, "update": {"plan": "x"}, "goto": "plan_menu"}
    assert found(box(("route", routed), schema=schema, reason="the update was ignored")) == []
    # a later Command writing the key is a later write
    reset = {"command": True, "update": {"prefs": OLD}, "goto": "plan_menu"}
    assert found(box(("apply_change", {"prefs": NEW}), ("reset", reset))) == []


def test_reducers_that_add_concatenate_or_merge_deeply_did_their_work() -> None:
    reducers = {"n": "add", "notes": "add", "prefs": "deep_merge"}
    counting = {"keys": ["n", "notes", "prefs"], "reducers": reducers}
    seed = ("seed", {"n": 1, "notes": "Vegan. ", "prefs": {"diet": {"strict": True}}})
    cases = [
        (("count", {"n": 1}), {"n": 2}, "the answer cites 1 source, the run had 2 sources"),
        (
            ("note", {"notes": "Guest dislikes chicken. "}),
            {"notes": "Vegan. Guest dislikes chicken. "},
            "served chicken to a guest who dislikes chicken",
        ),
        (
            ("apply", {"prefs": {"diet": {"kind": "vegan"}}}),
            {"prefs": {"diet": {"kind": "vegan", "strict": True}}},
            "a vegan got chicken",
        ),
    ]
    for update, final, reason in cases:
        run = box(seed, update, schema=counting, final=final, reason=reason)
        assert found(run) == [], update


def test_an_edit_of_the_state_after_the_update_is_not_the_reducer_s_doing() -> None:
    run = box(("apply_change", {"prefs": NEW}))
    edit = ev(3, EventType.USER_INPUT, None, input={"prefs": OLD})
    run.events.insert(len(run.events) - 2, edit)
    assert found(run) == []


def test_a_near_miss_nobody_named_is_a_weak_sign_another_rule_outweighs() -> None:
    run = box(("start", {"note": "order received"}), reason="charged 144.00 instead of 120.00")
    run = run.model_copy(update={"metadata": {"state_schema": {"keys": ["notes", "total"]}}})
    (typo,) = found(run)
    assert typo.confidence < 0.5
    plural = box(("search", {"query": "tea"}), reason="the answer says nothing was found")
    plural = plural.model_copy(update={"metadata": {"state_schema": {"keys": ["queries"]}}})
    assert [f.metadata["key"] for f in found(plural)] == ["query"]


def test_a_final_state_cut_for_size_is_not_read_as_a_merge() -> None:
    cut = {"change": NEW, "prefs": {"truncated": True, "head": '{"diet": "omni'}}
    assert found(box(("apply_change", {"prefs": NEW}), final=cut)) == []
