from __future__ import annotations

from typing import Any

from rest_framework import pagination, serializers
from rest_framework.request import Request

from promptadmin.api import fields as f

MAX_PAGE_SIZE = 200


class PageSizeSerializer(serializers.Serializer):
    page_size = serializers.IntegerField(min_value=1, max_value=MAX_PAGE_SIZE, required=False)


class PageSerializer(serializers.Serializer):
    page = serializers.IntegerField(min_value=1)


class PageNumberPagination(pagination.PageNumberPagination):
    """``?page=N`` (from 1) and ``?page_size=N`` (1 to 200; 50 by default).

    A bad ``page_size`` or ``page`` (empty, not a number, below 1) is a 400 rather than
    silently the default, like any other input; a page past the last is a 404.
    """

    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request: Request) -> int | None:
        params = request.query_params
        if self.page_size_query_param not in params:
            return self.page_size
        values = params.getlist(self.page_size_query_param)
        checked = PageSizeSerializer(data={"page_size": values[-1]})
        checked.is_valid(raise_exception=True)
        return int(checked.validated_data["page_size"])

    def get_page_number(self, request: Request, paginator: Any) -> int | str:
        values = request.query_params.getlist(self.page_query_param)
        if not values:
            return 1
        checked = PageSerializer(data={"page": values[-1]})
        checked.is_valid(raise_exception=True)
        return int(checked.validated_data["page"])

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        """The parameters as DRF describes them, with the bounds this class enforces."""
        parameters: list[dict[str, Any]] = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"]["minimum"] = 1
            elif parameter["name"] == self.page_size_query_param:
                parameter["schema"].update({"minimum": 1, "maximum": MAX_PAGE_SIZE})
                parameter["description"] = f"Results per page: 1 to {MAX_PAGE_SIZE} (default 50)."
        return parameters


def page_of(name: str, item: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """The documented shape of a page of ``item``, as :class:`PageNumberPagination`
    answers it, for a view that pages by hand; ``name`` is the serializer's (its schema
    component's) name."""
    fields = {
        "count": f.Integer(),
        "next": serializers.URLField(allow_null=True),
        "previous": serializers.URLField(allow_null=True),
        "results": item(many=True),
    }
    return type(name, (serializers.Serializer,), fields)
