"""A model's chat format, taken from its tokenizer's own chat template: nothing here is written by hand.

The token adapter of training and evaluation (`progagent_lib.train.rollout`) needs three things of a chat
format, and `ChatFormat` derives each from the template:

- the prompt: the template's render of the first messages with the generation prompt;
- the end-of-turn token: the first special token the template writes after an assistant message's text;
- the tokens the environment adds after a turn: render the conversation with the new messages and the
  next generation prompt, check that the previous render is a prefix of it, and take what follows the
  assistant turn's end-of-turn token (the difference between two renders).

SFT tokenises a whole teacher conversation with the same renders (`tokenize_conversation`), and marks
as trained exactly the spans a model generates turn by turn, so SFT and rollouts see the same tokens.
`check_conversation` proves that on a real teacher episode before any compute is spent.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from .parsing import parse_tool_calls
from .trajectory import messages_for_chat_template
from .turn import ToolCall, Turn

_TEXT_PROBE = "Zq7 probe text"
_TOOL_PROBE = "Zq7 tool result"


class ChatFormatError(ValueError):
    """A tokenizer whose chat template cannot serve the token adapter, or renders that disagree."""


@dataclass
class ChatFormat:
    """`ChatFormat(tokenizer, model_name=...)`: renders, end-of-turn token and observation tokens of one template."""

    tokenizer: Any
    model_name: str = ""
    template_name: str = ""
    template_kwargs: dict = field(default_factory=dict)  # passed to the template, e.g. {"enable_thinking": False}

    def __post_init__(self) -> None:
        template = getattr(self.tokenizer, "chat_template", None)
        self.model_name = (
            self.model_name or getattr(self.tokenizer, "name_or_path", "") or type(self.tokenizer).__name__
        )
        if not template:
            raise ChatFormatError(
                f"the tokenizer of {self.model_name!r} has no chat template; choose one "
                "(e.g. chat_template: qwen3 in the model's config)"
            )
        if not isinstance(template, str):
            raise ChatFormatError(f"{self.model_name!r} has several named chat templates; choose one explicitly")
        self.template_sha256 = hashlib.sha256(template.encode()).hexdigest()
        self.template_name = self.template_name or f"sha256:{self.template_sha256[:12]}"
        self.end_of_turn = self._find_end_of_turn()
        self._check_tool_results()

    def describe(self) -> dict:
        """What a run records about the format it trained or evaluated with."""
        return {
            "model": self.model_name,
            "template": self.template_name,
            "template_sha256": self.template_sha256,
            "end_of_turn": self.tokenizer.convert_ids_to_tokens(self.end_of_turn),
            "end_of_turn_id": self.end_of_turn,
            **({"template_kwargs": self.template_kwargs} if self.template_kwargs else {}),
        }

    # --- renders -----------------------------------------------------------------------------------
    def render_text(self, messages: list[dict], tools: list[dict] | None, *, generation_prompt: bool) -> str:
        try:
            return self.tokenizer.apply_chat_template(
                messages_for_chat_template(messages),
                tools=tools or None,
                add_generation_prompt=generation_prompt,
                tokenize=False,
                **self.template_kwargs,
            )
        except Exception as exc:  # jinja errors (e.g. a template that refuses a role) name no model
            raise ChatFormatError(
                f"the chat template {self.template_name} of {self.model_name!r} cannot render this conversation: {exc}"
            ) from exc

    def render(self, messages: list[dict], tools: list[dict] | None, *, generation_prompt: bool) -> list[int]:
        text = self.render_text(messages, tools, generation_prompt=generation_prompt)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt_ids(self, messages: list[dict], tools: list[dict] | None) -> list[int]:
        return self.render(messages, tools, generation_prompt=True)

    def turn_end(self, rendered: list[int], start: int) -> int:
        """The index just after the first end-of-turn token at or after `start`."""
        try:
            return rendered.index(self.end_of_turn, start) + 1
        except ValueError:
            raise ChatFormatError(
                f"the chat template {self.template_name} of {self.model_name!r} wrote no "
                f"end-of-turn token ({self.tokenizer.convert_ids_to_tokens(self.end_of_turn)!r}) "
                f"after position {start}"
            ) from None

    def environment_tokens(self, previous: list[int], messages: list[dict], tools: list[dict] | None) -> list[int]:
        """Tokens after the last assistant turn's end-of-turn token, through the next generation prompt.

        `previous` is the render (with generation prompt) of the conversation before that assistant turn;
        `messages` ends with the assistant turn and the messages the environment added after it."""
        full = self.render(messages, tools, generation_prompt=True)
        if full[: len(previous)] == previous:
            return full[self.turn_end(full, len(previous)) :]
        # The template renders earlier turns differently once the conversation grows (Qwen3's drops the reasoning
        # of turns before a new user message, e.g. parse feedback). What the model saw stays as it was appended;
        # the new messages are rendered after a fixed stand-in turn, so no earlier turn can change their tokens.
        last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
        first_user = next(i for i, m in enumerate(messages) if m["role"] == "user")
        head = messages[: first_user + 1]
        start = len(self.render(head, tools, generation_prompt=True))
        probe = self.render(
            head + [{"role": "assistant", "content": _TEXT_PROBE}] + messages[last + 1 :], tools, generation_prompt=True
        )
        return probe[self.turn_end(probe, start) :]

    def tokenize_conversation(self, messages: list[dict], tools: list[dict] | None) -> tuple[list[int], list[int]]:
        """A whole conversation's tokens and a mask that is 1 on the spans a model generates (each assistant turn
        through its end-of-turn token) and 0 elsewhere: what SFT trains on."""
        whole = self.render(messages, tools, generation_prompt=False)
        mask = [0] * len(whole)
        for index, message in enumerate(messages):
            if message["role"] != "assistant":
                continue
            before = self.render(messages[:index], tools, generation_prompt=True)
            self._require_prefix(before, whole, f"the conversation before message {index}", "the whole conversation")
            end = self.turn_end(whole, len(before))
            mask[len(before) : end] = [1] * (end - len(before))
        return whole, mask

    def assistant_turns(self, messages: list[dict], tools: list[dict] | None) -> list[list[int]]:
        """The token spans a model generates for each assistant message (what a replay of the conversation plays)."""
        whole, mask = self.tokenize_conversation(messages, tools)
        turns, current = [], []
        for token, bit in zip(whole, mask):
            if bit:
                current.append(token)
                if token == self.end_of_turn:
                    turns.append(current)
                    current = []
        return turns

    def check_conversation(self, messages: list[dict], tools: list[dict] | None) -> None:
        """Render a finished conversation whole and turn by turn (as the token adapter does: generated tokens
        decoded, parsed and re-rendered, environment tokens appended) and refuse if the two disagree."""
        whole, mask = self.tokenize_conversation(messages, tools)
        assistant = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        if not assistant:
            raise ChatFormatError("the conversation to check has no assistant turn")
        replayed = list(messages[: assistant[0]])
        appended = self.render(replayed, tools, generation_prompt=True)
        for number, index in enumerate(assistant):
            self._require_prefix(
                appended, whole, f"the turn-by-turn tokens before turn {number + 1}", "the whole conversation"
            )
            end = self.turn_end(whole, len(appended))
            generated = whole[len(appended) : end]
            text = self.tokenizer.decode(generated[:-1], skip_special_tokens=False)
            parsed = parse_tool_calls(text, tools)
            original_ids = [c.get("id", "") for c in messages[index].get("tool_calls") or []]
            calls = [
                ToolCall(c.name, c.arguments, original_ids[i] if i < len(original_ids) else c.id)
                for i, c in enumerate(parsed.tool_calls)
            ]
            replayed.append(Turn(parsed.content, calls, reasoning=parsed.reasoning).to_message())  # as the episode
            previous, appended = appended, appended + generated
            following = assistant[number + 1] if number + 1 < len(assistant) else len(messages)
            if following == len(messages):  # the episode ended with this turn: nothing more is appended
                break
            replayed.extend(messages[index + 1 : following])
            appended = appended + self.environment_tokens(previous, replayed, tools)
        self._require_prefix(appended, whole, "the turn-by-turn tokens", "the whole conversation")

    # --- probes ------------------------------------------------------------------------------------
    def _find_end_of_turn(self) -> int:
        return end_of_turn_id(self.tokenizer, self.model_name, self.template_name)

    def _check_tool_results(self) -> None:
        call = {"id": "call_0", "type": "function", "function": {"name": "probe", "arguments": json.dumps({"x": 1})}}
        text = self.render_text(
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_0", "name": "probe", "content": _TOOL_PROBE},
            ],
            [
                {
                    "type": "function",
                    "function": {
                        "name": "probe",
                        "description": "a probe",
                        "parameters": {"type": "object", "properties": {}},
                    },
                }
            ],
            generation_prompt=True,
        )
        if _TOOL_PROBE not in text:
            raise ChatFormatError(
                f"the chat template {self.template_name} of {self.model_name!r} does not render tool "
                "results (role 'tool'); choose a tool-capable template, e.g. chat_template: qwen3"
            )

    def _require_prefix(self, prefix: list[int], full: list[int], prefix_name: str, full_name: str) -> None:
        if full[: len(prefix)] == prefix:
            return
        position = next((i for i, (a, b) in enumerate(zip(prefix, full)) if a != b), min(len(prefix), len(full)))

        def around(ids: list[int]) -> str:
            return repr(self.tokenizer.decode(ids[max(position - 8, 0) : position + 8], skip_special_tokens=False))

        got = prefix[position] if position < len(prefix) else None
        want = full[position] if position < len(full) else None
        raise ChatFormatError(
            f"token and message renderings disagree for {self.model_name!r} (template {self.template_name}) at "
            f"position {position}: {prefix_name} has token {got} "
            f"({self.tokenizer.convert_ids_to_tokens(got) if got is not None else 'end'}) where {full_name} has "
            f"{want} ({self.tokenizer.convert_ids_to_tokens(want) if want is not None else 'end'}); "
            f"around it: {around(prefix)} vs {around(full)}"
        )


def end_of_turn_id(tokenizer: Any, model_name: str = "", template_name: str = "") -> int:
    """The token a chat template closes an assistant turn with: the first special (or added) token it writes after
    an assistant message's text; the tokenizer's eos token when it writes none."""
    name = model_name or getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
    try:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": _TEXT_PROBE}], tokenize=False
        )
    except Exception as exc:
        raise ChatFormatError(
            f"the chat template {template_name} of {name!r} cannot render a short conversation: {exc}"
        ) from exc
    if _TEXT_PROBE not in text:
        raise ChatFormatError(
            f"the chat template {template_name} of {name!r} does not render an assistant message's content"
        )
    after = text[text.rindex(_TEXT_PROBE) + len(_TEXT_PROBE) :]
    special = set(tokenizer.all_special_ids) | set(getattr(tokenizer, "added_tokens_decoder", {}) or {})
    for token in tokenizer(after, add_special_tokens=False)["input_ids"]:
        if token in special:
            return token
    if tokenizer.eos_token_id is None:
        raise ChatFormatError(
            f"the chat template {template_name} of {name!r} ends an assistant turn with no special "
            "token and the tokenizer has no eos token: generation could not stop"
        )
    return tokenizer.eos_token_id


__all__ = ["ChatFormat", "ChatFormatError", "end_of_turn_id"]
