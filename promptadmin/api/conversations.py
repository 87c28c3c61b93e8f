"""Conversation endpoints: append messages, fetch the history block, list and ask for
summaries. Appending never waits for a summary; summaries are made by Celery workers."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from promptadmin.api.authentication import actor_of
from promptadmin.api.errors import ClientErrorResponseSerializer, Conflict
from promptadmin.api.permissions import CanRead, CanWrite
from promptadmin.api.responses import RenderBeforeCommit
from promptadmin.api.serializers import conversations as s
from promptadmin.api.serializers.common import validated
from promptadmin.conversations import selectors, services
from promptadmin.conversations.models import Conversation

KEY = OpenApiParameter(
    "key", str, OpenApiParameter.PATH, description="The conversation's key (1-200 characters)."
)


def _conversation(key: str) -> Conversation:
    try:
        return selectors.conversation_get(key)
    except Conversation.DoesNotExist:
        raise Http404(f"No conversation with key '{key}'.") from None


# The writes commit only once their answer is rendered: a client that saw an error must be
# able to retry without appending its messages twice.
class AppendMessagesView(RenderBeforeCommit):
    permission_classes = [CanWrite]

    @extend_schema(
        operation_id="conversation_append",
        tags=["conversations"],
        parameters=[KEY],
        request=s.AppendInputSerializer,
        responses={201: s.AppendOutputSerializer},
        summary="Append messages (creating the conversation); summaries follow in background",
    )
    def post(self, request: Request, key: str) -> Response:
        data = validated(s.AppendInputSerializer, request.data)
        result = services.conversation_append(
            actor=actor_of(request),
            key=key,
            messages=data["messages"],
            history_budget=data.get("history_budget"),
        )
        body = {
            "conversation": result.conversation.key,
            "positions": result.positions,
            "summary_pending": result.summary_pending,
        }
        return Response(body, status=status.HTTP_201_CREATED)


class HistoryView(APIView):
    permission_classes = [CanRead]

    @extend_schema(
        operation_id="conversation_history",
        tags=["conversations"],
        parameters=[KEY, s.HistoryQuerySerializer],
        responses={200: s.HistoryOutputSerializer},
        summary="The history block for a budget: newest summary plus the recent messages",
    )
    def get(self, request: Request, key: str) -> Response:
        query = validated(s.HistoryQuerySerializer, request.query_params.dict())
        try:
            history = selectors.history_block(key, budget=query.get("budget"))
        except Conversation.DoesNotExist:
            raise Http404(f"No conversation with key '{key}'.") from None
        return Response(s.history_data(history))


class SummariesView(APIView):
    permission_classes = [CanRead]
    pagination_class = None

    @extend_schema(
        operation_id="conversation_summaries",
        tags=["conversations"],
        parameters=[KEY],
        responses={200: s.SummaryOutputSerializer(many=True)},
        summary="Every summary of the conversation, newest first",
    )
    def get(self, request: Request, key: str) -> Response:
        summaries = selectors.conversation_summaries(_conversation(key))
        return Response(s.SummaryOutputSerializer(summaries, many=True).data)


class SummarizeView(RenderBeforeCommit):
    permission_classes = [CanWrite]

    @extend_schema(
        operation_id="conversation_summarize",
        tags=["conversations"],
        parameters=[KEY],
        request=None,
        responses={
            202: s.SummarizeOutputSerializer,
            409: OpenApiResponse(
                ClientErrorResponseSerializer,
                description="`nothing_to_summarize`: every message not yet summarized is "
                "recent enough to be shown verbatim within the history budget; nothing is "
                "recorded.",
            ),
        },
        summary="Ask for a summary now (made in the background)",
    )
    def post(self, request: Request, key: str) -> Response:
        try:
            summary_id = services.summary_request(actor=actor_of(request), key=key)
        except Conversation.DoesNotExist:
            raise Http404(f"No conversation with key '{key}'.") from None
        except services.NothingToSummarize as error:
            raise Conflict(str(error), code="nothing_to_summarize") from None
        return Response(
            {"summary": summary_id, "summary_pending": True}, status=status.HTTP_202_ACCEPTED
        )
