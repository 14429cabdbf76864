"""Asking a model: settings, an OpenAI-compatible client with structured output,
retries, a response cache, a budget, and the prompt texts.

    from agentdebug.llm import get_client
    answer = get_client().structured(messages=[...], schema=Verdict, strategy="judge")
    answer.value  # a validated Verdict

Every request and cache hit is recorded in the audit trail (stage "llm") with the
token counts the server reported.
"""

from __future__ import annotations

from agentdebug.llm.budget import Budget, BudgetScope, Remaining, budget_scope, remaining
from agentdebug.llm.cache import ResponseCache
from agentdebug.llm.client import LLMClient, Structured, get_client, reset_clients
from agentdebug.llm.config import (
    LLMSettings,
    config_path,
    current_settings,
    load_settings,
    read_config,
    unset_config_value,
    use_settings,
    write_config_value,
)
from agentdebug.llm.errors import (
    BudgetExceeded,
    LLMCallFailed,
    LLMError,
    MalformedAnswer,
    ModelRefused,
    NoModelConfigured,
    PromptError,
)
from agentdebug.llm.prompts import load_prompt, render_prompt

__all__ = [
    "Budget",
    "BudgetExceeded",
    "BudgetScope",
    "LLMCallFailed",
    "LLMClient",
    "LLMError",
    "LLMSettings",
    "MalformedAnswer",
    "ModelRefused",
    "NoModelConfigured",
    "PromptError",
    "Remaining",
    "ResponseCache",
    "Structured",
    "budget_scope",
    "config_path",
    "current_settings",
    "get_client",
    "load_prompt",
    "load_settings",
    "read_config",
    "remaining",
    "render_prompt",
    "reset_clients",
    "unset_config_value",
    "use_settings",
    "write_config_value",
]
