"""What every page shares: role checks, a generic catalogue list/create/edit/delete, error pages."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Model, ProtectedError, QuerySet, RestrictedError
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views import View

from campaigns import roles

PAGE_SIZE = 50


def require_editor(request: HttpRequest) -> None:
    if not roles.can_edit(request.user):
        raise PermissionDenied("This needs the operator role.")


def require_admin(request: HttpRequest) -> None:
    if not roles.can_admin(request.user):
        raise PermissionDenied("This needs the admin role.")


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
        return self.queryset() if self.queryset else self.model.objects.all()

    def rows(self, objects: Any) -> list[tuple[Model, list[tuple[Any, bool]]]]:
        return [(obj, [(col.value(obj), col.numeric) for col in self.columns]) for obj in objects]

    def url(self, action: str, pk: int | None = None) -> str:
        name = f"{self.key}-{action}"
        return reverse(name, args=[pk]) if pk is not None else reverse(name)


class CatalogueView(LoginRequiredMixin, View):
    catalogue: Catalogue = None  # type: ignore[assignment]  # set by as_view(catalogue=...)

    def context(self, **extra: Any) -> dict[str, Any]:
        return {"catalogue": self.catalogue, "can_edit": roles.can_edit(self.request.user),
                "can_admin": roles.can_admin(self.request.user), **extra}


class CatalogueList(CatalogueView):
    def get(self, request: HttpRequest) -> HttpResponse:
        cat = self.catalogue
        queryset = cat.get_queryset()
        filterset = None
        if cat.filterset_class is not None:
            filterset = cat.filterset_class(request.GET, queryset=queryset)
            queryset = filterset.qs if filterset.is_valid() else queryset.none()
        page = paginate(request, queryset)
        rows = cat.rows(page.object_list)
        return render(request, "campaigns/catalogue_list.html",
                      self.context(page=page, rows=rows, filterset=filterset))


class CatalogueEdit(CatalogueView):
    """Create (no pk) or edit (pk) one row; field errors in place, nothing typed lost."""

    def get_object(self, pk: int | None) -> Model | None:
        return get_object_or_404(self.catalogue.get_queryset(), pk=pk) if pk is not None else None

    def get(self, request: HttpRequest, pk: int | None = None) -> HttpResponse:
        require_editor(request)
        obj = self.get_object(pk)
        form = self.catalogue.form_class(instance=obj)
        return self.show(form, obj)

    def post(self, request: HttpRequest, pk: int | None = None) -> HttpResponse:
        require_editor(request)
        obj = self.get_object(pk)
        form = self.catalogue.form_class(request.POST, instance=obj)
        if form.is_valid():
            with transaction.atomic():
                saved = form.save()
            messages.success(request, f"{self.catalogue.singular.capitalize()} “{saved}” saved.")
            return HttpResponseRedirect(self.after_save_url(saved))
        return self.show(form, obj)

    def after_save_url(self, saved: Model) -> str:
        cat = self.catalogue
        return cat.url("detail", saved.pk) if cat.detail else cat.url("list")

    def show(self, form: ModelForm, obj: Model | None, status: int = 200) -> HttpResponse:
        return render(self.request, "campaigns/catalogue_form.html", self.context(form=form, object=obj),
                      status=status)


class CatalogueDelete(CatalogueView):
    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        require_admin(request)
        obj = get_object_or_404(self.catalogue.get_queryset(), pk=pk)
        return render(request, "campaigns/confirm_delete.html", self.context(object=obj))

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        require_admin(request)
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
