"""The errors more than one layer raises or catches, on the ground floor so that no import runs upward for them.

`PolicyError`: a policy or generator could not produce a turn (the episode ends errored, recorded); its kind
`ContextFull`: the context no longer fits the model (a budget, not a failure: the episode ends as max_context_tokens).
`ConfigError`: a config field with a value it cannot run with (`progagent_lib.config`).
`EngineError` and its kinds: what can go wrong with the inference engine, each with the fix in its message.
`ModelSourceError`: a model source the workbench cannot use (raised by `generation`, caught by `train`).
"""

from __future__ import annotations


class PolicyError(RuntimeError):
    """A policy could not produce a turn (e.g. a remote API kept failing); the episode ends, recorded."""


class ContextFull(PolicyError):
    """The next turn's context no longer fits the model's positions: the model ran out of context, as a budget runs
    out (the episode ends as `max_context_tokens`, truncated, not errored). A policy that never checks raises
    nothing, and its server's refusal is a plain PolicyError."""


class ConfigError(ValueError):
    """A config names a field the run does not have, or gives a field a value it cannot run with."""


class ModelSourceError(ValueError):
    """A model source the workbench cannot use: unknown name, unreadable GGUF file, no usable chat template."""


class EngineError(RuntimeError):
    """The engine could not be started or kept running."""


class EngineConfigError(EngineError):
    """The engine was asked for a setting it refuses (a host other than loopback, a flag it sets itself)."""


class EngineNotInstalled(EngineError):
    """The engine's own environment (.venv-engine) is missing."""


class PortInUse(EngineError):
    """Something already listens on the port the engine was asked to use."""


class EngineStartError(EngineError):
    """The server exited (or never answered) while starting, e.g. a model it cannot load."""


class EngineDied(EngineError):
    """The server was up and then exited."""


class EngineRequestError(EngineError, PolicyError):
    """A request to a running server failed: an infrastructure error, not a wrong answer.

    A PolicyError too, so an episode that meets it ends as "policy_error" (errored, retried on resume).
    """
