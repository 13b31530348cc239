"""One episode, token in / token out: the multi-turn loop that GSPO trains on and that evaluation scores.

The model's own tokens go into `completion_ids` with `env_mask` 1; the tokens the environment adds between
turns (tool responses, and the next assistant header) go in with `env_mask` 0, so the loss never trains the
model to predict observations. The episode ends at `claim_done` (the verifier's verdict is the reward), at a
turn with no tool call, or when the turn / token budget runs out (truncated).

    completion_ids = [turn 1 tokens][env block 1][turn 2 tokens][env block 2] ... [last turn tokens]
    env_mask       = [1 1 1 ... 1  ][0 0 ... 0  ][1 1 ... 1     ][0 0 ... 0  ] ... [1 ... 1        ]
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from ..harness.metrics import analyze_program
from ..harness.parsing import parse_tool_calls
from ..harness.session import Observation, Session
from ..harness.spec import PROGRAMMATIC_TOOL_CALL


@dataclass
class RolloutLimits:
    """Budgets of one training / evaluation episode."""

    max_turns: int = 8                 # assistant turns (each may hold several tool calls)
    max_new_tokens: int = 256          # per assistant turn
    max_completion_tokens: int = 2048  # all turns and observations together
    max_observation_chars: int = 4000  # an observation is cut to this before it is tokenised
    max_tool_calls: int = 100          # model tool calls per episode (the paper's budget)
    temperature: float = 1.0


@dataclass
class TurnOutput:
    token_ids: list[int]
    logprobs: list[float]


class TurnGenerator(Protocol):
    """Continues a token context by one assistant turn (stopping at the end-of-turn token)."""

    def __call__(self, context_ids: list[int], max_new_tokens: int) -> TurnOutput: ...


@dataclass
class EpisodeTokens:
    """One rollout as the trainer needs it, plus what the dynamics log records about it."""

    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)   # 1 = model token (trained), 0 = environment token
    logprobs: list[float] = field(default_factory=list)
    reward: float = 0.0                 # binary verifier reward R
    score: float = 0.0                  # dense R~
    end_reason: str = ""                # claim_done | no_tool_call | max_turns | max_tool_calls | max_tokens | turn_cut
    turns: int = 0
    tool_calls: int = 0                 # task-tool calls, direct or inside programs
    model_tool_calls: int = 0           # calls the model wrote (programs, terminal, direct tools, claim_done)
    programs: int = 0
    dtc_like_programs: int = 0
    runtime_errors: int = 0
    tool_output_tokens: int = 0         # observation tokens that entered the context
    seconds_generate: float = 0.0
    seconds_environment: float = 0.0

    @property
    def truncated(self) -> bool:
        return self.end_reason in ("max_turns", "max_tokens", "turn_cut", "max_tool_calls")


def initial_messages(session: Session, task_prompt: str) -> list[dict]:
    return [{"role": "system", "content": session.system_prompt()}, {"role": "user", "content": task_prompt}]


def observation_block(contents: list[str], feedback: list[str] = (), *, add_assistant_header: bool = True) -> str:
    """What the Qwen3 chat template renders after an assistant turn's <|im_end|>: user messages (parse-error
    feedback, as run_episode sends it), then the run of tool messages, then the next assistant header."""
    text = "\n" + "".join(f"<|im_start|>user\n{f}<|im_end|>\n" for f in feedback)
    if contents:
        text += "<|im_start|>user" + "".join(f"\n<tool_response>\n{c}\n</tool_response>" for c in contents) + "<|im_end|>\n"
    return text + ("<|im_start|>assistant\n" if add_assistant_header else "")


def parse_error_feedback(problem: str) -> str:
    # Same words as the harness's episode loop, so RL sees what SFT trajectories show.
    return (f"Error: your tool call could not be read: {problem} No tool was run; "
            "write the call again in the expected format.")


def run_token_episode(
    task: Any,
    scale: str,
    seed: int,
    harness: str,
    tokenizer: Any,
    generate_turn: TurnGenerator,
    limits: RolloutLimits | None = None,
    *,
    error_mode: str = "is_error",
    session_kwargs: dict | None = None,
) -> EpisodeTokens:
    """Play one episode of `task` at (scale, seed) under `harness`, generating with `generate_turn`."""
    limits = limits or RolloutLimits()
    env = task.instantiate(scale, seed)
    session = Session(env, harness, error_mode=error_mode, **(session_kwargs or {}))
    try:
        tools = session.tool_schemas()
        prompt_ids = list(tokenizer.apply_chat_template(
            initial_messages(session, task.prompt), tools=tools, add_generation_prompt=True, tokenize=True,
            return_dict=False))
        episode = EpisodeTokens(prompt_ids=prompt_ids)
        end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")
        final_response = ""
        while True:
            budget = limits.max_completion_tokens - len(episode.completion_ids)
            if episode.turns >= limits.max_turns:
                episode.end_reason = "max_turns"
                break
            if budget <= 0:
                episode.end_reason = "max_tokens"
                break
            started = time.perf_counter()
            turn = generate_turn(prompt_ids + episode.completion_ids, min(limits.max_new_tokens, budget))
            episode.seconds_generate += time.perf_counter() - started
            episode.turns += 1
            episode.completion_ids += turn.token_ids
            episode.env_mask += [1] * len(turn.token_ids)
            episode.logprobs += turn.logprobs
            if not turn.token_ids or turn.token_ids[-1] != end_of_turn:
                episode.end_reason = "turn_cut"   # the turn ran out of tokens before its end-of-turn token
                break

            started = time.perf_counter()
            parsed = parse_tool_calls(tokenizer.decode(turn.token_ids, skip_special_tokens=False).removesuffix("<|im_end|>"), tools)
            if not parsed.tool_calls and not parsed.errors:
                episode.end_reason, final_response = "no_tool_call", parsed.content
                episode.seconds_environment += time.perf_counter() - started
                break
            feedback = [parse_error_feedback(problem) for problem in parsed.errors]
            contents = []
            for call in parsed.tool_calls:
                if episode.model_tool_calls >= limits.max_tool_calls:
                    contents.append(f"Not run: the limit of {limits.max_tool_calls} tool calls was reached.")
                    continue
                observation = session.dispatch(call)
                _count(episode, call, observation)
                if observation.done:
                    break
                contents.append(cut(observation.content, limits.max_observation_chars))
            episode.seconds_environment += time.perf_counter() - started
            if session.done:
                episode.end_reason = "claim_done"
                break
            if episode.model_tool_calls >= limits.max_tool_calls:
                episode.end_reason = "max_tool_calls"
                break
            block = tokenizer(observation_block(contents, feedback), add_special_tokens=False)["input_ids"]
            episode.completion_ids += block
            episode.env_mask += [0] * len(block)
            episode.logprobs += [0.0] * len(block)
            episode.tool_output_tokens += len(block)
        # As in run_episode: without claim_done the verifier judges the state as left, with the last plain answer.
        started = time.perf_counter()
        verdict = session.result if session.done else env.verify(final_response)
        episode.seconds_environment += time.perf_counter() - started
        episode.reward, episode.score = float(verdict.reward), float(verdict.score)
        return episode
    finally:
        session.close()
        env.close()


def cut(text: str, limit: int) -> str:
    """An observation bounded to `limit` characters, with a visible marker so the model knows text is missing."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters cut]"


def _count(episode: EpisodeTokens, call: Any, observation: Observation) -> None:
    episode.model_tool_calls += 1
    episode.tool_calls += len(observation.task_tool_calls)
    episode.runtime_errors += int(observation.runtime_error)
    if call.name == PROGRAMMATIC_TOOL_CALL and observation.kind == "program":
        episode.programs += 1
        episode.dtc_like_programs += int(analyze_program(str(call.arguments.get("code", ""))).dtc_like)


# --- generators ------------------------------------------------------------------------------------------
class HFTurnGenerator:
    """Plain `model.generate` (the CPU path): samples one turn and returns the sampled tokens' log-probs."""

    def __init__(self, model: Any, tokenizer: Any, *, temperature: float = 1.0, do_sample: bool = True):
        self.model, self.tokenizer = model, tokenizer
        self.temperature, self.do_sample = temperature, do_sample
        self.end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")

    def __call__(self, context_ids: list[int], max_new_tokens: int) -> TurnOutput:
        import torch

        input_ids = torch.tensor([context_ids], device=self.model.device)
        was_training = self.model.training
        self.model.eval()
        with torch.no_grad():
            out = self.model.generate(
                input_ids, attention_mask=torch.ones_like(input_ids), max_new_tokens=max_new_tokens,
                eos_token_id=self.end_of_turn, pad_token_id=self.tokenizer.pad_token_id,
                **({"do_sample": True, "temperature": self.temperature, "top_p": 1.0, "top_k": 0} if self.do_sample
                   else {"do_sample": False}),
                return_dict_in_generate=True, output_logits=True,
            )
        if was_training:
            self.model.train()
        new_ids = out.sequences[0, input_ids.shape[1]:].tolist()
        logits = torch.stack(out.logits, dim=1)[0].float()
        if self.do_sample:
            logits = logits / self.temperature
        logprobs = torch.log_softmax(logits, dim=-1).gather(-1, torch.tensor(new_ids).unsqueeze(-1)).squeeze(-1)
        return TurnOutput(new_ids, logprobs.tolist())


class VLLMServerTurnGenerator:
    """vLLM server mode (the GPU path): TRL's VLLMClient, fed token ids, so the context is never re-tokenised."""

    def __init__(self, vllm_client: Any, *, temperature: float = 1.0):
        self.client, self.temperature = vllm_client, temperature

    def __call__(self, context_ids: list[int], max_new_tokens: int) -> TurnOutput:
        out = self.client.generate(prompts=[context_ids], n=1, temperature=self.temperature,
                                   max_tokens=max_new_tokens, logprobs=0)
        ids = out["completion_ids"][0]
        logprobs = [position[0] for position in out["logprobs"][0]]
        return TurnOutput(ids, logprobs)


def episode_summary(episodes: list[EpisodeTokens]) -> dict[str, float]:
    """Means over a batch of episodes: the quantities of the paper's training-dynamics figures."""
    n = max(len(episodes), 1)
    programs = sum(e.programs for e in episodes)
    return {
        "episodes": len(episodes),
        "mean_reward": sum(e.reward for e in episodes) / n,
        "mean_score": sum(e.score for e in episodes) / n,
        "tool_output_tokens_per_episode": sum(e.tool_output_tokens for e in episodes) / n,
        "tool_calls_per_episode": sum(e.tool_calls for e in episodes) / n,
        "model_tool_calls_per_episode": sum(e.model_tool_calls for e in episodes) / n,
        "runtime_errors_per_episode": sum(e.runtime_errors for e in episodes) / n,
        "dtc_like_program_share": (sum(e.dtc_like_programs for e in episodes) / programs) if programs else 0.0,
        "episode_length_tokens": sum(len(e.completion_ids) for e in episodes) / n,
        "turns_per_episode": sum(e.turns for e in episodes) / n,
        "truncation_rate": sum(e.truncated for e in episodes) / n,
        "claim_done_rate": sum(e.end_reason == "claim_done" for e in episodes) / n,
        "seconds_generate": sum(e.seconds_generate for e in episodes),
        "seconds_environment": sum(e.seconds_environment for e in episodes),
    }
