"""verifiers finds a taskset by id: `vf-eval progagent` imports this module and takes the Taskset, the default Harness and
the Env that its `__all__` exports. The adapter itself is `progagent_lib.integrations.verifiers_env`."""
from progagent_lib.integrations.verifiers_env import ProgAgentEnv, ProgAgentHarness, ProgAgentTaskset

__all__ = ["ProgAgentTaskset", "ProgAgentHarness", "ProgAgentEnv"]
