from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.http import HttpRequest

from campaigns import models, monitoring, roles, services

# ---------------------------------------------------------------- logins
#
# Django's user admin lets any staff user with the change_user permission set a superuser's password
# (then log in as them) or tick "superuser" on their own login. Here only superusers edit superusers,
# and only superusers hand out the staff, superuser and permission bits or change what a group permits.

admin.site.unregister(get_user_model())
admin.site.unregister(Group)


@admin.register(get_user_model())
class LoginAdmin(UserAdmin):
    PRIVILEGES = ("is_staff", "is_superuser", "user_permissions")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        fields = tuple(super().get_readonly_fields(request, obj))
        return fields if request.user.is_superuser else (*fields, *self.PRIVILEGES)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Also guards the password page (UserAdmin.user_change_password asks this for the user).
        return super().has_change_permission(request, obj) and (obj is None or roles.can_manage_user(request.user, obj))

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Also guards the "delete selected" action, which asks this for every selected login.
        return super().has_delete_permission(request, obj) and (obj is None or roles.can_manage_user(request.user, obj))


@admin.register(Group)
class RoleGroupAdmin(GroupAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser


@admin.register(models.Product)
class ProductAdmin(admin.ModelAdmin):
    list_display = ("name", "engine", "version", "vendor")
    list_filter = ("engine",)
    search_fields = ("name", "vendor")


@admin.register(models.InstanceSpec)
class InstanceSpecAdmin(admin.ModelAdmin):
    list_display = ("label", "cpu_cores", "memory_gb", "storage_gb", "storage_type", "price_per_hour")
    search_fields = ("label",)


class ServiceAdmin(admin.ModelAdmin):
    """The admin of a row users make: it saves through the row's service (campaigns.services: one write path per
    kind of row, with the model's full validation and the same rules as the pages and the API)."""

    def service_save(self, request: HttpRequest, obj: Any, fields: dict[str, Any], m2m: dict[str, Any]) -> None:
        raise NotImplementedError

    def save_model(self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool) -> None:
        m2m_names = {f.name for f in obj._meta.many_to_many}
        concrete = {f.name for f in obj._meta.concrete_fields}
        fields = {k: v for k, v in form.cleaned_data.items() if k in concrete}
        m2m = {k: v for k, v in form.cleaned_data.items() if k in m2m_names}
        self.service_save(request, obj, fields, m2m)

    def save_related(self, request: HttpRequest, form: forms.ModelForm, formsets: Any, change: bool) -> None:
        for formset in formsets:  # many-to-many fields were set by the service
            self.save_formset(request, form, formset, change=change)


class TargetAdminForm(forms.ModelForm):
    # Write-only: the stored password is never rendered back into the form.
    password = forms.CharField(
        required=False, widget=forms.PasswordInput(render_value=False),
        help_text="Leave empty to keep the stored password (it is removed if the driver, host, port, user or "
                  "database changes).",
    )

    class Meta:
        model = models.Target
        fields = ("name", "product", "spec", "driver", "host", "port", "database", "user", "is_demo")

    def save(self, commit: bool = True) -> models.Target:
        # The admin calls save(commit=False) for the instance, then TargetAdmin.save_model writes it (a service).
        if commit:
            raise NotImplementedError("targets are saved through campaigns.services.target_update")
        return self.instance


# The *_update services take the admin's new, unsaved instance too (the admin goes on with that very object).


@admin.register(models.Target)
class TargetAdmin(ServiceAdmin):
    form = TargetAdminForm
    list_display = ("name", "product", "spec", "driver", "host", "port", "database", "user")
    list_filter = ("driver", "product")
    search_fields = ("name", "host")

    def service_save(self, request: HttpRequest, obj: Any, fields: dict[str, Any], m2m: dict[str, Any]) -> None:
        password = fields.pop("password", None) or None  # empty keeps the stored one
        services.target_update(target=obj, by=request.user, password=password, **fields)
        if obj.password_cleared:
            self.message_user(request, models.Target.PASSWORD_CLEARED_MESSAGE, messages.WARNING)

    def save_model(self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool) -> None:
        fields = {k: v for k, v in form.cleaned_data.items() if k in {f.name for f in obj._meta.concrete_fields}}
        fields["password"] = form.cleaned_data.get("password")
        self.service_save(request, obj, fields, {})


@admin.register(models.Dataset)
class DatasetAdmin(ServiceAdmin):
    list_display = ("name", "tables", "table_size")

    def service_save(self, request: HttpRequest, obj: Any, fields: dict[str, Any], m2m: dict[str, Any]) -> None:
        services.dataset_update(dataset=obj, user=request.user, **fields)


@admin.register(models.Scenario)
class ScenarioAdmin(ServiceAdmin):
    list_display = ("name", "test", "dataset", "time_s", "percentile", "prepare_mode", "cleanup")
    list_filter = ("test",)

    def service_save(self, request: HttpRequest, obj: Any, fields: dict[str, Any], m2m: dict[str, Any]) -> None:
        services.scenario_update(scenario=obj, user=request.user, **fields)


@admin.register(models.Campaign)
class CampaignAdmin(ServiceAdmin):
    list_display = ("name", "repetitions", "scale_factor", "is_template", "created_at")
    filter_horizontal = ("targets", "scenarios")
    # Templates are made by load_seed_templates only, as in the API and the campaign form.
    readonly_fields = ("is_template", "template_key")

    def service_save(self, request: HttpRequest, obj: Any, fields: dict[str, Any], m2m: dict[str, Any]) -> None:
        services.campaign_update(campaign=obj, user=request.user, **m2m, **fields)


class JobInline(admin.TabularInline):
    model = models.Job
    fields = ("position", "target", "scenario", "threads", "repetition", "status", "error")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(models.Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "campaign", "status", "trigger", "created_at", "finished_at")
    list_filter = ("status", "trigger")
    inlines = [JobInline]


class JobClientInline(admin.StackedInline):
    model = models.JobClient
    extra = 0
    can_delete = False
    readonly_fields = ("index", "host_name", "threads", "status", "command_line", "exit_code",
                       "sysbench_version", "error", "wall_time_s", "raw_output")
    exclude = ("summary", "histogram", "prepare_output")


@admin.register(models.Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "run", "target", "scenario", "threads", "repetition", "status", "started_at")
    list_filter = ("status",)
    readonly_fields = ("command_line", "error", "server_snapshot", "start_skew_ms", "wall_time_s")
    inlines = [JobClientInline]

    def has_add_permission(self, request: Any) -> bool:
        return False


@admin.register(models.JobResult)
class JobResultAdmin(admin.ModelAdmin):
    list_display = ("job", "source", "tps", "qps", "latency_avg_ms", "latency_pct", "latency_pct_ms")


@admin.register(models.IntervalSample)
class IntervalSampleAdmin(admin.ModelAdmin):
    list_display = ("job", "client_index", "t", "threads", "tps", "qps", "latency_pct_ms")
    list_select_related = ("job",)


@admin.register(models.PreparedDataset)
class PreparedDatasetAdmin(admin.ModelAdmin):
    list_display = ("target", "signature", "status", "prepared_at", "prepare_s")


@admin.register(models.ClientHost)
class ClientHostAdmin(admin.ModelAdmin):
    list_display = ("hostname", "cores", "memory_gb", "sysbench_version", "last_heartbeat")


@admin.register(models.CampaignSchedule)
class CampaignScheduleAdmin(admin.ModelAdmin):
    list_display = ("campaign", "label", "cron", "timezone", "enabled", "last_fired_at")
    readonly_fields = ("periodic_task", "last_fired_at")

    def save_model(self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool) -> None:
        # Its Celery beat entry kept in step, as from the pages and the API; the admin may change any schedule.
        monitoring.schedule_save(schedule=obj, user=request.user)


@admin.register(models.ScheduleFiring)
class ScheduleFiringAdmin(admin.ModelAdmin):
    list_display = ("schedule", "fired_at", "outcome", "run", "reason")


@admin.register(models.Regression)
class RegressionAdmin(admin.ModelAdmin):
    list_display = ("campaign", "run", "target", "scenario", "threads", "metric", "kind", "change_pct", "created_at")
    list_filter = ("kind", "metric")


@admin.register(models.PublishedResult)
class PublishedResultAdmin(admin.ModelAdmin):
    list_display = ("document", "table_ref", "product", "spec", "scenario_label", "threads", "qps", "correction")
    list_filter = ("document", "product")
    search_fields = ("table_ref", "scenario_label", "correction")


# DRF's own token admin would show clear tokens; benchapp stores hashes (ApiToken) and never shows a token again.
from rest_framework.authtoken.models import TokenProxy  # noqa: E402

if admin.site.is_registered(TokenProxy):
    admin.site.unregister(TokenProxy)


@admin.register(models.ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens by their first characters: who has them, until when, and revoking them."""

    list_display = ["prefix", "user", "created", "expires_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["prefix", "user__username"]
    fields = ["prefix", "user", "created", "expires_at", "revoked_at"]
    readonly_fields = ["prefix", "user", "created"]
    actions = ["revoke"]

    def has_add_permission(self, request: Any) -> bool:
        return False  # tokens are issued through /api/v1/auth/token/, which shows the token once

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: Any, queryset: Any) -> None:
        from django.utils import timezone

        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"{count} token(s) revoked.")
