"""The API's JSON parser: DRF's, with nesting bounded (campaigns.jsonlimits), for every endpoint."""
from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from campaigns.jsonlimits import LONE_SURROGATE, TOO_DEEP, JSONNotText, JSONTooDeep, check_depth, check_text


class BoundedJSONParser(JSONParser):
    """A body nested deeper than MAX_JSON_DEPTH, or holding a lone surrogate ("\\ud800") in any key or string, is
    a 400 saying so (code parse_error), not a 500."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return check_text(check_depth(super().parse(stream, media_type, parser_context)))
        except (RecursionError, JSONTooDeep):
            raise ParseError(TOO_DEEP) from None
        except JSONNotText:
            raise ParseError(LONE_SURROGATE) from None
