"""Demo registered prompts: the tri-section seed's interfaces and adapter instructions,
prompts for its tasks (parsing, abstention detection, rubric evaluation), and the
conversation summarizer's instructions (SUMMARIZER_PROMPT's default)."""

from __future__ import annotations

from typing import Any

from assembler.summarize import DEFAULT_INSTRUCTIONS

INTERFACES: list[dict[str, Any]] = [
    {"name": "langchain", "supports_system_prompt": True, "supports_structured_output": False},
    {"name": "openrouter", "supports_system_prompt": True, "supports_structured_output": False},
    {
        "name": "openai_endpoint",
        "supports_system_prompt": True,
        "supports_structured_output": False,
    },
    {"name": "claude_tool", "supports_system_prompt": True, "supports_structured_output": True},
    {
        "name": "claude_agent_sdk",
        "supports_system_prompt": True,
        "supports_structured_output": True,
    },
    {"name": "manual", "supports_system_prompt": False, "supports_structured_output": False},
]

# LangChain-based adapters lack native structured output: they spell out the JSON schema
# and format instructions (shared by langchain, openrouter and openai_endpoint).
_JSON_FORMAT = {
    "system_addition": (
        "Respond with one JSON object that validates against this JSON schema:\n{{ json_schema }}"
    ),
    "user_addition": "{{ format_instructions }}",
}
_CLAUDE_TOOL = {
    "system_addition": "Extract the requested fields with the provided tool; do not add prose.",
    "user_addition": "",
}
_CLAUDE_AGENT = {
    "system_addition": "Where the input is ambiguous, choose the best interpretation and go on.",
    "user_addition": "",
}
TASKS = ("parsing", "abstention", "rubric")

ADAPTER_INSTRUCTIONS: list[dict[str, Any]] = [
    {"interface": interface, "task": task, "order": 1, **text}
    for task in TASKS
    for interface, text in (
        ("langchain", _JSON_FORMAT),
        ("openrouter", _JSON_FORMAT),
        ("openai_endpoint", _JSON_FORMAT),
        ("claude_tool", _CLAUDE_TOOL),
        ("claude_agent_sdk", _CLAUDE_AGENT),
    )
]

# (component, agent, task_type or None, description, versions); each version lists labels.
PROMPTS: list[dict[str, Any]] = [
    {
        "component": "verifier",
        "agent": "parser",
        "task_type": None,
        "description": "Parses a model's free-text answer into the template's fields.",
        "versions": [
            {
                "labels": ["production"],
                "task": "parsing",
                "system": "You are an evaluator that extracts structured answers from text.",
                "user_templates": {
                    "default": "Question: {{ question }}\n\nResponse to parse:\n{{ response }}",
                },
                "commit_message": "First parsing prompt.",
            },
            {
                "labels": ["staging"],
                "task": "parsing",
                "system": (
                    "You are an evaluator that extracts structured answers from text. "
                    "Use only what the response says; never infer missing fields."
                ),
                "user_templates": {
                    "default": "Question: {{ question }}\n\nResponse to parse:\n{{ response }}",
                },
                "commit_message": "Forbid inferring missing fields.",
            },
        ],
    },
    {
        "component": "verifier",
        "agent": "parser",
        "task_type": "numeric",
        "description": "Parsing variant for numeric answers.",
        "versions": [
            {
                "labels": ["production", "staging"],
                "task": "parsing",
                "syntax": "format",
                "system": "You extract numbers with their units from text.",
                "user_templates": {
                    "default": "Question: {question}\n\nResponse:\n{response}\n\n"
                    'Example: {{"value": 3.2, "unit": "km"}}',
                },
                "commit_message": "Numeric parsing, format syntax.",
            }
        ],
    },
    {
        "component": "verifier",
        "agent": "abstention",
        "task_type": None,
        "description": "Detects whether a model declined to answer.",
        "versions": [
            {
                "labels": ["production"],
                "task": "abstention",
                "system": "You decide whether a response abstains from answering the question.",
                "user_templates": {
                    "default": "Question: {{ question }}\n\nResponse: {{ response }}"
                },
            },
            {
                "labels": ["staging"],
                "task": "abstention",
                "system": (
                    "You decide whether a response abstains from answering the question. "
                    "Hedged answers that still commit to an answer are not abstentions."
                ),
                "user_templates": {
                    "default": "Question: {{ question }}\n\nResponse: {{ response }}"
                },
            },
        ],
    },
    {
        "component": "verifier",
        "agent": "judge",
        "task_type": None,
        "description": "Grades a response against a rubric trait.",
        "versions": [
            {
                "labels": ["production"],
                "task": "rubric",
                "system": "You grade {{ subject }} responses against one rubric trait.",
                "user_templates": {
                    "default": "Trait: {{ trait }}\n\nResponse:\n{{ response }}",
                    "batch": "Traits:\n{{ traits }}\n\nResponse:\n{{ response }}",
                },
                "variables": ["subject", "trait", "traits", "response"],
            }
        ],
    },
    {
        "component": "verifier",
        "agent": "judge",
        "task_type": "rubric",
        "description": "Rubric evaluation with cited evidence.",
        "versions": [
            {
                "labels": ["production"],
                "task": "rubric",
                "system": "You grade {{ subject }} responses and cite the evidence you used.",
                "user_templates": {
                    "default": "Context:\n[1] {{ evidence }}\n\nQuestion: Does the response "
                    "show {{ trait }}?\n\nAnswer:",
                },
            },
            {
                "labels": ["staging"],
                "task": "rubric",
                "system": (
                    "You grade {{ subject }} responses and cite the evidence you used, "
                    "as [1], [2], ..."
                ),
                "user_templates": {
                    "default": "Context:\n[1] {{ evidence }}\n\nQuestion: Does the response "
                    "show {{ trait }}?\n\nAnswer:",
                },
            },
        ],
    },
    {
        "component": "conversations",
        "agent": "summarizer",
        "task_type": None,
        "description": "What the conversation summarizer's endpoint is told (its system "
        "message; the transcript is the user message). Its production version is used.",
        "versions": [
            {
                "labels": ["production"],
                "system": DEFAULT_INSTRUCTIONS,
                "user_templates": {},
                "commit_message": "The built-in summarizer instructions.",
            }
        ],
    },
]
