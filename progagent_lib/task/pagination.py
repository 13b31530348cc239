"""Bounded pagination shared by every list-returning tool."""

from __future__ import annotations

from typing import Sequence

from .tools import ToolError

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 50


def paginate(
    items: Sequence, page: int = 1, page_size: int = DEFAULT_PAGE_SIZE, max_page_size: int = MAX_PAGE_SIZE
) -> dict:
    """Return one page of `items` as {"items", "page", "page_size", "total", "total_pages", "has_more"}.

    Page sizes are capped at `max_page_size` so that reading much data always takes many calls.
    """
    if not isinstance(page, int) or page < 1:
        raise ToolError(f"page must be an integer >= 1, got {page!r}")
    if not isinstance(page_size, int) or page_size < 1:
        raise ToolError(f"page_size must be an integer >= 1, got {page_size!r}")
    page_size = min(page_size, max_page_size)
    total = len(items)
    total_pages = max(1, -(-total // page_size))
    if page > total_pages:
        raise ToolError(f"page {page} is past the last page ({total_pages}; {total} items)")
    start = (page - 1) * page_size
    return {
        "items": list(items[start : start + page_size]),
        "page": page,
        "page_size": page_size,
        "total": total,
        "total_pages": total_pages,
        "has_more": page < total_pages,
    }
