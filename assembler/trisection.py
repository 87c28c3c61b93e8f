"""Tri-section assembly of a registered prompt: task text, adapter additions, user instructions.

Three independent sources make the final prompt:

1. the task's system text and user text (the prompt version's templates, already rendered);
2. the adapter instructions registered for the (interface, task) pair, in their ``order``:
   each is a pair of templates rendered leniently with the caller's
   ``instruction_context`` (a missing key renders empty, so an adapter works without
   context); non-empty system additions are appended to the system text and non-empty
   user additions to the user text;
3. the caller's optional user instructions, appended to the system text last.

Appending joins the non-blank parts with a blank line (``"\\n\\n"``, the ``separator``).
When a text gets something appended, each part is stripped of surrounding whitespace
first; a text that gets nothing appended is kept exactly as it is.

>>> result = assemble_trisection(
...     system_text="You grade answers.",
...     user_text="Answer: 42",
...     interface=Interface("langchain", supports_system_prompt=True),
...     adapter_instructions=[AdapterInstruction(1, "Reply as JSON: {{ json_schema }}", "")],
...     user_instructions="Be strict.",
...     instruction_context={"json_schema": {"type": "object"}},
... )
>>> print(result.system)
You grade answers.
<BLANKLINE>
Reply as JSON: {"type": "object"}
<BLANKLINE>
Be strict.
>>> [message.role for message in result.messages]
['system', 'user']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from assembler.format_lint import FindingLevel, FormatFinding, empty_values
from assembler.templates import DEFAULT_SYNTAX, RenderResult, render
from assembler.tokens import Tokenizer

Role: TypeAlias = Literal["system", "user"]

DEFAULT_SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class Interface:
    """An LLM backend kind and what it supports. Without ``supports_system_prompt`` the
    system text goes before the user text in a single user message.
    ``supports_structured_output`` is carried for adapters; assembly does not use it."""

    name: str
    supports_system_prompt: bool = True
    supports_structured_output: bool = False


@dataclass(frozen=True, slots=True)
class AdapterInstruction:
    """Text an adapter adds for one (interface, task) pair.

    ``system_addition`` and ``user_addition`` are templates in ``syntax``, rendered
    leniently with the caller's instruction context. Instructions apply by ascending
    ``order``; equal orders keep the order they were given in.
    """

    order: int
    system_addition: str = ""
    user_addition: str = ""
    syntax: str = DEFAULT_SYNTAX


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message."""

    role: Role
    content: str

    def to_dict(self) -> dict[str, str]:
        """JSON-safe form: ``{"role": ..., "content": ...}``."""
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, slots=True)
class TriSectionResult:
    """The assembled prompt: the final ``system`` and ``user`` texts (the raw texts, always
    separate), and the ``messages`` to send: ``[system, user]``; just ``[user]`` when the
    system text is blank; or one user message holding the system text then the user text
    when the interface does not support a system prompt. ``findings`` warn of adapter
    additions that rendered with an empty value where their text expects one
    (:func:`assembler.format_lint.empty_values`)."""

    system: str
    user: str
    messages: tuple[Message, ...]
    findings: tuple[FormatFinding, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """JSON-safe form: system, user and messages."""
        return {
            "system": self.system,
            "user": self.user,
            "messages": [message.to_dict() for message in self.messages],
        }


def assemble_trisection(
    *,
    system_text: str,
    user_text: str,
    interface: Interface,
    adapter_instructions: Iterable[AdapterInstruction] = (),
    user_instructions: str | None = None,
    instruction_context: Mapping[str, object] | None = None,
    separator: str = DEFAULT_SEPARATOR,
) -> TriSectionResult:
    """Append the adapter additions and user instructions, then build the messages.

    ``adapter_instructions`` are those registered for (``interface``, the task); the
    caller looks them up. Their templates are rendered with ``instruction_context``
    (missing keys render empty); a template that does not parse raises
    :class:`~assembler.templates.TemplateSyntaxError`, so validate them when they are saved.

    >>> result = assemble_trisection(
    ...     system_text="You summarize.", user_text="Text: ...",
    ...     interface=Interface("manual", supports_system_prompt=False),
    ...     adapter_instructions=[
    ...         AdapterInstruction(2, user_addition="Second."),
    ...         AdapterInstruction(1, user_addition="First {{ missing }}"),
    ...     ])
    >>> result.user
    'Text: ...\\n\\nFirst\\n\\nSecond.'
    >>> [message.to_dict() for message in result.messages]  # doctest: +NORMALIZE_WHITESPACE
    [{'role': 'user', 'content': 'You summarize.\\n\\nText: ...\\n\\nFirst\\n\\nSecond.'}]
    """
    context = instruction_context or {}
    system_parts = [system_text]
    user_parts = [user_text]
    findings: list[FormatFinding] = []
    for instruction in sorted(adapter_instructions, key=lambda item: item.order):
        syntax = instruction.syntax
        additions: tuple[tuple[Role, str, list[str]], ...] = (
            ("system", instruction.system_addition, system_parts),
            ("user", instruction.user_addition, user_parts),
        )
        for role, template, parts in additions:
            rendered = render(template, syntax, context, lenient=True)
            parts.append(rendered.text)
            findings += adapter_findings(interface.name, role, template, syntax, rendered)
    system_parts.append(user_instructions or "")
    system = join_parts(system_parts, separator)
    user = join_parts(user_parts, separator)
    messages: tuple[Message, ...]
    if not interface.supports_system_prompt:
        messages = (Message("user", join_parts([system, user], separator)),)
    elif system.strip():
        messages = (Message("system", system), Message("user", user))
    else:
        messages = (Message("user", user),)
    return TriSectionResult(system, user, messages, tuple(findings))


def adapter_findings(
    interface: str,
    role: Role,
    template: str,
    syntax: str,
    rendered: RenderResult,
    *,
    level: FindingLevel = "warning",
    without_context: bool = False,
) -> list[FormatFinding]:
    """:func:`~assembler.format_lint.empty_values` for the ``role`` addition of an adapter
    instruction of ``interface``: its findings' ``template`` is ``adapter:<interface>:<role>``.
    ``without_context``: ``rendered`` is a render with no instruction context (what an
    editor shows before anyone renders), and the message says so.

    >>> text = "Answer in {{ language }}."
    >>> [finding] = adapter_findings(
    ...     "langchain", "user", text, "curly", render(text, "curly", {}, lenient=True))
    >>> print(finding.template, finding.message)  # doctest: +NORMALIZE_WHITESPACE
    adapter:langchain:user The langchain adapter's user addition renders 'language' empty:
    nothing comes between "Answer in" and ".". Pass 'language' in the instruction context.
    """
    return empty_values(
        template,
        syntax,
        rendered,
        name=f"adapter:{interface}:{role}",
        what=f"{'Without instruction context, the' if without_context else 'The'} "
        f"{interface} adapter's {role} addition",
        hint="Pass '{name}' in the instruction context.",
        level=level,
    )


def join_parts(parts: Sequence[str], separator: str = DEFAULT_SEPARATOR) -> str:
    """Join the non-blank ``parts`` with ``separator``.

    Blank parts (empty or whitespace only) are skipped. A single remaining part is
    returned exactly as it is; when two or more remain, each is stripped of surrounding
    whitespace before joining, so the seams are always exactly ``separator``.

    >>> join_parts(["Intro.\\n", "", "  ", " More."])
    'Intro.\\n\\nMore.'
    >>> join_parts(["  kept as is\\n", ""])
    '  kept as is\\n'
    >>> join_parts(["", " "])
    ''
    """
    kept = [part for part in parts if part.strip()]
    if len(kept) == 1:
        return kept[0]
    return separator.join(part.strip() for part in kept)


def message_tokens(messages: Iterable[Message], tokenizer: Tokenizer) -> tuple[int, ...]:
    """The token count of each message's content, in order (the chat format's own
    per-message overhead is not included: it depends on the model).

    >>> from assembler.tokens import get_tokenizer
    >>> message_tokens([Message("system", "Hello, world!"), Message("user", "")],
    ...     get_tokenizer())
    (4, 0)
    """
    return tuple(tokenizer.count(message.content) for message in messages)
