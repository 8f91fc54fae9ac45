"""What serializers of several resources share: the bound on a password's length and writes through a service."""
from __future__ import annotations

from typing import Any

MAX_PASSWORD_CHARS = 1024


class ServiceWriteMixin:
    """create() and update() through the row's service function (campaigns.services: one write path per kind of
    row, with the model's full validation); a refusal there is a Django ValidationError, answered 400 by field.
    The view passes the acting user as `created_by` (BaseViewSet.perform_create) or it is the request's."""

    def _acting(self, validated_data: dict[str, Any]) -> Any:
        request = getattr(self, "context", {}).get("request")
        return validated_data.pop("created_by", None) or getattr(request, "user", None)
