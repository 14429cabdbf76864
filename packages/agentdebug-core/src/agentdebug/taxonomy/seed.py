"""The seed failure taxonomy: agentdebug's own definitions, one entry per mode.

Each mode says what it is (definition), what in a trace shows it (evidence), and
the one change that usually repairs it (remedy, used as a retry directive). The
crosswalk names the nearest modes of MAST (Cemri et al., 2025), TRAIL (Deshpande
et al., 2025) and AgentRx by their own names, so results can be compared.
"""

from __future__ import annotations

from agentdebug.taxonomy.model import Category, Crosswalk, FailureMode


def _mode(
    mode_id: str,
    name: str,
    definition: str,
    evidence: str,
    remedy: str,
    *,
    mast: tuple[str, ...] = (),
    trail: tuple[str, ...] = (),
    agentrx: tuple[str, ...] = (),
) -> FailureMode:
    return FailureMode(
        id=mode_id,
        name=name,
        category=Category(mode_id.split(".", 1)[0]),
        definition=definition,
        evidence=evidence,
        remedy=remedy,
        crosswalk=Crosswalk(mast=list(mast), trail=list(trail), agentrx=list(agentrx)),
    )


SEED_MODES: list[FailureMode] = [
    # -- planning ------------------------------------------------------------------
    _mode(
        "planning.task_misunderstanding",
        "Task misunderstood",
        "The agent sets out to solve a different problem than the one it was given: it "
        "misreads what is asked, drops a constraint, or answers a neighbouring question.",
        "The plan or first actions target an object, quantity or condition that the goal "
        "does not mention, or omit one that it does.",
        "Restate the task and every constraint it sets before planning; check the plan "
        "against each constraint.",
        mast=("1.1 Disobey task specification",),
        trail=("Incorrect Problem Identification",),
        agentrx=("Intent-Plan Misalignment",),
    ),
    _mode(
        "planning.flawed_plan",
        "Flawed plan",
        "The plan cannot reach the goal as written: a needed step is missing, steps are in "
        "an order that cannot work, or a step relies on something unavailable.",
        "A plan event whose steps, followed faithfully, still leave the goal unmet; later "
        "failures trace back to a step the plan omitted or misordered.",
        "Revise the plan: add the missing step (or reorder) and name how each step's "
        "result will be checked.",
        mast=("1.1 Disobey task specification",),
        trail=("Task Orchestration",),
        agentrx=("Intent-Plan Misalignment",),
    ),
    _mode(
        "planning.plan_deviation",
        "Plan not followed",
        "The agent acts against its own plan or reasoning: it skips planned steps, jumps "
        "to an answer, or does something its last thought did not call for.",
        "An action that contradicts the immediately preceding plan or thought, or a final "
        "answer issued while planned steps were never executed.",
        "Execute the remaining planned steps in order before answering; if the plan must "
        "change, state the new plan first.",
        mast=("2.3 Task derailment", "2.6 Reasoning-action mismatch"),
        trail=("Goal Deviation",),
        agentrx=("Plan Adherence Failure",),
    ),
    _mode(
        "planning.instruction_noncompliance",
        "Instruction not followed",
        "An explicit instruction from the user, system prompt or tool contract is ignored: "
        "a required format, a forbidden action, a mandated tool.",
        "Output or actions that violate a rule stated verbatim earlier in the trace.",
        "Follow the stated instruction exactly; quote it before acting on the step it governs.",
        mast=("1.1 Disobey task specification",),
        trail=("Instruction Non-compliance",),
        agentrx=("Plan Adherence Failure",),
    ),
    _mode(
        "planning.step_limit_exhausted",
        "Step or budget limit exhausted",
        "The run stops because it used up its step, turn, time or token budget before "
        "reaching an answer, usually after unproductive work.",
        "A max-iterations / recursion-limit / max-turns error, or the run ending at the "
        "configured step limit without a final answer.",
        "Cut unproductive steps: detect the loop earlier, pick a cheaper approach, or give "
        "the best supported answer before the limit.",
        mast=("1.5 Unaware of termination conditions",),
        trail=("Resource Exhaustion",),
        agentrx=("System Failure",),
    ),
    # -- memory --------------------------------------------------------------------
    _mode(
        "memory.context_loss",
        "Context lost",
        "Information the agent had earlier (a fact, a constraint, a partial result) is "
        "forgotten or overwritten later in the run, or the conversation restarts.",
        "A later step asks again for, contradicts, or recomputes something already "
        "established in an earlier event.",
        "Carry the established facts forward explicitly (a running summary) and consult "
        "them before each step.",
        mast=("1.4 Loss of conversation history", "2.1 Conversation reset"),
        trail=("Context Handling Failures",),
        agentrx=("Plan Adherence Failure",),
    ),
    _mode(
        "memory.wrong_recall",
        "Wrong memory used",
        "The agent relies on a stored or remembered item that is stale, belongs to another "
        "task, or was recorded incorrectly.",
        "A memory read whose content conflicts with the current task or with fresher tool "
        "output, followed by an action based on it.",
        "Re-check remembered values against the current source before using them.",
        trail=("Context Handling Failures",),
        agentrx=("Invention of New Information",),
    ),
    # -- action / tool use -----------------------------------------------------------
    _mode(
        "action.malformed_tool_call",
        "Malformed tool call",
        "A tool is invoked with arguments that do not parse or do not fit its schema: "
        "invalid JSON, missing required fields, wrong types, an unknown tool name.",
        "Tool-call arguments that fail to parse, or a tool result reporting a validation "
        "or unknown-tool error.",
        "Call the tool again with arguments that match its schema exactly.",
        trail=("Formatting Errors", "Tool Definition Issues"),
        agentrx=("Invalid Invocation",),
    ),
    _mode(
        "action.wrong_tool",
        "Wrong tool chosen",
        "The agent picks a tool that cannot produce what the step needs while a suitable "
        "one is available (or does by hand what a tool should do).",
        "A tool call whose purpose does not match the step's stated intent; a better-suited "
        "tool is listed among the agent's tools.",
        "Use the tool designed for this kind of step.",
        trail=("Tool Selection Errors",),
        agentrx=("Invalid Invocation",),
    ),
    _mode(
        "action.repeated_action",
        "Repeated action without progress",
        "The agent issues the same action (same tool, same arguments, or the same message) "
        "again and again without new information arriving.",
        "Three or more consecutive identical actions, or identical results after each.",
        "Stop repeating: change the arguments or the approach, or report what blocks progress.",
        mast=("1.3 Step repetition",),
        trail=("Resource Abuse",),
        agentrx=("Plan Adherence Failure",),
    ),
    _mode(
        "action.fabricated_action",
        "Fabricated action or observation",
        "The agent reports having done something, or having seen a result, that no event "
        "in the trace supports.",
        "A claim such as 'according to the search results' with no matching tool call or "
        "tool result before it.",
        "Actually perform the action and base the next step on its real result.",
        trail=("Tool-related",),
        agentrx=("Invention of New Information",),
    ),
    # -- observation -----------------------------------------------------------------
    _mode(
        "observation.output_misread",
        "Tool output misread",
        "The agent draws a conclusion that the tool output does not support: misreads a "
        "number, a table, a page, or the meaning of a message.",
        "A reasoning or answer event that states a value different from the one in the "
        "tool result it cites.",
        "Re-read the tool output and quote the exact value used.",
        mast=("2.5 Ignored other agent's input",),
        trail=("Tool Output Misinterpretation",),
        agentrx=("Misinterpretation of Tool Output",),
    ),
    _mode(
        "observation.error_ignored",
        "Error result treated as success",
        "A tool or agent reports an error, and the agent carries on as if the step had worked.",
        "A tool result carrying an error (or error text), followed by a step that uses its "
        "result or declares the step done.",
        "Handle the error: retry with a fix, or take another path; never build on a failed step.",
        mast=("2.5 Ignored other agent's input",),
        trail=("Tool Output Misinterpretation",),
        agentrx=("Misinterpretation of Tool Output",),
    ),
    _mode(
        "observation.poor_retrieval",
        "Poor information retrieval",
        "A search or lookup returns material that is irrelevant or insufficient, and the "
        "agent accepts it instead of refining the query or source.",
        "A retrieval result that does not mention the goal's key entities, followed by "
        "reasoning that relies on it.",
        "Refine the query or consult a more authoritative source before relying on the result.",
        trail=("Poor Information Retrieval",),
        agentrx=("Misinterpretation of Tool Output",),
    ),
    # -- reflection / reasoning --------------------------------------------------------
    _mode(
        "reflection.hallucinated_fact",
        "Unsupported claim",
        "The agent states a fact, figure or source as known when nothing in the trace or "
        "the task supports it.",
        "A specific value or citation in an answer or thought with no event that provides it.",
        "Support the claim with a tool call or mark it as an assumption to verify.",
        trail=("Language-only",),
        agentrx=("Invention of New Information",),
    ),
    _mode(
        "reflection.flawed_reasoning",
        "Flawed reasoning",
        "From correct inputs, the agent reasons to a wrong conclusion: an arithmetic slip, "
        "a wrong inference, a unit or off-by-one error, a buggy piece of code.",
        "A thought or code step whose conclusion does not follow from the values it quotes.",
        "Redo the derivation step by step and check it against the quoted inputs.",
        mast=("2.6 Reasoning-action mismatch",),
        trail=("Incorrect Problem Identification",),
        agentrx=("Intent-Plan Misalignment",),
    ),
    _mode(
        "reflection.no_adaptation",
        "No adaptation after failure",
        "After a failed attempt the agent neither diagnoses the failure nor changes its "
        "approach; it retries the same way or gives up.",
        "An error followed by an identical attempt, or by abandoning the goal without analysis.",
        "State why the attempt failed and choose a different approach that addresses it.",
        mast=("1.5 Unaware of termination conditions",),
        trail=("Goal Deviation",),
        agentrx=("Plan Adherence Failure",),
    ),
    # -- verification -----------------------------------------------------------------
    _mode(
        "verification.premature_success",
        "Premature success",
        "The run declares the task done, or stops, while an error is unresolved or required "
        "work is missing.",
        "A final answer or 'task complete' message after an error that no later step fixed.",
        "Resolve the outstanding error (or report it) before declaring success.",
        mast=("3.1 Premature termination",),
        trail=("Goal Deviation",),
        agentrx=("Plan Adherence Failure",),
    ),
    _mode(
        "verification.missing_verification",
        "Verification missing",
        "The result is accepted without the check the task calls for, or with a check too "
        "shallow to catch the error.",
        "A final answer accepted with no verification step, or with one that does not "
        "re-examine the disputed value.",
        "Verify the result against the source before accepting it.",
        mast=("3.2 No or incomplete verification",),
        trail=("Goal Deviation",),
        agentrx=("Plan Adherence Failure",),
    ),
    _mode(
        "verification.incorrect_verification",
        "Verification wrong",
        "A verification step runs but confirms a wrong result, or rejects a right one.",
        "A verifier's approval of a value that conflicts with the evidence in the trace.",
        "Re-verify independently, checking each claim against its source.",
        mast=("3.3 Incorrect verification",),
        trail=("Tool Output Misinterpretation",),
        agentrx=("Misinterpretation of Tool Output",),
    ),
    _mode(
        "verification.invalid_final_output",
        "Empty or invalid final output",
        "The run's final answer is missing, empty, a placeholder, or not in the required format.",
        "A final-answer event with empty content, 'None', an error text, or output that "
        "breaks the requested format.",
        "Produce a complete final answer in the requested format.",
        mast=("1.1 Disobey task specification",),
        trail=("Formatting Errors", "Instruction Non-compliance"),
        agentrx=("Plan Adherence Failure",),
    ),
    # -- multi-agent coordination ---------------------------------------------------------
    _mode(
        "coordination.unknown_handoff",
        "Handoff to an unknown agent",
        "Work is handed to an agent that does not exist in the system (a misspelt or "
        "invented name), so nobody picks it up.",
        "A handoff event whose target is not among the run's agents.",
        "Hand off to one of the existing agents by its exact name.",
        trail=("Task Orchestration",),
        agentrx=("Invalid Invocation",),
    ),
    _mode(
        "coordination.wrong_delegation",
        "Wrong delegation",
        "An orchestrator sends a task to an agent that cannot do it, with instructions "
        "that are wrong or incomplete, or in an order that wastes the run.",
        "A handoff whose instruction conflicts with the goal or whose target lacks the "
        "needed tools; the receiving agent then fails.",
        "Delegate to the agent with the needed capability, with complete instructions.",
        mast=("2.3 Task derailment",),
        trail=("Task Orchestration",),
        agentrx=("Intent-Plan Misalignment",),
    ),
    _mode(
        "coordination.delegated_task_failed",
        "Delegated task failed",
        "An agent that another agent gave a task to (a sub-agent run on its own) ends that "
        "task failed: it declares it could not do it, or raises, so what comes back to the "
        "agent that delegated is a failure, not the result it asked for.",
        "An error of the sub-agent in the delegating run that names the sub-run and carries "
        "its reason ('no sources found'), or the exception the sub-run raised.",
        "Fix the failure in the sub-agent's own run (its reason, and its diagnosis, say "
        "where), or give it what it lacked; the delegating agent retries, delegates "
        "elsewhere or reports the failure instead of building on it.",
        trail=("Task Orchestration",),
    ),
    _mode(
        "coordination.information_withholding",
        "Information withheld",
        "An agent has information another agent needs and does not pass it on.",
        "A fact present in one agent's events and absent from the handoff or message to "
        "the agent that later lacks it.",
        "Pass every fact the receiving agent needs in the handoff message.",
        mast=("2.4 Information withholding",),
        trail=("Context Handling Failures",),
        agentrx=("Plan Adherence Failure",),
    ),
    _mode(
        "coordination.ignored_input",
        "Other agent's input ignored",
        "An agent disregards a correction, warning or result given by another agent.",
        "A message from one agent followed by the addressee acting as if it had not been sent.",
        "Take the other agent's input into account, or say explicitly why it is rejected.",
        mast=("2.5 Ignored other agent's input",),
        trail=("Context Handling Failures",),
        agentrx=("Plan Adherence Failure",),
    ),
    _mode(
        "coordination.role_violation",
        "Role violated",
        "An agent does work assigned to another role, or claims authority it does not "
        "have, and so bypasses the checks the design relied on.",
        "Actions outside the agent's declared role or tools.",
        "Stay within the role: hand the work to the agent that owns it.",
        mast=("1.2 Disobey role specification",),
        trail=("Task Orchestration",),
        agentrx=("Plan Adherence Failure",),
    ),
    _mode(
        "coordination.clarification_missing",
        "Clarification not sought",
        "The request is ambiguous or underspecified and the agent guesses instead of "
        "asking, or proceeds despite an explicit open question.",
        "An assumption stated about an unclear requirement that later proves wrong.",
        "Ask for the missing detail, or state the assumption and check it early.",
        mast=("2.2 Fail to ask for clarification",),
        trail=("Incorrect Problem Identification",),
        agentrx=("Under-specified User Intent", "Intent Not Supported"),
    ),
    # -- system faults ----------------------------------------------------------------
    _mode(
        "system.tool_error",
        "Tool or runtime error",
        "A tool, API or code execution fails: an exception, a non-zero exit code, a server error.",
        "An error field on a tool event, a traceback, or 'exitcode: 1' in a tool result.",
        "Inspect the error, fix its cause (arguments, code, dependency), and retry once.",
        trail=("Service Errors",),
        agentrx=("System Failure",),
    ),
    _mode(
        "system.timeout",
        "Timeout",
        "A call takes longer than its limit and is cut off.",
        "A timeout error or a call whose duration reaches its configured limit.",
        "Retry with a longer limit or a smaller request; avoid the slow path.",
        trail=("Timeout Issues",),
        agentrx=("System Failure",),
    ),
    _mode(
        "system.service_unavailable",
        "Service unavailable",
        "A service the agent depends on is down or unreachable: the call fails though "
        "nothing in it is wrong.",
        "HTTP 502/503/504, 'service unavailable', 'connection refused' or 'connection "
        "reset', a ConnectionError in a tool or model error.",
        "Retry later with backoff, or use a fallback service; the call itself needs no change.",
        trail=("Service Errors",),
        agentrx=("System Failure",),
    ),
    _mode(
        "system.rate_limited",
        "Rate limited",
        "A service refuses calls because too many were made.",
        "HTTP 429 or a 'rate limit' message in a tool or model error.",
        "Back off and retry later; reduce the number of calls.",
        trail=("Rate Limiting",),
        agentrx=("System Failure",),
    ),
    _mode(
        "system.auth_error",
        "Authentication or permission error",
        "A call is refused for missing, wrong or insufficient credentials.",
        "HTTP 401/403, 'unauthorized', 'forbidden' or 'invalid api key' in an error.",
        "Provide valid credentials or use a resource the agent may access.",
        trail=("Authentication Errors",),
        agentrx=("System Failure",),
    ),
    _mode(
        "system.resource_not_found",
        "Resource not found",
        "A file, URL, record or page the agent asked for does not exist where it looked.",
        "HTTP 404, 'No such file or directory', 'FileNotFoundError' or 'not found' in a "
        "tool result.",
        "Locate the resource first (list, search) and use its real path or address.",
        trail=("Resource Not Found",),
        agentrx=("System Failure",),
    ),
    _mode(
        "system.environment_setup",
        "Environment not set up",
        "The environment lacks something the agent's actions assume: a missing package, "
        "a misconfigured tool, an unavailable service.",
        "'ModuleNotFoundError', 'command not found', or a tool definition error.",
        "Install or configure the missing piece, or use an approach that does not need it.",
        trail=("Environment Setup Errors", "Tool Definition Issues"),
        agentrx=("System Failure",),
    ),
    _mode(
        "system.schema_violation",
        "Input or state breaks its schema",
        "A value given to the run, or written into its state by a step, does not fit the "
        "schema the state declares (a wrong type, a missing field, two values in one step "
        "for a key that holds one), so the step that reads the state cannot start.",
        "A validation error raised while the state is read for the next step, naming the "
        "field, or a framework's error that a key received more values than it holds.",
        "Make the value fit the schema the error names (the field's type, one writer per "
        "step), or change the schema (a reducer for a key that several steps write).",
        trail=("Formatting Errors",),
        agentrx=("Invalid Invocation",),
    ),
    _mode(
        "system.resource_exhaustion",
        "Resource exhausted",
        "The run hits a hard resource limit: context length, memory, disk, quota.",
        "'context length exceeded', 'out of memory', 'quota exceeded' in an error.",
        "Shrink the input (summarise, page through it) or raise the limit.",
        trail=("Resource Exhaustion",),
        agentrx=("System Failure",),
    ),
    _mode(
        "system.guardrail_triggered",
        "Guardrail triggered",
        "A safety or policy guardrail blocks an input or output and the run stops.",
        "A guardrail tripwire error or a refusal attributed to a content policy.",
        "Rephrase the request within policy, or route it to an allowed path.",
        agentrx=("Guardrails Triggered",),
    ),
]
