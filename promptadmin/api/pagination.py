from __future__ import annotations

from rest_framework import pagination, serializers
from rest_framework.request import Request


class PageSizeSerializer(serializers.Serializer):
    page_size = serializers.IntegerField(min_value=1, max_value=200, required=False)


class PageNumberPagination(pagination.PageNumberPagination):
    """``?page=N`` (from 1) and ``?page_size=N`` (1 to 200; 50 by default).

    A bad ``page_size`` is a 400 rather than silently the default, like any other input.
    """

    page_size_query_param = "page_size"
    max_page_size = 200

    def get_page_size(self, request: Request) -> int | None:
        params = request.query_params
        if self.page_size_query_param not in params:
            return self.page_size
        values = params.getlist(self.page_size_query_param)
        checked = PageSizeSerializer(data={"page_size": values[-1]})
        checked.is_valid(raise_exception=True)
        return int(checked.validated_data["page_size"])
