"""Products, instance specs, datasets and targets: list, create, edit, delete; a target's connection check."""
from __future__ import annotations

from django.contrib import messages
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from campaigns import roles, services
from campaigns.filtersets import DatasetFilterSet, InstanceSpecFilterSet, ProductFilterSet, TargetFilterSet
from campaigns.forms import DatasetForm, InstanceSpecForm, ProductForm, TargetForm
from campaigns.models import Dataset, InstanceSpec, Job, Product, Target
from campaigns.probes import ProbeError
from campaigns.views.base import Catalogue, Column, role_required


def _price(spec: InstanceSpec) -> str:
    return f"{spec.price_per_hour:.4f} {spec.currency}/h".replace(".0000", "") if spec.price_per_hour is not None else "—"


PRODUCTS = Catalogue(
    key="products", singular="product", plural="products", model=Product, form_class=ProductForm,
    filterset_class=ProductFilterSet,
    queryset=lambda: Product.objects.annotate(target_count=Count("targets")).order_by("name"),
    columns=[Column("Name", lambda p: p.name), Column("Engine", lambda p: p.get_engine_display()),
             Column("Version", lambda p: p.version), Column("Vendor", lambda p: p.vendor),
             Column("Targets", lambda p: p.target_count, numeric=True)],
    intro="A database product as a white paper names it. Targets are its reachable endpoints.",
)

SPECS = Catalogue(
    key="specs", singular="instance spec", plural="instance specs", model=InstanceSpec, form_class=InstanceSpecForm,
    filterset_class=InstanceSpecFilterSet,
    columns=[Column("Label", lambda s: s.label), Column("CPU cores", lambda s: s.cpu_cores, numeric=True),
             Column("Memory (GB)", lambda s: f"{s.memory_gb:g}", numeric=True),
             Column("Storage", lambda s: " ".join(filter(None, [f"{s.storage_gb:g} GB" if s.storage_gb else "",
                                                                  s.storage_type])) or "—"),
             Column("Price", _price, numeric=True)],
    intro="Hardware or cloud instance classes. A price per hour makes comparisons show QPS per unit of price.",
)

DATASETS = Catalogue(
    key="datasets", singular="dataset", plural="datasets", model=Dataset, form_class=DatasetForm,
    filterset_class=DatasetFilterSet,
    columns=[Column("Name", lambda d: d.name), Column("Tables", lambda d: d.tables, numeric=True),
             Column("Rows per table", lambda d: f"{d.table_size:,}", numeric=True),
             Column("Per-spec sizes", lambda d: len(d.sizes_by_spec) or "—", numeric=True),
             Column("Description", lambda d: d.description)],
    intro="How many sbtest tables of how many rows. A campaign's scale factor shrinks them for smoke runs.",
)

TARGETS = Catalogue(
    key="targets", singular="target", plural="targets", model=Target, form_class=TargetForm,
    filterset_class=TargetFilterSet, detail=True,
    queryset=lambda: Target.objects.select_related("product", "spec"),
    columns=[Column("Name", lambda t: t.name), Column("Product", lambda t: t.product.name),
             Column("Spec", lambda t: t.spec.label if t.spec else "—"),
             Column("Endpoint", lambda t: t.endpoint_label())],
    intro="Endpoints sysbench connects to. Passwords are stored encrypted and never shown again.",
)


def _target_page(request: HttpRequest, target: Target, **extra: object) -> HttpResponse:
    recent_jobs = (Job.objects.filter(target=target).select_related("scenario", "run__campaign", "result")
                   .order_by("-id")[:10])
    return render(request, "campaigns/target_detail.html", {
        "catalogue": TARGETS, "target": target, "recent_jobs": recent_jobs,
        "can_edit": roles.can_edit(request.user), "can_admin": roles.can_admin(request.user), **extra,
    })


@role_required(roles.VIEWER)
def target_detail(request: HttpRequest, pk: int) -> HttpResponse:
    target = get_object_or_404(Target.objects.select_related("product", "spec"), pk=pk)
    return _target_page(request, target)


@role_required(roles.OPERATOR)
@require_POST
def target_check(request: HttpRequest, pk: int) -> HttpResponse:
    """Connects to the target now: its version and key settings, or the precise reason it failed."""
    target = get_object_or_404(Target.objects.select_related("product", "spec"), pk=pk)
    try:
        check = services.target_check(target=target, user=request.user)
        error = ""
    except ProbeError as exc:
        check, error = None, str(exc)
    return _target_page(request, target, checked=True, check=check, check_error=error)


@role_required(roles.OPERATOR)
@require_POST
def target_settings_confirm(request: HttpRequest, pk: int) -> HttpResponse:
    """A person confirms the settings benchapp could not put back on the target's server were put back by hand;
    back to the page it came from (a job's, a run's)."""
    target = get_object_or_404(Target, pk=pk)
    count = services.settings_confirm(target=target, user=request.user)
    messages.success(request, f"{count} settings change(s) on {target.host}:{target.port} confirmed as put back: "
                              "the server takes jobs again" if count else "nothing was held on that server")
    back = request.POST.get("next", "")
    return redirect(back if url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}) else
                    reverse("targets-detail", args=[target.pk]))
