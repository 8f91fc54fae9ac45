from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from campaigns.views import ops
from campaigns.views.accounts import LoginView, reset_view

# django.contrib.auth.urls, with the password-reset pages only where a real e-mail backend sends the link
# (campaigns/views/accounts.py).
accounts = [
    path("login/", LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("password_change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("password_reset/", reset_view(auth_views.PasswordResetView.as_view()), name="password_reset"),
    path("password_reset/done/", reset_view(auth_views.PasswordResetDoneView.as_view()), name="password_reset_done"),
    path("reset/<uidb64>/<token>/", reset_view(auth_views.PasswordResetConfirmView.as_view()),
         name="password_reset_confirm"),
    path("reset/done/", reset_view(auth_views.PasswordResetCompleteView.as_view()), name="password_reset_complete"),
]

# A page that meets benchapp's database away answers 503 with Retry-After, not 500 (benchapp/middleware.py).
handler500 = "benchapp.middleware.server_error"

urlpatterns = [
    # For load balancers, orchestrators and Prometheus: no login (campaigns/views/ops.py).
    path("healthz", ops.healthz, name="healthz"),
    path("readyz", ops.readyz, name="readyz"),
    path("metrics", ops.metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("accounts/", include(accounts)),
    path("", include("campaigns.api.urls")),
    path("", include("campaigns.urls")),
]
