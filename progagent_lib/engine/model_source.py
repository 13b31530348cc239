"""Which folder the engine serves for a model name. The model-source layer (`train.models`) decides: a
registered short name such as `smollm2` is converted once into a folder in the cache, with a chat template
that renders tools; folders and hub ids are passed as given."""
from __future__ import annotations

import os


def resolve_model_source(name: str | os.PathLike) -> str:
    from ..train.models import resolve_model_source as resolve

    return str(resolve(str(name)))
