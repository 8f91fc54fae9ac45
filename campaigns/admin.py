from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.http import HttpRequest

from campaigns import models, roles

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
        target = super().save(commit=False)
        if self.cleaned_data.get("password"):
            target.set_password(self.cleaned_data["password"])
        if commit:
            target.save()
        return target


@admin.register(models.Target)
class TargetAdmin(admin.ModelAdmin):
    form = TargetAdminForm
    list_display = ("name", "product", "spec", "driver", "host", "port", "database", "user")
    list_filter = ("driver", "product")
    search_fields = ("name", "host")

    def save_model(self, request: HttpRequest, obj: models.Target, form: forms.ModelForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if obj.password_cleared:
            self.message_user(request, models.Target.PASSWORD_CLEARED_MESSAGE, messages.WARNING)


@admin.register(models.Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("name", "tables", "table_size")


@admin.register(models.Scenario)
class ScenarioAdmin(admin.ModelAdmin):
    list_display = ("name", "test", "dataset", "time_s", "percentile", "prepare_mode", "cleanup")
    list_filter = ("test",)


@admin.register(models.Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = ("name", "repetitions", "scale_factor", "is_template", "created_at")
    filter_horizontal = ("targets", "scenarios")
    # Templates are made by load_seed_templates only, as in the API and the campaign form.
    readonly_fields = ("is_template", "template_key")


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
