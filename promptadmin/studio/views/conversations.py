"""Conversations: the list, and one conversation's messages and summaries, with a button
to ask for a summary now (made in the background, like every summary)."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from promptadmin.conversations import selectors, services
from promptadmin.conversations.models import Conversation, Summary
from promptadmin.core.pagination import PAGE_SIZE, Page, page_number
from promptadmin.core.roles import Role
from promptadmin.studio.access import page_of, render_page, studio_view


@studio_view()
def conversation_list(request: HttpRequest) -> HttpResponse:
    page = page_of(request, selectors.conversation_list())
    counts = dict(
        Summary.objects.filter(conversation__in=page.items)
        .order_by()
        .values_list("conversation_id")
        .annotate(n=Count("id"))
    )
    for conversation in page.items:
        conversation.summary_count = counts.get(conversation.pk, 0)
    return render_page(
        request,
        "studio/conversation_list.html",
        {"section": "conversations", "page": page, "conversations": page.items},
    )


def _get(key: str) -> Conversation:
    try:
        return selectors.conversation_get(key)
    except Conversation.DoesNotExist:
        raise Http404(f"No conversation with key '{key}'.") from None


@studio_view()
def conversation_detail(request: HttpRequest, key: str) -> HttpResponse:
    conversation = _get(key)
    # Messages are read by position range (no count, no offset): page 1 is the newest.
    number = page_number(request.GET.get("messages_page"))
    shown = selectors.message_page(conversation, page=number, size=PAGE_SIZE)
    messages_page = Page(
        items=shown.messages,
        number=shown.number,
        per_page=PAGE_SIZE,
        total=conversation.last_position,
        has_next=shown.number < shown.pages,
        query=request.GET,
        param="messages_page",
    )
    history = selectors.conversation_history(conversation, budget=conversation.history_budget)
    return render_page(
        request,
        "studio/conversation_detail.html",
        {
            "section": "conversations",
            "conversation": conversation,
            "messages_page": messages_page,
            "summaries": page_of(
                request, selectors.conversation_summaries(conversation), param="summaries_page"
            ),
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
