"""The inference engine: vLLM as a managed server process, a token-level turn generator against it, and the
path by which a trainer's updated weights reach it on CPU."""
from .errors import EngineDied, EngineError, EngineNotInstalled, EngineRequestError, EngineStartError, PortInUse
from .server import EngineServer, engine_available, engine_python, free_port

__all__ = ["EngineServer", "engine_available", "engine_python", "free_port", "EngineError", "EngineNotInstalled",
           "PortInUse", "EngineStartError", "EngineDied", "EngineRequestError"]
