"""OpenAIPolicy against a local HTTP server.

The server is a TEST DOUBLE standing in for a remote OpenAI-compatible API (vLLM, SGLang, a hosted
model), which these tests cannot reach: it speaks the real wire format over real HTTP, replays scripted
replies and records the requests it got. Everything else (the episode loop, the environment) is real.
"""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from progagent_lib.harness import run_episode
from progagent_lib.harness.summary import is_infra_error
from progagent_lib.policy import OpenAIPolicy, make_policy


class FakeChatServer:
    def __init__(self, script):
        self.script = list(script)   # each item: (status, body dict) or ("drop", None) to close the connection
        self.requests = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                       "body": json.loads(self.rfile.read(length)) if length else None})
                status, body = outer.script.pop(0)
                if status == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def reply(content="", tool_calls=(), reasoning=None):
    message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [{"id": f"srv_{i}", "type": "function", "function": {"name": n, "arguments": a}}
                                 for i, (n, a) in enumerate(tool_calls)]
    if reasoning:
        message["reasoning_content"] = reasoning
    return 200, {"choices": [{"message": message}], "usage": {"prompt_tokens": 1234, "completion_tokens": 20}}


@pytest.fixture
def server():
    servers = []

    def start(script):
        servers.append(FakeChatServer(script))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def test_episode_over_http_with_retries(server, restock_task):
    fake = server([
        (503, {"error": "overloaded"}),
        ("drop", None),                                                  # connection reset
        reply(tool_calls=[("list_products", '{"page": 1}')], reasoning="Look first."),
        (429, {"error": "rate limited"}),
        reply(tool_calls=[("get_supplier", '{"supplier_id": ')]),       # arguments cut: a malformed call
        reply(tool_calls=[("claim_done", '{"action": "Total 0.00"}')]),
    ])
    policy = OpenAIPolicy(fake.url, "qwen3-8b", api_key="sk-test", backoff=0.01, max_retries=3)
    t = run_episode(restock_task, "v0", 0, "dtc", policy)
    assert t.end_reason == "claim_done" and t.turns == 3 and t.reward == 0.0
    assert policy.attempts == 6 and len(fake.requests) == 6
    assert [c.kind for c in t.calls] == ["task_tool", "malformed", "claim_done"]
    assert t.messages[2]["reasoning_content"] == "Look first." and t.messages[2]["tool_calls"][0]["id"] == "srv_0"
    assert t.context_tokens >= 1254  # the server's usage is taken when larger than our count
    first, last = fake.requests[0], fake.requests[-1]
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer sk-test"
    assert first["body"]["model"] == "qwen3-8b" and {t["function"]["name"] for t in first["body"]["tools"]} >= {"list_products", "claim_done"}
    sent = last["body"]["messages"]
    assert all("reasoning_content" not in m for m in sent)  # only standard keys go to the API
    assert sent[3]["role"] == "tool" and sent[3]["tool_call_id"] == "srv_0" and '"page": 1' in sent[3]["content"]


def test_persistent_failure_ends_the_episode_with_a_policy_error(server, restock_task):
    fake = server([(500, {"error": "down"})] * 3)
    t = run_episode(restock_task, "v0", 0, "ptc", OpenAIPolicy(fake.url, "m", backoff=0.01, max_retries=2))
    assert t.end_reason == "policy_error" and "failed 3 times" in t.error and "HTTP 500" in t.error
    assert t.turns == 0 and t.reward == 0.0


def test_client_errors_are_not_retried(server, restock_task):
    fake = server([(400, {"error": "context too long"})])
    t = run_episode(restock_task, "v0", 0, "ptc", OpenAIPolicy(fake.url, "m", backoff=0.01))
    assert t.end_reason == "policy_error" and "HTTP 400" in t.error and len(fake.requests) == 1


def test_text_tool_calls_from_servers_without_a_parser(server, restock_task):
    code = "print(tools.list_products(page=1)['total'])"
    text = ('<tool_call>\n<function=programmatic_tool_call>\n<parameter=code>\n' + code +
            '\n</parameter>\n</function>\n</tool_call>')
    fake = server([reply(content=text), reply(content="There are 60 products.")])
    t = run_episode(restock_task, "v0", 0, "ptc", make_policy(f"openai:{fake.url}#coder", "ptc", backoff=0.01))
    assert t.policy == "openai:coder" and t.end_reason == "no_tool_call"
    assert t.calls[0].observation.strip() == "60" and t.tool_calls == 1
    assert t.final_answer == "There are 60 products."


def test_connection_refused_names_the_server_and_the_fix(restock_task):
    from progagent_lib.engine import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    t = run_episode(restock_task, "v0", 0, "ptc", OpenAIPolicy(url, "m", backoff=0.01, max_retries=1))
    assert t.end_reason == "policy_error" and is_infra_error(t)
    assert f"{url}/chat/completions failed 2 times" in t.error and "ConnectError" in t.error
    assert "progagent engine serve" in t.error


def test_a_server_without_tool_calling_gets_the_fix_and_an_empty_turn_is_an_error(server, restock_task):
    refused = server([(400, {"object": "error", "message": '"auto" tool choice requires --enable-auto-tool-choice '
                                                         'and --tool-call-parser to be set'})])
    t = run_episode(restock_task, "v0", 0, "ptc", OpenAIPolicy(refused.url, "m", backoff=0.01))
    assert is_infra_error(t) and "HTTP 400" in t.error and "--tool-call-parser hermes" in t.error
    empty = server([(200, {"choices": [{"message": {"role": "assistant", "content": ""}, "finish_reason": "abort"}],
                           "usage": {"prompt_tokens": 900, "completion_tokens": 0}})])
    t = run_episode(restock_task, "v0", 0, "ptc", OpenAIPolicy(empty.url, "m", backoff=0.01))
    assert is_infra_error(t) and "no tokens" in t.error and "'abort'" in t.error
    no_choices = server([(200, {"choices": []})])
    t = run_episode(restock_task, "v0", 0, "ptc", OpenAIPolicy(no_choices.url, "m", backoff=0.01))
    assert is_infra_error(t) and "no choices[0].message" in t.error


def test_errored_episodes_are_kept_out_of_pass_rates_and_retried_on_resume(server, restock_task, tmp_path, capsys):
    """`progagent run` against a server that fails: the summary counts the episodes as errored (not a pass rate
    of 0), the command says so and exits 1, and the next run retries exactly those episodes."""
    from progagent_lib.cli import main
    from progagent_lib.harness.summary import summarize
    from progagent_lib.harness.trajectory import read_jsonl

    out = tmp_path / "run.jsonl"
    down = server([(400, {"error": "model not loaded"})] * 2)
    args = ["run", "--tasks", str(restock_task.root), "--harness", "ptc", "--samples", "2", "--out", str(out),
            "--policy", f"openai:{down.url}#m", "--policy-arg", "backoff=0.01", "--no-progress"]
    assert main(args) == 1
    printed = capsys.readouterr()
    assert "2 episode(s) errored" in printed.err and "model not loaded" in printed.err
    row = summarize(read_jsonl(out)).row(0, named=True)
    assert row["episodes"] == 2 and row["errored"] == 2 and row["pass_rate"] is None
    up = server([reply(content="I give up.")] * 2)
    args[args.index(f"openai:{down.url}#m")] = f"openai:{up.url}#m"
    assert main(args) == 0 and len(up.requests) == 2  # both errored episodes ran again
    rerun = [t for t in read_jsonl(out) if not is_infra_error(t)]
    row = summarize(rerun).row(0, named=True)
    assert len(rerun) == 2 and row["errored"] == 0 and row["pass_rate"] == 0.0


def test_difficulty_filter_leaves_a_task_with_errored_episodes_undecided(server, restock_task, tmp_path):
    from progagent_lib.synthesis.difficulty import difficulty_filter

    down = server([(400, {"error": "model not loaded"})] * 2)
    result = difficulty_filter([restock_task], OpenAIPolicy(down.url, "m", backoff=0.01), tmp_path / "f.jsonl", k=2,
                               scales=("v0",), progress=False)
    assert result.errored == 2 and result.kept == [] and result.pass_rates["pass_rate"].to_list() == [None]
    assert result.decisions["reason"][0].startswith("undecided: errored episodes (v0: 2)")


def test_engine_turn_generator_errors_name_the_server(server):
    """The token-level generator (progagent_lib.engine) against the fake: no server, and a reply without tokens."""
    from progagent_lib.engine import EngineRequestError, free_port
    from progagent_lib.generation.engine_client import EngineTurnGenerator
    from progagent_lib.errors import PolicyError

    gone = EngineTurnGenerator(f"http://127.0.0.1:{free_port()}/v1", "smollm2", end_of_turn_id=2)
    with pytest.raises(EngineRequestError, match=r"completions: ConnectError.*progagent engine serve"):
        gone([[1, 2, 3]], 8)
    empty = server([(200, {"choices": [{"index": 0, "text": "", "token_ids": [], "finish_reason": "abort",
                                        "logprobs": {"token_logprobs": []}}]})])
    generate = EngineTurnGenerator(empty.url, "smollm2", end_of_turn_id=2)
    with pytest.raises(PolicyError, match=r"returned 0 tokens .*'abort'"):  # an infrastructure error for rollouts too
        generate([[1, 2, 3]], 8)
    sent = empty.requests[0]["body"]
    assert sent["prompt"] == [[1, 2, 3]] and sent["stop_token_ids"] == [2] and sent["return_token_ids"] is True


def test_engine_clients_find_the_servers_key_by_its_url_and_never_send_it_elsewhere(server, tmp_path, monkeypatch):
    """The key a `progagent engine serve` wrote (0600) reaches every engine client of its port by the URL alone;
    $PROGAGENT_ENGINE_API_KEY is the fallback; a remote API gets $OPENAI_API_KEY, never the engine's key."""
    import os
    import stat

    from progagent_lib.generation.access import engine_api_key, key_file, remove_key_file, write_key_file
    from progagent_lib.generation.engine_client import EngineTurnGenerator
    from progagent_lib.engine.weights import reload_weights
    from progagent_lib.errors import PolicyError

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PROGAGENT_ENGINE_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    fake = server([reply("hi"), (200, {"choices": [{"index": 0, "token_ids": [5, 2], "logprobs": {"token_logprobs": [-0.1, -0.2]}}]}),
                   (401, {"error": "Unauthorized"})])
    port = int(fake.url.split(":")[2].split("/")[0])
    path = write_key_file("127.0.0.1", port, "k" * 43)
    assert path == key_file("localhost", port) and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700 and path.read_text().strip() == "k" * 43
    assert engine_api_key(fake.url.replace("127.0.0.1", "localhost")) == "k" * 43
    OpenAIPolicy(fake.url, "smollm2", max_retries=0).act([{"role": "user", "content": "hi"}], [])
    EngineTurnGenerator(fake.url, "smollm2", end_of_turn_id=2)([[1]], 4)
    assert [r["auth"] for r in fake.requests] == ["Bearer " + "k" * 43] * 2
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "model.safetensors").write_bytes(b"")
    with pytest.raises(PolicyError, match=r"/pause refused the request \(HTTP 401\).*engine-keys"):
        reload_weights(fake.url, weights)
    assert fake.requests[-1]["auth"] == "Bearer " + "k" * 43

    remove_key_file("127.0.0.1", port, "another key")           # a later server's file stays
    assert path.exists()
    remove_key_file("127.0.0.1", port, "k" * 43)
    assert not path.exists() and engine_api_key(fake.url) is None
    monkeypatch.setenv("PROGAGENT_ENGINE_API_KEY", "from-env")
    assert engine_api_key(fake.url) == "from-env"
    assert OpenAIPolicy(fake.url, "m").client.headers["Authorization"] == "Bearer from-env"
    remote = OpenAIPolicy("https://api.example.com/v1", "m")   # not loopback: the engine's key is not sent
    assert remote.client.headers["Authorization"] == "Bearer sk-openai"
    assert os.environ["PROGAGENT_ENGINE_API_KEY"] not in str(dict(remote.client.headers))
