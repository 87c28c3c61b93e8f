"""Who may do what in the studio: the roles the API uses, checked on every request.

Viewers read and preview, authors also change content, admins do everything. Pages are
readable by ``read`` and changeable (any method but GET/HEAD/OPTIONS) by ``write``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from promptadmin.content.kinds import KINDS
from promptadmin.core.pagination import Page, paginate
from promptadmin.core.roles import Role, role_of
from promptadmin.releases.models import PRODUCTION
from promptadmin.releases.serving import labels

View = Callable[..., HttpResponse]
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class HtmxHttpRequest(HttpRequest):
    """Every studio request: django-htmx's middleware says in ``htmx`` whether htmx sent
    it (``bool(request.htmx)``), and what for (its target, a boosted link, a history
    restore)."""

    htmx: HtmxDetails


def studio_view(*, read: Role = Role.VIEWER, write: Role = Role.AUTHOR) -> Callable[[View], View]:
    """Send anonymous people to sign in; refuse (403) a signed-in user without the role."""

    def decorator(view: View) -> View:
        @wraps(view)
        def wrapper(request: HtmxHttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            role = role_of(request.user)
            if role is None:
                return _to_login(request)
            needed = read if request.method in SAFE_METHODS else write
            if role < needed:
                # A refusal changes nothing, whatever page was asked for.
                refused = {"needed": needed, "live_release": None}
                return render_page(request, "studio/403.html", refused, status=403)
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def _to_login(request: HtmxHttpRequest) -> HttpResponse:
    if request.htmx:
        # A fragment request would swap the sign-in page into a corner of the page:
        # send the whole window there, coming back to the page the person was on.
        back = request.htmx.current_url_abs_path or "/"
        return HttpResponseClientRedirect(redirect_to_login(back).url)
    return redirect_to_login(request.get_full_path())


# The pages that change game content (by URL name): once a production release exists,
# they say that changes are not live until published. Pages that only read do not.
CONTENT_PAGES = frozenset(
    {
        "segment_create",
        "segment_edit",
        "lore_create",
        "lore_edit",
        *(f"{kind}_{page}" for kind in KINDS for page in ("create", "edit")),
        "deprecated_review",
        "legacy_import",
    }
)


def studio_context(request: HttpRequest) -> dict[str, Any]:
    """What the layout needs on every page: the user's role and what it allows, and, on a
    page that changes content, the release game servers read (``live_release``: the page
    says its changes are not live until published)."""
    role = role_of(request.user)
    can_edit = role is not None and role >= Role.AUTHOR
    match = request.resolver_match
    changes_content = match is not None and match.url_name in CONTENT_PAGES
    return {
        "role": role,
        "can_edit": can_edit,
        "is_admin": role is not None and role >= Role.ADMIN,
        # Through the shared cache: no query on a warm page.
        "live_release": labels().get(PRODUCTION) if can_edit and changes_content else None,
    }


def render_page(
    request: HttpRequest,
    template: str,
    context: Mapping[str, Any] | None = None,
    *,
    status: int = 200,
) -> HttpResponse:
    """``render`` with the layout's context added."""
    return render(request, template, {**studio_context(request), **(context or {})}, status=status)


def fragment_or_page(request: HtmxHttpRequest, template: str, partial: str) -> str:
    """The partial for an htmx request, the whole page otherwise.

    A history-restore request (the person went back and htmx had no snapshot) wants the
    whole page, as does a boosted link.
    """
    htmx = request.htmx
    if htmx and not htmx.history_restore_request and not htmx.boosted:
        return f"{template}#{partial}"
    return template


def page_of(
    request: HttpRequest,
    rows: Any,
    *,
    param: str = "page",
    capped_order: tuple[str, ...] | None = None,
) -> Page[Any]:
    """The page of ``rows`` the request asks for (``?page=``, or ``param`` where a page
    lists two things), with links keeping the request's other parameters (see
    :func:`~promptadmin.core.pagination.paginate` for ``capped_order``)."""
    return paginate(
        rows, request.GET.get(param), query=request.GET, param=param, capped_order=capped_order
    )
