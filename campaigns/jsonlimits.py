"""JSON from outside (request bodies, form fields), parsed with a bound on its nesting.

Python's json parser recurses once per level: a 4 KB body of `[[[[…` exhausts the interpreter's
recursion limit and raises RecursionError, which no caller expects (a 500); a few hundred levels
parse, then break whatever walks the value recursively. Nothing benchapp accepts is nested more than
a few levels (a scenario's options, a dict of thread lists), so deeper JSON is refused with a
message saying why, before any field sees it.
"""
from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 32
TOO_DEEP = f"JSON nested more than {MAX_JSON_DEPTH} levels deep (arrays or objects inside each other)"


class JSONTooDeep(ValueError):
    def __init__(self) -> None:
        super().__init__(TOO_DEEP)


def check_depth(value: Any, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """`value` itself if no array or object in it lies more than max_depth levels deep, else JSONTooDeep.

    Walked with a stack of its own, not by recursion, so any value the parser returned can be checked."""
    pending = [(value, 1)] if isinstance(value, dict | list) else []
    while pending:
        node, depth = pending.pop()
        if depth > max_depth:
            raise JSONTooDeep
        children = node.values() if isinstance(node, dict) else node
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return value


def loads(text: str | bytes, **kwargs: Any) -> Any:
    """json.loads, refusing JSON nested deeper than MAX_JSON_DEPTH with JSONTooDeep (a ValueError, as a
    syntax error is)."""
    try:
        value = json.loads(text, **kwargs)
    except RecursionError:
        raise JSONTooDeep from None
    return check_depth(value)


LONE_SURROGATE = "a text holds a lone UTF-16 surrogate (such as \\ud800), which is not Unicode text"


class JSONNotText(ValueError):
    def __init__(self) -> None:
        super().__init__(LONE_SURROGATE)


def check_text(value: Any) -> Any:
    """`value` itself if every key and string in it is Unicode text, else JSONNotText: JSON's "\\ud800" escape
    decodes to a lone surrogate, which no database or page can store (a 500 otherwise)."""
    pending = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                raise JSONNotText from None
        elif isinstance(node, dict):
            pending.extend(node.keys())
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return value
