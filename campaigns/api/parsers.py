"""The API's JSON parser: DRF's, with nesting bounded (campaigns.jsonlimits), for every endpoint."""
from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from campaigns.jsonlimits import TOO_DEEP, JSONTooDeep, check_depth


class BoundedJSONParser(JSONParser):
    """A body nested deeper than MAX_JSON_DEPTH is a 400 saying so (code parse_error), not a 500."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return check_depth(super().parse(stream, media_type, parser_context))
        except (RecursionError, JSONTooDeep):
            raise ParseError(TOO_DEEP) from None
