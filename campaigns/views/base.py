"""What every page shares: role checks, a generic catalogue list/create/edit/delete, error pages."""
from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ImproperlyConfigured, PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db import DatabaseError, transaction
from django.db.models import Model, ProtectedError, QuerySet, RestrictedError
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views import View

from campaigns import roles
from campaigns.forms import form_errors_add

PAGE_SIZE = 50
READ_METHODS = ("GET", "HEAD")

ViewFunc = TypeVar("ViewFunc", bound=Callable[..., HttpResponse])

log = logging.getLogger(__name__)
Item = TypeVar("Item")
Row = TypeVar("Row")


# ---------------------------------------------------------------- roles
#
# Every page declares the role it needs, as the API's viewsets do (campaigns.api.permissions): viewer
# pages read, operator pages create, edit, launch and cancel, admin pages delete. One gate answers for
# all of them, so a page cannot check less than its declaration says; tests/test_page_roles.py walks
# the URLconf and fails on a page that declares nothing.


def refusal_message(user: Any, needed: str) -> str:
    """What the 403 page says: the role that is missing and whom to ask for it."""
    current = roles.user_role(user)
    ask = roles.who_grants_roles(names=current is not None)
    if current is None:
        return (f"Your login has no role yet, so benchapp shows you nothing. Ask {ask} to give you one: "
                f"viewer to read results, operator to also create and launch campaigns.")
    return f"This needs the {needed} role; yours is {current}. Ask {ask} if you need it."


def page_gate(request: HttpRequest, role: str, *, own_account: bool = False) -> HttpResponse | None:
    """None when the request may reach a page that needs `role`; else the answer instead of the page.

    Anonymous users go to the login page, users below the role get the 403 page (before any lookup, so
    a refused user learns nothing of which rows exist), and a write to a viewer's page is a 405: what
    only reads needs no more than a viewer, and what writes needs at least an operator.
    """
    user = request.user
    if not user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    if not roles.has_role(user, role):
        raise PermissionDenied(refusal_message(user, role))
    if role == roles.VIEWER and request.method not in READ_METHODS and not own_account:
        return HttpResponseNotAllowed(READ_METHODS)
    return None


def role_required(role: str, *, own_account: bool = False) -> Callable[[ViewFunc], ViewFunc]:
    """Declares (`view.required_role`) and enforces the role a function view needs. own_account: a page whose
    writes touch only the user's own rows (their API tokens), which a viewer may make as they may change their
    own password; declared as `view.own_account`."""
    if role not in roles.ROLES:
        raise ValueError(f"unknown role {role!r}")

    def decorate(view: ViewFunc) -> ViewFunc:
        @functools.wraps(view)
        def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            return page_gate(request, role, own_account=own_account) or view(request, *args, **kwargs)

        guarded.required_role = role  # type: ignore[attr-defined]
        guarded.own_account = own_account  # type: ignore[attr-defined]
        return guarded  # type: ignore[return-value]

    return decorate


class RoleRequiredMixin(View):
    """The same gate for class-based views: `required_role` is their declaration."""

    required_role: str = ""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if self.required_role not in roles.ROLES:
            raise ImproperlyConfigured(f"{type(self).__name__} declares no required_role")
        return page_gate(request, self.required_role) or super().dispatch(request, *args, **kwargs)


def required_role(view: Callable[..., Any]) -> str | None:
    """The role a resolved URL's view declares (function or class-based), or None if it declares none."""
    declared = getattr(view, "required_role", None)
    if declared is None and hasattr(view, "view_class"):
        declared = getattr(view.view_class, "required_role", None) or None
    return declared


def paginate(request: HttpRequest, queryset: QuerySet | list, per_page: int = PAGE_SIZE) -> Any:
    return Paginator(queryset, per_page).get_page(request.GET.get("page"))


def protected_names(exc: ProtectedError | RestrictedError, limit: int = 5) -> str:
    objects = list(exc.protected_objects if isinstance(exc, ProtectedError) else exc.restricted_objects)
    names = ", ".join(str(o) for o in objects[:limit])
    more = f" and {len(objects) - limit} more" if len(objects) > limit else ""
    return f"{names}{more}"


@dataclass
class Column:
    """One column of a catalogue list: a header and how to read the cell from a row."""

    label: str
    value: Callable[[Any], Any]
    numeric: bool = False


@dataclass
class Catalogue:
    """A model the UI lists, creates, edits and deletes with the generic views below."""

    key: str  # URL prefix and name prefix: "targets" → /targets/, "target-list"
    singular: str
    plural: str
    model: type[Model]
    form_class: type[ModelForm]
    columns: list[Column]
    filterset_class: Any = None
    queryset: Callable[[], QuerySet] | None = None
    detail: bool = False  # rows link to a detail page of their own (else to the edit page)
    intro: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def get_queryset(self) -> QuerySet:
        return self.queryset() if self.queryset else self.model._default_manager.all()

    def rows(self, objects: Any) -> list[tuple[Model, list[tuple[Any, bool]]]]:
        return [(obj, [(col.value(obj), col.numeric) for col in self.columns]) for obj in objects]

    def url(self, action: str, pk: int | None = None) -> str:
        name = f"{self.key}-{action}"
        return reverse(name, args=[pk]) if pk is not None else reverse(name)


class CatalogueView(RoleRequiredMixin):
    catalogue: Catalogue = None  # type: ignore[assignment]  # set by as_view(catalogue=...)

    def context(self, **extra: Any) -> dict[str, Any]:
        return {"catalogue": self.catalogue, "can_edit": roles.can_edit(self.request.user),
                "can_admin": roles.can_admin(self.request.user), **extra}


class CatalogueList(CatalogueView):
    required_role = roles.VIEWER

    def get(self, request: HttpRequest) -> HttpResponse:
        cat = self.catalogue
        queryset = cat.get_queryset()
        filterset = None
        if cat.filterset_class is not None:
            filterset = cat.filterset_class(request.GET, queryset=queryset, request=request)
            queryset = filterset.qs if filterset.is_valid() else queryset.none()
        page = paginate(request, queryset)
        rows = cat.rows(page.object_list)
        return render(request, "campaigns/catalogue_list.html",
                      self.context(page=page, rows=rows, filterset=filterset))


class CatalogueEdit(CatalogueView):
    """Create (no pk) or edit (pk) one row; field errors in place, nothing typed lost."""

    required_role = roles.OPERATOR

    def get_object(self, pk: int | None) -> Model | None:
        return get_object_or_404(self.catalogue.get_queryset(), pk=pk) if pk is not None else None

    def get(self, request: HttpRequest, pk: int | None = None) -> HttpResponse:
        obj = self.get_object(pk)
        form = self.catalogue.form_class(instance=obj)
        return self.show(form, obj)

    def post(self, request: HttpRequest, pk: int | None = None) -> HttpResponse:
        obj = self.get_object(pk)
        form = self.catalogue.form_class(request.POST, instance=obj)
        if form.is_valid():
            try:  # through the row's service (a new row records who made it, for "mine")
                saved = form.save_by(user=request.user)  # type: ignore[attr-defined]  # RowForm, SharedRowForm
            except ValidationError as exc:
                form_errors_add(form, exc)
                return self.show(form, obj)
            messages.success(request, f"{self.catalogue.singular.capitalize()} “{saved}” saved.")
            for notice in getattr(form, "save_notices", list)():
                messages.warning(request, notice)
            return HttpResponseRedirect(self.after_save_url(saved))
        return self.show(form, obj)

    def after_save_url(self, saved: Model) -> str:
        cat = self.catalogue
        return cat.url("detail", saved.pk) if cat.detail else cat.url("list")

    def show(self, form: ModelForm, obj: Model | None, status: int = 200) -> HttpResponse:
        return render(self.request, "campaigns/catalogue_form.html", self.context(form=form, object=obj),
                      status=status)


class CatalogueDelete(CatalogueView):
    required_role = roles.ADMIN

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        obj = get_object_or_404(self.catalogue.get_queryset(), pk=pk)
        return render(request, "campaigns/confirm_delete.html", self.context(object=obj))

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        obj = get_object_or_404(self.catalogue.get_queryset(), pk=pk)
        try:
            with transaction.atomic():
                obj.delete()
        except (ProtectedError, RestrictedError) as exc:
            error = f"“{obj}” cannot be deleted: {protected_names(exc)} still use it."
            return render(request, "campaigns/confirm_delete.html", self.context(object=obj, error=error),
                          status=409)
        messages.success(request, f"{self.catalogue.singular.capitalize()} “{obj}” deleted.")
        return HttpResponseRedirect(self.catalogue.url("list"))


def error_page(request: HttpRequest, *, title: str, message: str, status: int) -> HttpResponse:
    return render(request, "campaigns/error.html", {"title": title, "message": message}, status=status)


def rows_that_render(items: Iterable[Item], build: Callable[[Item], Row], *, page: str) -> list[Row]:
    """build(item) for each item, leaving out (and logging) any item whose row cannot be built.

    A list page shows rows made by other paths (the API, an import, an older version): one row holding data
    the page does not expect — a template key no URL accepts — must not turn the whole page into a 500.
    A row's URLs are reversed here, in build, rather than in the template, so that they fail here.
    Database errors are not caught: they leave the transaction unusable for the rows after.
    """
    rows = []
    for item in items:
        try:
            rows.append(build(item))
        except DatabaseError:
            raise
        except Exception:
            log.exception("%s: left out %r, whose row could not be built", page, item)
    return rows
