"""Format lint of registered prompts: one case that fires and one that does not, per rule."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from assembler.format_lint import FormatFinding, lint_prompt
from assembler.templates import Position, UnknownSyntaxError

INSTRUCTION_SYSTEM = "You are a research paper assistant."
RAG_SYSTEM = (
    "You are a scientific research assistant who answers with concise, evidence-grounded "
    "prose and includes inline numeric citations like [1], [2], etc."
)
RAG_PROMPT = (
    "Answer the question using the provided context. Cite the sources inline as [#] based "
    "on the order of the snippets. If the answer is not in the context, say you don't know."
    "\n\nContext:\n{{ context_1 }}\n[1] First context snippet...\n[2] Second snippet...\n"
    "\nQuestion: {{ instruction }}\nAnswer:"
)


def lint(
    user: Mapping[str, str],
    *,
    system: str = INSTRUCTION_SYSTEM,
    syntax: str = "curly",
    variables: Sequence[str] | None = None,
    expected_system: str | None = None,
) -> list[FormatFinding]:
    return lint_prompt(
        syntax=syntax,
        system=system,
        user_templates=user,
        variables=variables,
        expected_system=expected_system,
    )


def codes(findings: list[FormatFinding]) -> list[str]:
    return [finding.code for finding in findings]


def test_the_seed_prompts_have_no_findings() -> None:
    assert lint({"question": "Question: {{ instruction }}\n\nAnswer:"}) == []
    assert lint({"rag": RAG_PROMPT}, system=RAG_SYSTEM) == []
    hybrid = (
        "Question: {{ instruction }}\n\nContext:\n[1] First context snippet...\n"
        "[2] Second context snippet...\n\nAnswer using the provided context. Cite sources "
        "inline as [#] based on the order of the snippets.\n\nAnswer:"
    )
    assert lint({"hybrid": hybrid}) == []


# -- syntax --------------------------------------------------------------------------------


def test_every_syntax_error_of_every_template_is_an_error_finding() -> None:
    findings = lint(
        {"b": "{{ x[0] }}", "a": "Fine {{ y }}"}, system="{{ a.b }} and {{ open", variables=None
    )
    assert [(f.code, f.level, f.template, f.position) for f in findings] == [
        ("invalid_placeholder", "error", "system", Position(0, 1, 1)),
        ("unbalanced_braces", "error", "system", Position(14, 1, 15)),
        ("invalid_placeholder", "error", "b", Position(0, 1, 1)),
    ]
    assert "attribute access" in findings[0].message


def test_a_lone_brace_in_a_format_template_is_unbalanced() -> None:
    assert codes(lint({"u": "Q: {q}}"}, syntax="format", system="S")) == ["unbalanced_braces"]
    assert lint({"u": "Q: {q}}}"}, syntax="format", system="S") == []


def test_a_format_template_the_curly_syntax_cannot_write_is_a_warning() -> None:
    [finding] = lint({"u": "Literal {{{{ here }}}}: {q}"}, syntax="format", system="S")
    assert (finding.code, finding.level, finding.template) == (
        "not_curly_convertible",
        "warning",
        "u",
    )
    assert finding.position == Position(8, 1, 9)
    assert "Langfuse" in finding.message
    assert lint({"u": '{{"json": {q}}}'}, syntax="format", system="S") == []


def test_an_unknown_syntax_is_refused() -> None:
    with pytest.raises(UnknownSyntaxError):
        lint({}, syntax="jinja")


# -- system text in user templates ---------------------------------------------------------


@pytest.mark.parametrize(
    "opening",
    [
        "You are a research paper assistant. Answer the question.",
        "  you're an expert in biology.",
        "You are Claude, made to help.",
        "Act as a strict grader.",
        "I want you to act as a librarian.",
        "Your role is to grade answers.",
        "Pretend to be a pirate.",
        "As an AI, answer briefly.",
        "System: answer briefly.",
    ],
)
def test_a_user_template_that_opens_by_saying_who_the_model_is_is_flagged(opening: str) -> None:
    [finding] = lint({"question": opening + "\n\nQuestion: {{ q }}\n\nAnswer:"}, system="S")
    assert (finding.code, finding.level, finding.template) == (
        "system_text_in_user",
        "warning",
        "question",
    )
    assert finding.position is not None
    assert finding.position.offset == len(opening) - len(opening.lstrip())


@pytest.mark.parametrize(
    "opening",
    [
        "You are given the context below.",
        "Answer the question using the provided context.",
        "Question: what are you?",
        "As a first step, read the text.",
        "Later on: you are a helper.",
    ],
)
def test_a_user_template_that_opens_otherwise_is_not_flagged(opening: str) -> None:
    assert lint({"question": opening}, system="S") == []


def test_a_user_template_that_repeats_the_system_text_is_flagged_once() -> None:
    findings = lint(
        {"question": "Note:  you are a RESEARCH paper\nassistant. Question: {{ q }}\nAnswer:"}
    )
    [finding] = findings
    assert finding.code == "repeats_system_text"
    assert finding.position == Position(7, 1, 8)
    assert "You are a research paper assistant." in finding.message
    opening = lint({"question": "You are a research paper assistant.\n\nQuestion: x\n\nAnswer:"})
    assert codes(opening) == ["repeats_system_text"]


def test_short_system_sentences_are_not_looked_for() -> None:
    assert lint({"question": "Be brief. Question: x\n\nAnswer:"}, system="Be brief.") == []


# -- expected system message ---------------------------------------------------------------


def test_a_system_text_matching_the_expected_message_exactly_passes() -> None:
    assert lint({}, expected_system=INSTRUCTION_SYSTEM) == []


def test_a_different_system_text_shows_the_first_difference() -> None:
    [finding] = lint(
        {},
        system="You are a research paper assistant.",
        expected_system="You are a scientific research assistant who answers with citations.",
    )
    assert (finding.code, finding.level, finding.template) == ("system_mismatch", "error", "system")
    assert finding.position == Position(10, 1, 11)
    assert '"You are a research paper assistant."' in finding.message
    assert '"You are a scientific research assis…"' in finding.message


def test_a_system_text_that_only_adds_a_trailing_newline_still_differs() -> None:
    [finding] = lint({}, system=INSTRUCTION_SYSTEM + "\n", expected_system=INSTRUCTION_SYSTEM)
    assert finding.position == Position(35, 1, 36)
    assert "then the end of the text" in finding.message
    assert "\\n" in finding.message


def test_a_difference_on_a_later_line_reports_line_and_column() -> None:
    [finding] = lint({}, system="Line one.\nLine two!", expected_system="Line one.\nLine two.")
    assert finding.position == Position(18, 2, 9)


# -- RAG citations and the Question/Answer layout ------------------------------------------


def test_context_snippets_out_of_order_are_flagged_at_the_first_wrong_number() -> None:
    prompt = "Context:\n[1] a\n[3] b\n[2] c\n\nQuestion: {{ q }}\nAnswer:"
    [finding] = lint({"rag": prompt}, system="S")
    assert (finding.code, finding.level) == ("citation_order", "warning")
    assert finding.position == Position(15, 3, 1)
    assert "[3]" in finding.message and "[2]" in finding.message


def test_context_snippets_must_start_at_one() -> None:
    prompt = "Context:\n[2] a\n\nQuestion: q\nAnswer:"
    assert codes(lint({"rag": prompt}, system="S")) == ["citation_order"]


def test_snippet_text_may_span_lines_and_numbers_outside_context_are_ignored() -> None:
    prompt = (
        "[9] not a snippet\nContext:\n[1] a\ncontinued [7]\n\n[2] b\nQuestion: q\n[5] x\nAnswer:"
    )
    assert lint({"rag": prompt}, system="S") == []


@pytest.mark.parametrize(
    ("prompt", "line", "words"),
    [
        ("Context:\n[1] a\n\nAnswer:", 1, "no 'Question:' line"),
        ("Context:\n[1] a\n\nQuestion: q", 4, "No 'Answer:' line follows"),
        ("Answer:\nQuestion: q", 2, "No 'Answer:' line follows"),
        ("Question: q\n\nAnswer: it is 42.", 3, "Text follows the final 'Answer:'"),
        ("Question: q\nAnswer:\n\nContext:\n[1] a", 2, "Text follows the final 'Answer:'"),
    ],
)
def test_a_broken_question_answer_layout_is_flagged(prompt: str, line: int, words: str) -> None:
    [finding] = lint({"rag": prompt}, system="S")
    assert (finding.code, finding.level) == ("question_answer_layout", "warning")
    assert finding.position is not None and finding.position.line == line
    assert words in finding.message


@pytest.mark.parametrize(
    "prompt",
    [
        "Question: {{ q }}",  # a fragment, as in a registry's question_format
        "Answer: {{ a }}",
        "Q: x\nA:",
        "Question: one\nAnswer: example\n\nquestion: two\nanswer:  \n",
    ],
)
def test_fragments_and_few_shot_layouts_are_not_flagged(prompt: str) -> None:
    assert lint({"u": prompt}, system="S") == []


# -- declared variables --------------------------------------------------------------------


def test_declared_and_used_variables_that_agree_have_no_findings() -> None:
    assert lint({"u": "{{ a }} {{ b }}"}, system="{{ b }}", variables=["a", "b"]) == []


def test_undeclared_variables_are_errors_at_their_first_use() -> None:
    findings = lint(
        {"second": "{{ c }}", "first": "x {{ b }} {{ c }}"}, system="{{ a }}", variables=["a"]
    )
    assert [(f.code, f.level, f.template, f.position) for f in findings] == [
        ("undeclared_variable", "error", "first", Position(2, 1, 3)),
        ("undeclared_variable", "error", "first", Position(10, 1, 11)),
    ]
    assert "'b'" in findings[0].message


def test_declared_variables_no_template_uses_are_warnings_about_the_prompt() -> None:
    findings = lint({"u": "{{ a }}"}, system="S", variables=["a", "zeta", "beta", "zeta"])
    assert [(f.code, f.level, f.template, f.position) for f in findings] == [
        ("unused_variable", "warning", None, None),
        ("unused_variable", "warning", None, None),
    ]
    assert ["'beta'" in findings[0].message, "'zeta'" in findings[1].message] == [True, True]


def test_a_declared_name_that_is_not_a_plain_name_is_an_error() -> None:
    [finding] = lint({"u": "x"}, system="S", variables=["user.name"])
    assert (finding.code, finding.level) == ("invalid_variable_name", "error")


def test_variables_used_in_a_template_with_errors_still_count_as_used() -> None:
    findings = lint({"u": "{{ a }} {{ b.c }}"}, system="S", variables=["a"])
    assert codes(findings) == ["invalid_placeholder"]


def test_without_a_declaration_the_variable_rules_are_skipped() -> None:
    assert lint({"u": "{{ a }}"}, system="S", variables=None) == []


# -- order and shape -----------------------------------------------------------------------


def test_findings_come_system_first_then_user_templates_by_name_then_the_prompt() -> None:
    findings = lint(
        {"zeta": "You are a bot. {{ z }}", "alpha": "Act as x. {{ y"},
        system="{{ s.t }}",
        variables=["unused"],
        expected_system="other",
    )
    assert [(f.template, f.code) for f in findings] == [
        ("system", "invalid_placeholder"),
        ("system", "system_mismatch"),
        ("alpha", "system_text_in_user"),
        ("alpha", "unbalanced_braces"),
        ("zeta", "system_text_in_user"),
        ("zeta", "undeclared_variable"),
        (None, "unused_variable"),
    ]
    assert (
        lint_prompt(
            syntax="curly",
            system="{{ s.t }}",
            user_templates={"alpha": "Act as x. {{ y", "zeta": "You are a bot. {{ z }}"},
            variables=["unused"],
            expected_system="other",
        )
        == findings
    )


def test_a_finding_has_a_json_safe_form() -> None:
    [finding] = lint({"u": "{{ a }}"}, system="S", variables=[])
    assert finding.to_dict() == {
        "code": "undeclared_variable",
        "level": "error",
        "message": finding.message,
        "template": "u",
        "position": {"offset": 0, "line": 1, "column": 1},
    }
