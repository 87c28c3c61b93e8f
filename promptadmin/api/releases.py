"""Release endpoints: releases, labels and their history, scenarios, and comparisons.

Making a release needs the author role or a write key; moving a label (publish, roll
back) needs the admin role or an admin key. Every change calls one service.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from promptadmin.api.authentication import actor_of
from promptadmin.api.errors import ClientErrorResponseSerializer, Conflict
from promptadmin.api.permissions import ReadOrAdmin, ReadOrWrite
from promptadmin.api.preconditions import (
    ETAG,
    IF_MATCH,
    PRECONDITION_ERRORS,
    etag,
    expected_label,
    expected_revision,
    label_etag,
    with_etag,
)
from promptadmin.api.responses import RenderBeforeCommit
from promptadmin.api.serializers import releases as s
from promptadmin.api.serializers.common import validated
from promptadmin.releases import selectors, services
from promptadmin.releases.impact import unassembled
from promptadmin.releases.models import Release, ReleaseLabel, ReleaseLabelMove, Scenario

CONFIRM = {
    409: OpenApiResponse(
        ClientErrorResponseSerializer,
        description="`expectations_failing`: expectations fail on the release; the error "
        "lists them. Send `confirm: true` to move the label anyway (recorded).",
    )
}
CREATE_CONFLICTS = {
    409: OpenApiResponse(
        ClientErrorResponseSerializer,
        description=f"{CONFIRM[409].description} `working_copy_changed`: `expected_hash` was "
        "sent and the working copy changed since; compare again.",
    )
}
NOT_FOUND = {404: OpenApiResponse(ClientErrorResponseSerializer, description="No such name.")}
LABEL_IF_MATCH = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=False,
    description='Optional: the label\'s ETag from GET (`"label-<label>-<release>"`), or '
    '`"label-<label>-none"` to create it only if it does not exist yet; 412 when the label '
    "points elsewhere now. Without it the label moves wherever it points (recorded).",
)
LABEL_PRECONDITION = {
    412: OpenApiResponse(
        ClientErrorResponseSerializer,
        description="If-Match was sent and does not name where the label points now.",
    )
}


# Schema examples: one made-up history, told the same way by every operation. Production
# pointed at r-2026-11-21; Marta's new lines were published as r-2026-11-22.
OLD_HASH = "cb4232044129f6c6294e2ce7808c23ea3db611feff411adbc838461ad7e29287"
NEW_HASH = "84c78609fec13901b983fbd9e854d26950259956217d52c72d92b793f680ee12"
RELEASE = {
    "name": "r-2026-11-22",
    "notes": "Marta's new lines",
    "labels": ["production"],
    "created": "2026-11-22T14:03:11.204000Z",
    "created_by": "marta",
    "content_hash": NEW_HASH,
    "segments": 412,
    "aliases": [],
}
OLDER_RELEASE = {
    **RELEASE,
    "name": "r-2026-11-21",
    "notes": "Launch content",
    "labels": ["staging"],
    "created": "2026-11-21T09:30:02.118000Z",
    "content_hash": OLD_HASH,
    "segments": 409,
}
LABEL = {
    "label": "production",
    "release": "r-2026-11-22",
    "moved_at": "2026-11-22T14:03:11.390000Z",
}
MOVE = {
    "label": "production",
    "from_release": "r-2026-11-21",
    "to_release": "r-2026-11-22",
    "at": "2026-11-22T14:03:11.390000Z",
    "by": "marta",
    "note": "Marta's new lines",
    "confirmed_failures": [],
}
CONFIRMED_MOVE = {
    **MOVE,
    "from_release": "r-2026-11-22",
    "to_release": "r-2026-11-21",
    "at": "2026-11-22T16:40:27.051000Z",
    "by": "API key 'ops' (U1xRcyFC, scope admin)",
    "note": "Marta's lines broke the intro",
    "confirmed_failures": [
        {
            "scenario": "bell scene, Marta at tier 2",
            "expectation": "contains 'bell'",
            "reason": "'bell' is not in the prompt",
        }
    ],
}
REMOVAL = {
    **MOVE,
    "label": "staging",
    "from_release": "r-2026-11-21",
    "to_release": None,
    "at": "2026-11-23T08:12:45.600000Z",
    "note": "Staging is retired",
}
CUT = (
    "Entry segment #15 'Premise' (34 tokens) left out: the 600-token budget had no room left for it"
)
LEFT_OUT = {
    "kind": "left_out",
    "key": "segment:15",
    "scope": "entry",
    "name": "Entry segment #15 'Premise'",
    "tokens_before": 34,
    "tokens_after": 0,
    "segment_id": 15,
    "npc": None,
    "lore_id": None,
    "tier_before": None,
    "tier_after": None,
    "reason": "over_budget",
    "explanation": CUT,
}
COMPARE = {
    "before": {"name": "r-2026-11-21", "label": "production", "content_hash": OLD_HASH},
    "after": {"name": "working", "label": None, "content_hash": NEW_HASH},
    "segments": {
        "added": [
            {"id": 58, "scope": "npc", "owner": "marta-vell", "title": "Her debt", "tokens": 41}
        ],
        "changed": [
            {
                "id": 10,
                "scope": "world",
                "owner": "iron-coast",
                "title": "Tone",
                "tokens": 96,
                "fields": ["content"],
                "changes": [],
                "tokens_before": 33,
                "diff": "--- before\n+++ after\n@@ -1 +1,2 @@\n The Iron Coast is grey, wet and "
                "stubborn.\n+The tide never quite goes out, and nobody trusts the bells.",
            }
        ],
        "removed": [],
    },
    "objects": {
        "added": [],
        "changed": [
            {
                "kind": "npcs",
                "slug": "marta-vell",
                "name": "Marta Vell-Orr",
                "fields": ["name"],
                "changes": [{"field": "name", "before": "Marta Vell", "after": "Marta Vell-Orr"}],
                "diff": "",
            }
        ],
        "removed": [],
    },
    "lore": {
        "added": [{"id": 41, "world": "iron-coast", "title": "The drowned bell", "tokens": 38}],
        "changed": [],
        "removed": [],
    },
    "scenarios": [
        {
            "scenario": "bell scene, Marta at tier 2",
            "saved": True,
            "entry": "drowned-bell",
            "first_turn": True,
            **unassembled(),
            "tokens_before": 508,
            "tokens_after": 597,
            "cuts_added": [CUT],
            "expectations_failing": [
                {"expectation": "fits without cuts", "reason": f"1 cut: {CUT}"}
            ],
            "outcome_before": {"left_out": [], "shortened": [], "lowered": []},
            "outcome_after": {"left_out": [LEFT_OUT], "shortened": [], "lowered": []},
            "changed": True,
            "assembled": True,
            "preview_query": "entry=drowned-bell&token_budget=600&npc_budget=600&first_turn=on"
            "&npc=marta-vell&tier=2&input=I+ring+the+bell.",
        }
    ],
}


def answer(name: str, value: Any, status_code: int = 200) -> OpenApiExample:
    """A response example (of a list: one item, the schema lists it)."""
    return OpenApiExample(name, value=value, response_only=True, status_codes=[str(status_code)])


def _named(name: str) -> Any:
    try:
        return selectors.release_named(name)
    except ObjectDoesNotExist as exc:
        raise NotFound(str(exc)) from None


class ReleaseListView(APIView):
    permission_classes = [ReadOrWrite]

    @extend_schema(
        operation_id="releases_list",
        tags=["releases"],
        responses={200: s.ReleaseSerializer(many=True)},
        examples=[answer("Newest first", RELEASE)],
        summary="Releases, newest first, with their labels",
    )
    def get(self, request: Request) -> Response:
        return Response([s.ReleaseSerializer.of(r) for r in selectors.releases()])

    @extend_schema(
        operation_id="releases_create",
        tags=["releases"],
        request=s.ReleaseInputSerializer,
        responses={201: s.ReleaseSerializer, **CREATE_CONFLICTS},
        examples=[
            OpenApiExample(
                "Publish the working copy to production",
                request_only=True,
                value={
                    "name": "r-2026-11-22",
                    "notes": "Marta's new lines",
                    "labels": ["production"],
                },
            ),
            answer("Published", RELEASE, 201),
        ],
        summary="Snapshot the working copy as a release; with labels, publish it",
    )
    def post(self, request: Request) -> Response:
        data = validated(s.ReleaseInputSerializer, request.data)
        answer: dict[str, Any] = {}

        def render_before_commit(release: Release) -> None:
            # As RenderBeforeCommit does for the other writes; this one cannot run in the
            # request's transaction (see release_create), so it renders in the release's.
            answer.update(s.ReleaseSerializer.of(selectors.releases().get(pk=release.pk)))
            request.accepted_renderer.render(
                answer, request.accepted_media_type, self.get_renderer_context()
            )

        try:
            services.release_create(
                actor=actor_of(request),
                name=data.get("name") or None,
                notes=data["notes"],
                labels=data["labels"],
                confirm=data["confirm"],
                expected_hash=data.get("expected_hash"),
                before_commit=render_before_commit,
            )
        except services.WorkingCopyChanged as exc:
            raise Conflict(str(exc), code="working_copy_changed") from None
        return Response(answer, status=status.HTTP_201_CREATED)


class ReleaseDetailView(APIView):
    permission_classes = [ReadOrWrite]

    @extend_schema(
        operation_id="releases_retrieve",
        tags=["releases"],
        responses={200: s.ReleaseSerializer, **NOT_FOUND},
        examples=[answer("A release", RELEASE)],
        summary="A release, by name or by one of its labels",
    )
    def get(self, request: Request, name: str) -> Response:
        return Response(s.ReleaseSerializer.of(_named(name)))


class CompareView(APIView):
    permission_classes = [ReadOrWrite]

    @extend_schema(
        operation_id="releases_compare",
        tags=["releases"],
        responses={200: s.CompareSerializer, **NOT_FOUND},
        examples=[answer("A grown segment cuts the bell scene", COMPARE)],
        summary="The impact of going from release a to release b",
        description="Either side may be a release name, a label or `working`. Lists the "
        "objects and segments added, changed (with text diffs) and removed, and for every "
        "scenario (saved ones, then each entry's first and later turn) the tokens before "
        "and after, the cuts that appear or disappear and the expectations that start or "
        "stop failing. Only the scenarios whose content differs (the entry's, its world's, "
        "its rulesets', its NPCs' or the core) are assembled (`assembled`); the others are "
        "unchanged, their tokens null. A scenario's outcomes hold the cuts that appear or "
        "disappear, not those both sides share. Reports are kept by the two contents' "
        "hashes, and each scenario's findings by the bundles it reads on each side, so a "
        "report after another assembles only what no report did.",
    )
    def get(self, request: Request, before: str, after: str) -> Response:
        try:
            return Response(selectors.compare_report(before, after))
        except ObjectDoesNotExist as exc:
            raise NotFound(str(exc)) from None


class LabelListView(APIView):
    permission_classes = [ReadOrWrite]

    @extend_schema(
        operation_id="release_labels_list",
        tags=["releases"],
        responses={200: s.ReleaseLabelSerializer(many=True)},
        examples=[answer("Every label", LABEL)],
        summary="Every label and its release",
    )
    def get(self, request: Request) -> Response:
        labels = ReleaseLabel.objects.select_related("release")
        return Response([s.ReleaseLabelSerializer.of(label) for label in labels])


class LabelView(RenderBeforeCommit):
    permission_classes = [ReadOrAdmin]

    @extend_schema(
        operation_id="release_labels_retrieve",
        tags=["releases"],
        responses={200: s.ReleaseLabelSerializer, **NOT_FOUND},
        parameters=[ETAG],
        examples=[answer("A label", LABEL)],
        summary="A label and its release",
    )
    def get(self, request: Request, label: str) -> Response:
        found = ReleaseLabel.objects.select_related("release").filter(name=label).first()
        if found is None:
            raise NotFound(
                f"No label '{label}'. To create it, PUT a release to it (If-Match: "
                f"{label_etag(label, None)} to create it only if it still does not exist)."
            )
        return with_etag(s.ReleaseLabelSerializer.of(found), label_etag(label, found.release.name))

    @extend_schema(
        operation_id="release_labels_set",
        tags=["releases"],
        request=s.LabelInputSerializer,
        responses={200: s.LabelMoveSerializer, **CONFIRM, **LABEL_PRECONDITION, **NOT_FOUND},
        parameters=[LABEL_IF_MATCH],
        examples=[
            OpenApiExample(
                "Roll production back",
                request_only=True,
                value={"release": "r-2026-11-21", "note": "Marta's lines broke the intro"},
            ),
            answer("Rolled back, a failing expectation confirmed", CONFIRMED_MOVE),
        ],
        summary="Point a label at a release (set, move, roll back)",
        description="Answers the move recorded, or the label's latest move when it already "
        "pointed there (nothing recorded). If-Match is optional: send the label's ETag from "
        'GET (or `"label-<label>-none"` to create it) to move it only from where you last '
        "saw it. Any label can be set: when a release answers to its name, the name means "
        "the label from then on, and the release answers to `<label>.r<id>` too (listed in "
        "its `aliases`).",
    )
    def put(self, request: Request, label: str) -> Response:
        data = validated(s.LabelInputSerializer, request.data)
        release = selectors.release_called(data["release"])
        if release is None:
            raise ValidationError({"release": [f"No release named '{data['release']}'."]})
        move = services.release_label_set(
            actor=actor_of(request),
            label=label,
            release=release,
            note=data["note"],
            confirm=data["confirm"],
            expected=expected_label(request, label),
        )
        if move is None:
            move = (
                ReleaseLabelMove.objects.filter(label=label)
                .select_related("from_release", "to_release", "by")
                .first()
            )
        return Response(s.LabelMoveSerializer.of(move) if move else None)

    @extend_schema(
        operation_id="release_labels_remove",
        tags=["releases"],
        request=s.LabelRemoveSerializer,
        responses={200: s.LabelMoveSerializer, **LABEL_PRECONDITION, **NOT_FOUND, 409: None},
        parameters=[LABEL_IF_MATCH],
        examples=[answer("Removed", REMOVAL)],
        summary="Remove a label (recorded)",
        description="If-Match is optional: send the label's ETag from GET to remove it only "
        "if it still points where you last saw it.",
    )
    def delete(self, request: Request, label: str) -> Response:
        data = validated(s.LabelRemoveSerializer, request.data or {})
        move = services.release_label_remove(
            actor=actor_of(request),
            label=label,
            note=data["note"],
            expected=expected_label(request, label),
        )
        return Response(s.LabelMoveSerializer.of(move))


class LabelHistoryView(APIView):
    permission_classes = [ReadOrWrite]

    @extend_schema(
        operation_id="release_labels_history",
        tags=["releases"],
        responses={200: s.LabelMoveSerializer(many=True)},
        examples=[answer("Newest move first", MOVE)],
        summary="Every move of a label, newest first: who, when, from, to, note",
    )
    def get(self, request: Request, label: str) -> Response:
        moves = ReleaseLabelMove.objects.filter(label=label).select_related(
            "from_release", "to_release", "by"
        )
        return Response([s.LabelMoveSerializer.of(move) for move in moves])


SCENARIO_INPUT = {
    "name": "bell scene, Marta at tier 2",
    "entry": "drowned-bell",
    "first_turn": True,
    "npcs": [{"npc": "marta-vell", "tier": 2}],
    "state": {"input": "I ring the bell."},
    "token_budget": 2000,
    "npc_budget": 600,
    "lore": {"budget": 300},
    "expectations": [{"kind": "fits"}, {"kind": "contains", "text": "bell"}],
}
SCENARIO_EXAMPLE = OpenApiExample("The bell scene fits", request_only=True, value=SCENARIO_INPUT)
SCENARIO_PATCH = OpenApiExample("A larger budget", request_only=True, value={"token_budget": 1500})
SCENARIO = {"id": 3, **SCENARIO_INPUT, "revision": 1}


class ScenarioListView(RenderBeforeCommit):
    permission_classes = [ReadOrWrite]

    @extend_schema(
        operation_id="scenarios_list",
        tags=["releases"],
        responses={200: s.ScenarioSerializer(many=True)},
        examples=[answer("The saved scenarios", SCENARIO)],
        summary="Saved scenarios, by name",
    )
    def get(self, request: Request) -> Response:
        return Response([s.ScenarioSerializer.of(x) for x in Scenario.objects.order_by("name")])

    @extend_schema(
        operation_id="scenarios_create",
        tags=["releases"],
        request=s.ScenarioInputSerializer,
        responses={201: s.ScenarioSerializer},
        examples=[SCENARIO_EXAMPLE, answer("Saved", SCENARIO, 201)],
        summary="Save a preview configuration as a scenario, with expectations",
    )
    def post(self, request: Request) -> Response:
        values = _scenario_input(request.data, partial=False)
        scenario = _scenario_change(services.scenario_create, actor=actor_of(request), **values)
        return Response(s.ScenarioSerializer.of(scenario), status=status.HTTP_201_CREATED)


def _scenario_input(
    data: Any, *, partial: bool, scenario: Scenario | None = None
) -> dict[str, Any]:
    """The fields sent, as an object holding the required ones; a change to ``scenario``
    is also checked for what its fields are (by the scenario services: the request fields
    by the one request parser, as /assemble reads them), before the If-Match precondition
    and what they refer to."""
    if not isinstance(data, dict):
        raise ValidationError(
            {
                api_settings.NON_FIELD_ERRORS_KEY: [
                    f"Invalid data. Expected a dictionary, but got {type(data).__name__}."
                ]
            }
        )
    required = () if partial else ("name", "entry")
    missing = {name: ["This field is required."] for name in required if name not in data}
    if missing:
        raise ValidationError(missing)
    if scenario is not None:
        _scenario_change(services.scenario_fields_check, data, scenario=scenario)
    return data


def _scenario_change(change: Any, *positional: Any, **arguments: Any) -> Any:
    """Call a scenario service; its errors name the scenario's own fields (``entry`` is
    the scenario's entry here, not a segment's owner as the shared mapping would say)."""
    try:
        return change(*positional, **arguments)
    except DjangoValidationError as exc:
        raise ValidationError(exc.message_dict) from None


def _scenario(pk: int) -> Scenario:
    scenario = Scenario.objects.filter(pk=pk).first()
    if scenario is None:
        raise NotFound(f"No scenario {pk}.")
    return scenario


class ScenarioDetailView(RenderBeforeCommit):
    permission_classes = [ReadOrWrite]

    @extend_schema(
        operation_id="scenarios_retrieve",
        tags=["releases"],
        responses={200: s.ScenarioSerializer, **NOT_FOUND},
        parameters=[ETAG],
        examples=[answer("A scenario", SCENARIO)],
        summary="A scenario",
    )
    def get(self, request: Request, pk: int) -> Response:
        scenario = _scenario(pk)
        return with_etag(s.ScenarioSerializer.of(scenario), etag(scenario))

    @extend_schema(
        operation_id="scenarios_update",
        tags=["releases"],
        request=s.ScenarioInputSerializer,
        responses={200: s.ScenarioSerializer, **NOT_FOUND, **PRECONDITION_ERRORS},
        parameters=[IF_MATCH],
        examples=[SCENARIO_EXAMPLE, answer("Replaced", {**SCENARIO, "revision": 2})],
        summary="Replace a scenario's fields",
    )
    def put(self, request: Request, pk: int) -> Response:
        # A malformed body is a 400 whatever the If-Match; then the precondition; then what
        # the names refer to (the services).
        scenario = _scenario(pk)
        values = _scenario_input(request.data, scenario=scenario, partial=request.method == "PATCH")
        scenario = _scenario_change(
            services.scenario_update,
            actor=actor_of(request),
            scenario=scenario,
            expected_revision=expected_revision(request, scenario),
            **values,
        )
        return with_etag(s.ScenarioSerializer.of(scenario), etag(scenario))

    @extend_schema(
        operation_id="scenarios_partial_update",
        tags=["releases"],
        request=s.ScenarioInputSerializer,
        responses={200: s.ScenarioSerializer, **NOT_FOUND, **PRECONDITION_ERRORS},
        parameters=[IF_MATCH],
        examples=[
            SCENARIO_PATCH,
            answer("Changed", {**SCENARIO, "token_budget": 1500, "revision": 2}),
        ],
        summary="Change some of a scenario's fields",
    )
    def patch(self, request: Request, pk: int) -> Response:
        return self.put(request, pk)

    @extend_schema(
        operation_id="scenarios_destroy",
        tags=["releases"],
        responses={204: None, **NOT_FOUND, **PRECONDITION_ERRORS, 409: None},
        parameters=[IF_MATCH],
        summary="Delete a scenario",
    )
    def delete(self, request: Request, pk: int) -> Response:
        scenario = _scenario(pk)
        services.scenario_delete(
            actor=actor_of(request),
            scenario=scenario,
            expected_revision=expected_revision(request, scenario),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
