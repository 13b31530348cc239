"""One episode engine: the message loop (`run_episode`) and the token adapter (training rollouts, evaluation)
record the same episode, for every harness and for chat templates of three families.

The teacher's turns are replayed through the token adapter as the tokens a model trained on them would
generate (the spans of the whole render); the tokenizer, templates, task environments, kernels and verifier
are real. The Qwen3 template is TRL's bundled file; the Qwen2.5-style and Llama-3-style templates are written
for these tests (tests/engine/templates/), and the tokenizer gets the Llama-3 header tokens added.
"""
from pathlib import Path

import pytest

from progagent_lib import load_task
from progagent_lib.harness import Limits, run_episode
from progagent_lib.harness.chat_format import ChatFormat, ChatFormatError
from progagent_lib.policy import OracleTeacher
from progagent_lib.generation.chat_templates import qwen3_chat_template
from progagent_lib.generation.tiny_model import TinyModelConfig, build_tiny_model
from progagent_lib.generation import ReplayTurns
from progagent_lib.train.rollout import RolloutSpec, run_token_episodes

TEMPLATES = Path(__file__).resolve().parent / "templates"
LLAMA_TOKENS = ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
UNLIMITED = Limits(max_tool_calls=None, max_turns=None, max_context_tokens=None)
TASKS = ["retail/restock_orders", "it_operations/patch_rollout_waves"]
FIELDS = ("reward", "score", "end_reason", "turns", "tool_calls", "model_tool_calls", "tool_output_tokens",
          "runtime_errors", "malformed_calls", "timeouts")


@pytest.fixture(scope="module")
def tokenizer(repo):
    _, tok = build_tiny_model(repo / "tasks", TinyModelConfig(vocab_size=1024, hidden_size=32, intermediate_size=64,
                                                               num_hidden_layers=1, head_dim=16))
    tok.add_special_tokens({"additional_special_tokens": LLAMA_TOKENS})
    tok.bos_token = "<|begin_of_text|>"
    return tok


def chat_format(tokenizer, name):
    import copy

    tok = copy.deepcopy(tokenizer)
    tok.chat_template = qwen3_chat_template() if name == "qwen3" else (TEMPLATES / f"{name}.jinja").read_text()
    return ChatFormat(tok, model_name="tiny-test", template_name=name)


@pytest.fixture(scope="module")
def teacher_runs(repo, tokenizer):
    """The message loop's trajectory of the teacher, per (task, harness), counted with the test tokenizer."""
    runs = {}
    for task_id in TASKS:
        task = load_task(repo / "tasks" / task_id)
        for harness in ("dtc", "ptc", "hybrid"):
            runs[task_id, harness] = (task, run_episode(task, "v0", 0, harness, OracleTeacher(harness), UNLIMITED,
                                                        tokenizer=tokenizer))
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("template", ["qwen3", "qwen25_style", "llama3_style"])
def test_message_loop_and_token_adapter_record_the_same_episode(teacher_runs, tokenizer, template):
    chat = chat_format(tokenizer, template)
    assert chat.tokenizer.convert_ids_to_tokens(chat.end_of_turn) == ("<|eot_id|>" if template.startswith("llama") else "<|im_end|>")
    for (task_id, harness), (task, message_path) in teacher_runs.items():
        assert message_path.reward == 1.0, (task_id, harness)
        chat.check_conversation(message_path.messages, message_path.tools)
        script = chat.assistant_turns(message_path.messages, message_path.tools)
        rollout = run_token_episodes([RolloutSpec(task, "v0", 0)], harness, chat, ReplayTurns([script]), UNLIMITED)[0]
        token_path = rollout.trajectory
        for name in FIELDS:
            assert getattr(token_path, name) == getattr(message_path, name), (template, task_id, harness, name)
        assert token_path.programs == message_path.programs, (template, task_id, harness)
        # The mask: the model's spans are exactly the replayed turns; everything else came from the template.
        trained = [t for t, m in zip(rollout.completion_ids, rollout.env_mask) if m == 1]
        assert trained == [t for turn in script for t in turn]
        assert rollout.completion_ids[-1] == chat.end_of_turn and rollout.env_mask[-1] == 1


def test_bare_json_and_lists_of_calls_parse_llama_style(restock_task):
    from progagent_lib.harness import parse_tool_calls

    tools = [{"type": "function", "function": {"name": "list_products"}}, {"type": "function", "function": {"name": "claim_done"}}]
    one = parse_tool_calls('{"name": "list_products", "parameters": {"page": 2}}', tools)
    assert [(c.name, c.arguments) for c in one.tool_calls] == [("list_products", {"page": 2})] and not one.errors
    two = parse_tool_calls('<|python_tag|>[{"name": "list_products", "parameters": {}}, {"name": "claim_done", '
                           '"arguments": {"action": "x"}}]', tools)
    assert [c.name for c in two.tool_calls] == ["list_products", "claim_done"]
    block = parse_tool_calls('<tool_call>\n[{"name": "list_products", "arguments": {"page": 1}}, '
                             '{"name": "list_products", "arguments": {"page": 2}}]\n</tool_call>', tools)
    assert [c.arguments["page"] for c in block.tool_calls] == [1, 2] and len({c.id for c in block.tool_calls}) == 2
    # JSON that is not a call of an offered tool stays an answer.
    answer = parse_tool_calls('{"name": "Alice", "parameters": {}}', tools)
    assert not answer.tool_calls and answer.content


def test_a_tokenizer_without_a_template_is_refused_by_name(tokenizer):
    import copy

    tok = copy.deepcopy(tokenizer)
    tok.chat_template = None
    with pytest.raises(ChatFormatError, match="tiny-x.*no chat template"):
        ChatFormat(tok, model_name="tiny-x")


def test_a_template_that_cannot_render_tool_results_is_refused(tokenizer):
    import copy

    tok = copy.deepcopy(tokenizer)
    tok.chat_template = ("{% for m in messages %}{% if m.role != 'tool' %}<|im_start|>{{ m.role }}\n{{ m.content }}"
                         "<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    with pytest.raises(ChatFormatError, match="does not render tool results"):
        ChatFormat(tok, model_name="tiny-x", template_name="no-tools")


def test_renderings_that_disagree_name_the_first_differing_position(teacher_runs, tokenizer):
    import copy

    # A template whose system turn counts the messages: every render changes what came before.
    tok = copy.deepcopy(tokenizer)
    tok.chat_template = qwen3_chat_template().replace("{{- messages[0].content + '\\n\\n' }}",
                                                      "{{- messages[0].content + ' (' + (messages|length|string) + ')\\n\\n' }}")
    chat = ChatFormat(tok, model_name="tiny-x", template_name="counting")
    _, trajectory = teacher_runs[TASKS[0], "ptc"]
    with pytest.raises(ChatFormatError, match=r"tiny-x.*counting.*position \d+"):
        chat.check_conversation(trajectory.messages, trajectory.tools)


def test_no_chat_format_token_is_written_by_hand_in_train(repo):
    import re

    pattern = re.compile(r"im_end|im_start|eot_id|start_header_id")
    hits = [f"{p.relative_to(repo)}:{n}" for p in (repo / "progagent_lib" / "train").rglob("*.py")
            for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, hits
