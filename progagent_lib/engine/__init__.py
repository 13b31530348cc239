"""The inference engine: vLLM as a managed server process, a token-level turn generator against it, and the
path by which a trainer's updated weights reach it on CPU."""

from ..generation.access import auth_headers, engine_api_key
from ..errors import (
    EngineConfigError,
    EngineDied,
    EngineError,
    EngineNotInstalled,
    EngineRequestError,
    EngineStartError,
    PortInUse,
)
from .server import EngineServer, engine_available, engine_python, free_port

__all__ = [
    "EngineServer",
    "engine_available",
    "engine_python",
    "free_port",
    "engine_api_key",
    "auth_headers",
    "EngineError",
    "EngineConfigError",
    "EngineNotInstalled",
    "PortInUse",
    "EngineStartError",
    "EngineDied",
    "EngineRequestError",
]
