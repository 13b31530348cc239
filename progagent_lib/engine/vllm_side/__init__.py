"""Code that runs inside the vLLM server process, not in the workbench: `EngineServer` puts this folder on the
engine's PYTHONPATH and has vLLM load `progagent_engine_auth.py` (`--middleware`); the project never imports it."""

from pathlib import Path

FOLDER = Path(__file__).resolve().parent
MIDDLEWARE = "progagent_engine_auth.RequireAPIKey"
