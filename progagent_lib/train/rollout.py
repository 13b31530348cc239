"""One episode, token in / token out: the multi-turn loop that GSPO trains on and that evaluation scores.

The model's own tokens go into `completion_ids` with `env_mask` 1; the tokens the environment adds between
turns (tool responses, and the next assistant header) go in with `env_mask` 0, so the loss never trains the
model to predict observations. The episode ends at `claim_done` (the verifier's verdict is the reward), at a
turn with no tool call, or when the turn / token budget runs out (truncated).

    completion_ids = [turn 1 tokens][env block 1][turn 2 tokens][env block 2] ... [last turn tokens]
    env_mask       = [1 1 1 ... 1  ][0 0 ... 0  ][1 1 ... 1     ][0 0 ... 0  ] ... [1 ... 1        ]
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..harness.episode import parse_error_feedback, tool_budget_message
from ..harness.metrics import analyze_program
from ..harness.parsing import format_tool_call_json, parse_tool_calls
from ..harness.session import Observation, Session, ToolCall
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
    """Continues each token context by one assistant turn (stopping at the end-of-turn token)."""

    def __call__(self, contexts: list[list[int]], max_new_tokens: int) -> list[TurnOutput]: ...


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


@dataclass
class EpisodeSpec:
    """Which episode to play: a task at one scale and seed."""

    task: Any
    scale: str
    seed: int


class TokenEpisode:
    """One episode advanced one assistant turn at a time, so a batch of them can share each generate call."""

    def __init__(self, spec: EpisodeSpec, harness: str, tokenizer: Any, limits: RolloutLimits, *,
                 error_mode: str = "is_error", session_kwargs: dict | None = None):
        self.tokenizer, self.limits = tokenizer, limits
        self.end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")
        self.env = spec.task.instantiate(spec.scale, spec.seed)
        self.session = Session(self.env, harness, error_mode=error_mode, **(session_kwargs or {}))
        self.tools = self.session.tool_schemas()
        prompt_ids = list(tokenizer.apply_chat_template(
            initial_messages(self.session, spec.task.prompt), tools=self.tools, add_generation_prompt=True,
            tokenize=True, return_dict=False))
        self.tokens = EpisodeTokens(prompt_ids=prompt_ids)
        self.final_response = ""
        self.finished = False
        self._check_budget()

    def context_ids(self) -> list[int]:
        return self.tokens.prompt_ids + self.tokens.completion_ids

    def turn_budget(self) -> int:
        return min(self.limits.max_new_tokens, self.limits.max_completion_tokens - len(self.tokens.completion_ids))

    def _check_budget(self) -> None:
        if self.tokens.turns >= self.limits.max_turns:
            self._end("max_turns")
        elif self.turn_budget() <= 0:
            self._end("max_tokens")

    def _end(self, reason: str) -> None:
        self.tokens.end_reason, self.finished = reason, True

    def add_turn(self, turn: TurnOutput) -> None:
        """Record the model's turn; run its tool calls; append the observations (env_mask 0) or end."""
        episode = self.tokens
        episode.turns += 1
        episode.completion_ids += turn.token_ids
        episode.env_mask += [1] * len(turn.token_ids)
        episode.logprobs += turn.logprobs
        if not turn.token_ids or turn.token_ids[-1] != self.end_of_turn:
            return self._end("turn_cut")  # the turn ran out of tokens before its end-of-turn token

        started = time.perf_counter()
        try:
            text = self.tokenizer.decode(turn.token_ids, skip_special_tokens=False).removesuffix("<|im_end|>")
            parsed = parse_tool_calls(text, self.tools)
            if not parsed.tool_calls and not parsed.errors:
                self.final_response = parsed.content
                return self._end("no_tool_call")
            feedback = [parse_error_feedback(problem) for problem in parsed.errors]
            contents = []
            for call in parsed.tool_calls:
                if episode.model_tool_calls >= self.limits.max_tool_calls:
                    contents.append(tool_budget_message(self.limits.max_tool_calls))
                    continue
                observation = self.session.dispatch(call)
                _count(episode, call, observation)
                if observation.done:
                    break
                contents.append(cut(observation.content, self.limits.max_observation_chars))
            if self.session.done:
                return self._end("claim_done")
            if episode.model_tool_calls >= self.limits.max_tool_calls:
                return self._end("max_tool_calls")
            block = self.tokenizer(observation_block(contents, feedback), add_special_tokens=False)["input_ids"]
            episode.completion_ids += block
            episode.env_mask += [0] * len(block)
            episode.logprobs += [0.0] * len(block)
            episode.tool_output_tokens += len(block)
            self._check_budget()
        finally:
            episode.seconds_environment += time.perf_counter() - started

    def close(self) -> EpisodeTokens:
        """Score and release the environment. As in run_episode: without claim_done the verifier judges the
        state as left, with the last plain answer."""
        started = time.perf_counter()
        try:
            verdict = self.session.result if self.session.done else self.env.verify(self.final_response)
            self.tokens.reward, self.tokens.score = float(verdict.reward), float(verdict.score)
        finally:
            self.session.close()
            self.env.close()
            self.tokens.seconds_environment += time.perf_counter() - started
        return self.tokens


def run_token_episodes(
    specs: list[EpisodeSpec],
    harness: str,
    tokenizer: Any,
    generate_turns: TurnGenerator,
    limits: RolloutLimits | None = None,
    *,
    error_mode: str = "is_error",
    session_kwargs: dict | None = None,
) -> list[EpisodeTokens]:
    """Play a batch of episodes in lockstep: each round, one generate call continues every unfinished episode."""
    limits = limits or RolloutLimits()
    episodes: list[TokenEpisode] = []
    try:
        for spec in specs:
            episodes.append(TokenEpisode(spec, harness, tokenizer, limits, error_mode=error_mode,
                                         session_kwargs=session_kwargs))
        while live := [e for e in episodes if not e.finished]:
            started = time.perf_counter()
            turns = generate_turns([e.context_ids() for e in live], max(e.turn_budget() for e in live))
            share = (time.perf_counter() - started) / len(live)
            for episode, turn in zip(live, turns):
                episode.tokens.seconds_generate += share
                budget = episode.turn_budget()
                episode.add_turn(TurnOutput(turn.token_ids[:budget], turn.logprobs[:budget]))
    finally:
        results = []
        for episode in episodes:
            results.append(episode.close())
    return results


def run_token_episode(task: Any, scale: str, seed: int, harness: str, tokenizer: Any, generate_turns: TurnGenerator,
                      limits: RolloutLimits | None = None, **kwargs: Any) -> EpisodeTokens:
    """Play one episode of `task` at (scale, seed) under `harness`."""
    return run_token_episodes([EpisodeSpec(task, scale, seed)], harness, tokenizer, generate_turns, limits, **kwargs)[0]


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
    """Plain `model.generate` (the CPU path): one batched call continues every context by one turn and returns
    the sampled tokens' log-probs. Contexts are left-padded, so each row's new tokens line up at the end."""

    def __init__(self, model: Any, tokenizer: Any, *, temperature: float = 1.0, do_sample: bool = True):
        self.model, self.tokenizer = model, tokenizer
        self.temperature, self.do_sample = temperature, do_sample
        self.end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")

    def __call__(self, contexts: list[list[int]], max_new_tokens: int) -> list[TurnOutput]:
        import torch

        width = max(len(c) for c in contexts)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(c)) + c for c in contexts], device=self.model.device)
        attention_mask = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts], device=self.model.device)
        was_training = self.model.training
        self.model.eval()
        with torch.no_grad():
            out = self.model.generate(
                input_ids, attention_mask=attention_mask, max_new_tokens=max_new_tokens,
                eos_token_id=self.end_of_turn, pad_token_id=pad,
                **({"do_sample": True, "temperature": self.temperature, "top_p": 1.0, "top_k": 0} if self.do_sample
                   else {"do_sample": False}),
                return_dict_in_generate=True, output_logits=True,
            )
        if was_training:
            self.model.train()
        new_ids = out.sequences[:, width:]
        logits = torch.stack(out.logits, dim=1).float()
        if self.do_sample:
            logits = logits / self.temperature
        logprobs = torch.log_softmax(logits, dim=-1).gather(-1, new_ids.unsqueeze(-1)).squeeze(-1)
        turns = []
        for row_ids, row_logprobs in zip(new_ids.tolist(), logprobs.tolist()):
            # A row that ended early is padded after its end-of-turn token; keep it up to that token.
            length = row_ids.index(self.end_of_turn) + 1 if self.end_of_turn in row_ids else len(row_ids)
            turns.append(TurnOutput(row_ids[:length], row_logprobs[:length]))
        return turns


class VLLMServerTurnGenerator:
    """vLLM server mode (the GPU path): TRL's VLLMClient, fed token ids, so the context is never re-tokenised."""

    def __init__(self, vllm_client: Any, *, temperature: float = 1.0):
        self.client, self.temperature = vllm_client, temperature

    def __call__(self, contexts: list[list[int]], max_new_tokens: int) -> list[TurnOutput]:
        out = self.client.generate(prompts=contexts, n=1, temperature=self.temperature,
                                   max_tokens=max_new_tokens, logprobs=0)
        return [TurnOutput(ids, [position[0] for position in logprobs])
                for ids, logprobs in zip(out["completion_ids"], out["logprobs"])]


class ReplayTurns:
    """A turn source that plays fixed assistant turns (e.g. a teacher's) instead of sampling a model.

    `scripts[i]` holds the raw turn texts of episode i of the batch. An episode whose script is played out has
    finished (its last turn calls claim_done), which is how calls are matched to the live episodes.
    """

    def __init__(self, tokenizer: Any, scripts: list[list[str]]):
        self.tokenizer, self.queues = tokenizer, [list(s) for s in scripts]

    def __call__(self, contexts: list[list[int]], max_new_tokens: int) -> list[TurnOutput]:
        live = [q for q in self.queues if q]
        if len(live) != len(contexts):
            raise RuntimeError("a replayed episode ended before its script did: it diverged from the recorded one")
        turns = []
        for queue in live:
            ids = self.tokenizer(queue.pop(0) + "<|im_end|>", add_special_tokens=False)["input_ids"]
            turns.append(TurnOutput(ids, [0.0] * len(ids)))
        return turns


def assistant_turn_text(message: dict) -> str:
    """An assistant message of a trajectory as the raw text a Qwen3 model would have generated for it."""
    text = f"<think>\n{message['reasoning_content']}\n</think>\n\n" if message.get("reasoning_content") else ""
    text += message.get("content") or ""
    calls = []
    for call in message.get("tool_calls") or []:
        arguments = call["function"]["arguments"]
        arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        calls.append(format_tool_call_json(ToolCall(call["function"]["name"], arguments)))
    return text + ("\n" if text and calls else "") + "\n".join(calls)


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
