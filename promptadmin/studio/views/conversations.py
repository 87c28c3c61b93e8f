"""Conversations: the list, and one conversation's messages and summaries, with a button
to ask for a summary now (made in the background, like every summary)."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from promptadmin.conversations import selectors, services
from promptadmin.conversations.models import Conversation
from promptadmin.core.roles import Role
from promptadmin.studio.access import render_page, studio_view

LIST_SIZE = 100
MESSAGES_SHOWN = 200


@studio_view()
def conversation_list(request: HttpRequest) -> HttpResponse:
    conversations = selectors.conversation_list().annotate(summary_count=Count("summaries"))[
        :LIST_SIZE
    ]
    return render_page(
        request,
        "studio/conversation_list.html",
        {"section": "conversations", "conversations": conversations, "limit": LIST_SIZE},
    )


def _get(key: str) -> Conversation:
    try:
        return selectors.conversation_get(key)
    except Conversation.DoesNotExist:
        raise Http404(f"No conversation with key '{key}'.") from None


@studio_view()
def conversation_detail(request: HttpRequest, key: str) -> HttpResponse:
    conversation = _get(key)
    newest = list(
        selectors.conversation_messages(conversation).order_by("-position")[:MESSAGES_SHOWN]
    )
    newest.reverse()
    history = selectors.conversation_history(conversation, budget=conversation.history_budget)
    return render_page(
        request,
        "studio/conversation_detail.html",
        {
            "section": "conversations",
            "conversation": conversation,
            "messages_shown": newest,
            "hidden": conversation.last_position - len(newest),
            "summaries": selectors.conversation_summaries(conversation),
            "history": history,
            "shown_positions": set(history.fit.positions),
        },
    )


@studio_view(read=Role.AUTHOR)
@require_POST
def conversation_summarize(request: HttpRequest, key: str) -> HttpResponse:
    conversation = _get(key)
    try:
        summary_id = services.summary_request(actor=request.user, key=conversation.key)
    except services.NothingToSummarize as error:
        messages.info(request, str(error))
        return redirect("studio:conversation_detail", conversation.key)
    if summary_id is None:
        messages.info(request, "A summary is being made right now; it will go on if needed.")
    else:
        messages.success(request, f"Summary #{summary_id} asked for; it is made in the background.")
    return redirect("studio:conversation_detail", conversation.key)
