from __future__ import annotations

from django.urls import path

from campaigns import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
]
