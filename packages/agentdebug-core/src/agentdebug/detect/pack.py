"""The rule pack: every built-in rule (``RULES``), run by :class:`RulePack`.

The rules live in :mod:`agentdebug.detect.rules` (errors, tool calls, repetition,
success claims, handoffs, final answers, a ledger's stall) and in a module each
for the rest (cut answers, misread and invented figures, a reviewer's rejection,
edit or instruction overruled, a reply unchanged after new input, a subgraph's result dropped, an
answer in another language than the user's, an action run again after a timeout, a
call's argument misspelled from the task, a figure a tool's contradicts, an item or a
value the run needed dropped, pages left unread, a unit or currency swapped, a critic
never satisfied, an identifier no step had given, a value given that a call
overrode, a wrong value a step's own code made, an item its selection left
out, a total of records an earlier step dropped, an update the state never took,
an amount in cents written as dollars, a number read out of a text wrongly, a
namesake's record fetched, a record of a list taken where the failure names another, a lookup's record of
another identifier than asked, a date read day for month, a listing that left out
the record named, instructions a trim cut from an answer's prompt, an update that gave an appending
reducer the state's items again);
their shared context is
:class:`agentdebug.detect.rules.RuleContext`.
"""

from __future__ import annotations

import logging

from agentdebug.detect.adaptation import rule_reply_unchanged
from agentdebug.detect.coded import rule_value_made_in_code
from agentdebug.detect.contradicted import rule_figure_contradicted
from agentdebug.detect.cut_answers import rule_cut_answer
from agentdebug.detect.dated import rule_day_month_swapped
from agentdebug.detect.doubled import rule_update_readded
from agentdebug.detect.dropped import rule_result_dropped
from agentdebug.detect.duplicated import rule_action_repeated_after_timeout
from agentdebug.detect.edited import rule_edit_ignored
from agentdebug.detect.fielded import rule_sibling_field_taken
from agentdebug.detect.filtered import rule_needed_item_dropped
from agentdebug.detect.instructed import rule_instruction_ignored
from agentdebug.detect.invented import rule_invented_after_failure
from agentdebug.detect.language import rule_answer_language
from agentdebug.detect.lost import rule_needed_value_lost
from agentdebug.detect.minor_units import rule_minor_units_as_major
from agentdebug.detect.misparsed import rule_number_misparsed
from agentdebug.detect.misread import rule_misread_number
from agentdebug.detect.misspelled import rule_argument_misspelled
from agentdebug.detect.namesake import rule_namesake_fetched
from agentdebug.detect.narrowed import rule_named_item_filtered_out
from agentdebug.detect.overridden import rule_given_value_overridden
from agentdebug.detect.paged import rule_more_pages_unread
from agentdebug.detect.picked import rule_wrong_record_picked
from agentdebug.detect.rejected import rule_rejection_overruled
from agentdebug.detect.relayed import rule_listed_records_relayed
from agentdebug.detect.returned import rule_other_record_returned
from agentdebug.detect.rules import (
    Rule,
    RuleContext,
    rule_error_ignored,
    rule_errors,
    rule_invalid_final_output,
    rule_malformed_tool_call,
    rule_premature_success,
    rule_repeated_action,
    rule_stall_reported,
    rule_unknown_handoff,
)
from agentdebug.detect.shifted import rule_figure_scaled
from agentdebug.detect.tallied import rule_total_of_dropped_rows
from agentdebug.detect.textsorted import rule_sorted_as_text
from agentdebug.detect.trimmed import rule_instruction_trimmed
from agentdebug.detect.unanswered import rule_tool_call_left_unanswered
from agentdebug.detect.unfinished import rule_asked_action_skipped, rule_asked_item_skipped
from agentdebug.detect.units import rule_unit_swapped
from agentdebug.detect.unlisted import rule_named_record_unlisted
from agentdebug.detect.unmerged import rule_update_not_merged
from agentdebug.detect.unsatisfied import rule_critic_never_satisfied
from agentdebug.detect.unsourced import rule_unsourced_argument
from agentdebug.detect.zoned import rule_time_zone_relabelled
from agentdebug.schema import AgentTrajectory, Finding

log = logging.getLogger("agentdebug.detect")

RULES: list[Rule] = [
    Rule("errors", "tool, model and runtime errors, classified", rule_errors),
    Rule("malformed_tool_call", "tool-call arguments that do not parse", rule_malformed_tool_call),
    Rule("repeated_action", "the same action repeated without progress", rule_repeated_action),
    Rule("premature_success", "success declared over an unresolved error", rule_premature_success),
    Rule("error_ignored", "an error result treated as success", rule_error_ignored),
    Rule("unknown_handoff", "handoff to an agent the run does not have", rule_unknown_handoff),
    Rule("invalid_final_output", "an empty or invalid final answer", rule_invalid_final_output),
    Rule("stall_reported", "the orchestrator's own ledger reports a stall", rule_stall_reported),
    Rule("cut_answer", "a model answer cut at its output-token limit", rule_cut_answer),
    Rule(
        "misread_number",
        "a final answer's number with a tool result's digits swapped",
        rule_misread_number,
    ),
    Rule(
        "invented_after_failure",
        "a final answer's figure no tool gave, after the lookup failed",
        rule_invented_after_failure,
    ),
    Rule(
        "rejection_overruled",
        "a reviewer's plain rejection, then the action it declined",
        rule_rejection_overruled,
    ),
    Rule("edit_ignored", "a reviewer's edit, then the text from before it", rule_edit_ignored),
    Rule(
        "instruction_ignored",
        "a reviewer's \"not 'X'\", then X again",
        rule_instruction_ignored,
    ),
    Rule(
        "reply_unchanged", "a model's reply repeated after its input changed", rule_reply_unchanged
    ),
    Rule(
        "result_dropped",
        "a node that wrote an empty value instead of its subgraph's result",
        rule_result_dropped,
    ),
    Rule(
        "answer_language",
        "a final answer in another language than the user wrote in",
        rule_answer_language,
    ),
    Rule(
        "tool_call_left_unanswered",
        "a model call refused: the conversation holds a tool call no tool answered",
        rule_tool_call_left_unanswered,
    ),
    Rule(
        "action_repeated_after_timeout",
        "an action run again with the same arguments after a timeout",
        rule_action_repeated_after_timeout,
    ),
    Rule(
        "argument_misspelled",
        "a call that failed on a misspelling of the task's words",
        rule_argument_misspelled,
    ),
    Rule(
        "figure_contradicted",
        "a final answer's figure for a thing a tool gave another figure for",
        rule_figure_contradicted,
    ),
    Rule(
        "needed_item_dropped",
        "a selection that dropped the found item the run turned out to need",
        rule_needed_item_dropped,
    ),
    Rule(
        "needed_value_lost",
        "a value the failure wanted, given to a step that did not pass it on",
        rule_needed_value_lost,
    ),
    Rule(
        "more_pages_unread",
        "a model that acted on the first page of a result that said more followed",
        rule_more_pages_unread,
    ),
    Rule("unit_swapped", "a tool's figure copied with another unit of its kind", rule_unit_swapped),
    Rule(
        "critic_never_satisfied",
        "a critic that rejected every revised draft until the step limit",
        rule_critic_never_satisfied,
    ),
    Rule(
        "unsourced_argument",
        "a tool call given an identifier that nothing in the run had given",
        rule_unsourced_argument,
    ),
    Rule(
        "given_value_overridden",
        "a call given another value for a key than its step was given, which the failure names",
        rule_given_value_overridden,
    ),
    Rule(
        "value_made_in_code",
        "a wrong value the failure names, first made by a step that called no model",
        rule_value_made_in_code,
    ),
    Rule(
        "named_item_filtered_out",
        "a step's code that kept part of a collection and left out the item the failure names",
        rule_named_item_filtered_out,
    ),
    Rule(
        "total_of_dropped_rows",
        "a total a step added up right from records an earlier step wrongly dropped",
        rule_total_of_dropped_rows,
    ),
    Rule(
        "update_not_merged",
        "a step's update its state dropped (a key it lacks) or merged away (a reducer)",
        rule_update_not_merged,
    ),
    Rule(
        "minor_units_as_major",
        "an amount kept in cents that a step wrote out as whole currency",
        rule_minor_units_as_major,
    ),
    Rule(
        "number_misparsed",
        'a number a step read out of a text wrongly ("$1,250.00" as 1.0)',
        rule_number_misparsed,
    ),
    Rule(
        "namesake_fetched",
        "a step that returned the record of a namesake (X20's for an X200)",
        rule_namesake_fetched,
    ),
    Rule(
        "wrong_record_picked",
        "a step that took one record of a list where the failure names another of it",
        rule_wrong_record_picked,
    ),
    Rule(
        "other_record_returned",
        "a lookup asked for one identifier's record that returned another's",
        rule_other_record_returned,
    ),
    Rule(
        "day_month_swapped",
        'a step that read a slashed date day for month ("07/04/2025" as 4 July)',
        rule_day_month_swapped,
    ),
    Rule(
        "named_record_unlisted",
        "a listing that left out the record the failure names, which the run never saw",
        rule_named_record_unlisted,
    ),
    Rule(
        "listed_records_relayed",
        "a lookup's list a model passed on whole, whose records the failure names",
        rule_listed_records_relayed,
    ),
    Rule(
        "instruction_trimmed",
        "an answer whose prompt no longer held the conversation's instructions (a trim)",
        rule_instruction_trimmed,
    ),
    Rule(
        "update_readded",
        "a node's update that gave an appending reducer the items the state held",
        rule_update_readded,
    ),
    Rule(
        "time_zone_relabelled",
        "a step that relabelled a timestamp with another zone instead of converting it",
        rule_time_zone_relabelled,
    ),
    Rule(
        "figure_scaled",
        "a figure a step wrote with its decimal point moved (12,480.00 as 1,248.00)",
        rule_figure_scaled,
    ),
    Rule(
        "sorted_as_text",
        'a step that sorted records by a number written as text ("9.8" before "10.0")',
        rule_sorted_as_text,
    ),
    Rule(
        "asked_item_skipped",
        "a model that answered after acting on some of the items the request listed",
        rule_asked_item_skipped,
    ),
    Rule(
        "asked_action_skipped",
        "a model that answered without calling a tool it was offered that the request named",
        rule_asked_action_skipped,
    ),
    Rule(
        "sibling_field_taken",
        "a step that took a record's value from the field beside the one the failure names",
        rule_sibling_field_taken,
    ),
]


class RulePack:
    """The built-in detector: every rule above, no model call."""

    name = "rules"

    def __init__(self, rules: list[Rule] | None = None) -> None:
        self.rules = list(RULES if rules is None else rules)

    def detect(self, trajectory: AgentTrajectory) -> list[Finding]:
        ctx = RuleContext.build(trajectory)
        findings: list[Finding] = []
        seen: set[tuple[str | None, str | None, str]] = set()
        for rule in self.rules:
            try:
                for finding in rule.check(ctx):
                    key = (finding.rule_id, finding.event_id, finding.mode_id)
                    if key not in seen:
                        seen.add(key)
                        findings.append(finding)
            except Exception:  # (one rule's fault on an odd payload costs only its findings)
                log.exception(
                    "agentdebug: rule %s failed on run %s; the other rules' findings stand",
                    rule.id,
                    trajectory.id,
                )
        findings.sort(key=lambda f: f.step_index if f.step_index is not None else -1)
        return findings
