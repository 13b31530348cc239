"""Small helpers that oracles (and agents' programs) use to read paginated tools.

Oracles import from here instead of each repeating a page loop. The PTC teacher inlines this file's
source into the programs it writes, so the helpers also run inside the sandboxed kernel, which cannot
import the project. Keep this module self-contained: standard library only.
"""

import fnmatch


def read_all(list_tool, **kwargs):
    """Call a paginated tool page by page and return every item."""
    items, page = [], 1
    while True:
        result = list_tool(page=page, **kwargs)
        items.extend(result["items"])
        if not result.get("has_more"):
            return items
        page += 1


def read_files(tools, pattern="*"):
    """Read every workspace file whose path matches `pattern`: {path: text}."""
    paths = [f["path"] for f in read_all(tools.list_files) if fnmatch.fnmatch(f["path"], pattern)]
    return {path: tools.read_file(path=path) for path in paths}
