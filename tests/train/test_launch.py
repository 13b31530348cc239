"""`progagent launch` (issue 38, item 5): the plan for configs/gpu-paper.yaml, bad input refused before anything
starts (exit 2, one line naming the fix), and the launcher's process management run for real.

No GPU and no CUDA vLLM here, so a real `trl vllm-serve` cannot start. The process management is tested on the plan
the launcher makes for a real config, with two commands swapped: the server's for a stand-in that is a real HTTP
server (it answers /health with 503 for a while, then 200, and leaves a child of its own), the trainer's for a small
program that checks the server answers and exits 0. Everything else (the environment, process groups, health
waiting, where.json, stopping) is the launcher's own.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from progagent_lib.engine.server import free_port
from progagent_lib.train.launch import (LaunchFailed, LaunchOptions, execute, group_members, machine_problems, parse_gpus,
                                        plan_launch)
from qwen3_snapshot import write_model_folder   # tests/: the shrunk Qwen3-8B

REPO = Path(__file__).resolve().parents[2]
GPU_PAPER = REPO / "configs" / "gpu-paper.yaml"

STAND_IN_SERVER = textwrap.dedent("""
    import http.server, os, subprocess, sys, time
    port, ready_after, child_pid_file = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    # a worker of its own that ignores SIGTERM (as a stuck vLLM worker may): only the group's SIGKILL ends it
    child = subprocess.Popen([sys.executable, "-c", "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                              "open(sys.argv[1], 'w').write('ready'); time.sleep(600)", child_pid_file + ".ready"])
    open(child_pid_file, "w").write(str(child.pid))
    while not os.path.exists(child_pid_file + ".ready"):   # its SIGTERM handler is in place
        time.sleep(0.01)
    started = time.monotonic()

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            up = time.monotonic() - started >= ready_after
            self.send_response(200 if self.path == "/health" and up else 503 if self.path == "/health" else 404)
            self.end_headers()
            self.wfile.write(b"ok" if up else b"starting")

    http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
""")

STAND_IN_TRAINER = textwrap.dedent("""
    import json, os, sys, urllib.request, yaml
    report, config = sys.argv[1], sys.argv[sys.argv.index("--config") + 1]
    url = yaml.safe_load(open(config))["vllm_server_base_url"]
    status = urllib.request.urlopen(url + "/health").status
    json.dump({"health": status, "url": url, "gpus": os.environ["CUDA_VISIBLE_DEVICES"]}, open(report, "w"))
""")


def launch(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    return subprocess.run([sys.executable, "-m", "progagent_lib.cli", "launch", *args], cwd=REPO,
                          env={**base, **(env or {})}, capture_output=True, text=True, check=False, timeout=300)


def refused(done: subprocess.CompletedProcess, *needles: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("progagent launch: error: "), done.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    """The Qwen3-8B stand-in (40,960 positions, no RoPE scaling) as a local folder."""
    folder = tmp_path_factory.mktemp("qwen3") / "Qwen3-8B"
    folder.mkdir()
    return write_model_folder(folder)


def stage_config(tmp_path: Path, name: str, **fields) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"output_dir": str(tmp_path / "run"), "task_ids": ["retail/restock_orders"],
                                    **fields}))
    return path


def gspo_config(tmp_path: Path, model: str, **fields) -> Path:
    return stage_config(tmp_path, "gspo", **{"model": model, "harness": "ptc", "use_vllm": True, "max_new_tokens": 256,
                                             "max_context_tokens": 4096, **fields})


# --- the plan ------------------------------------------------------------------------------------------------

def test_gpu_lists():
    assert parse_gpus("1-7") == (1, 2, 3, 4, 5, 6, 7) and parse_gpus("0,2-3") == (0, 2, 3) and parse_gpus("5") == (5,)
    for bad in ("a", "3-1", "1-", ""):
        with pytest.raises(ValueError, match="GPU indices|backwards"):
            parse_gpus(bad)


def test_dry_run_of_the_gpu_paper_config_prints_the_whole_plan(tmp_path):
    done = launch("--config", str(GPU_PAPER), "--server-gpus", "0", "--train-gpus", "1-7", "--dry-run", "--json",
                  "--output-dir", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    [server], trainer = plan["servers"], plan["trainer"]
    assert server["what"] == "trl vllm-serve" and server["gpus"] == [0] and server["env"]["CUDA_VISIBLE_DEVICES"] == "0"
    assert server["argv"][1] == "vllm-serve" and server["health_url"] == f"{server['url']}/health"
    assert trainer["processes"] == 7 and trainer["env"]["CUDA_VISIBLE_DEVICES"] == "1,2,3,4,5,6,7"
    argv = trainer["argv"]
    assert argv[argv.index("--num_processes") + 1] == "7" and argv[-3:-1] == ["pipeline", "--config"]
    assert "deepspeed_zero3.yaml" in argv[argv.index("--config_file") + 1]
    ports = [*server["ports"].values(), *trainer["ports"].values()]
    assert len(ports) == len(set(ports)) == 3
    assert plan["overrides"]["gspo.vllm_server_base_url"] == server["url"]   # the trainers reach the launched server
    assert not (tmp_path / "run").exists()                                    # nothing started, nothing written

    words = launch("--config", str(GPU_PAPER), "--server-gpus", "0", "--train-gpus", "1-7", "--dry-run")
    assert words.returncode == 0 and "trl vllm-serve" in words.stdout and "--num_processes 7" in words.stdout
    assert "CUDA_VISIBLE_DEVICES=1,2,3,4,5,6,7" in words.stdout and "dry run: nothing started" in words.stdout


# --- bad input, refused before anything starts ---------------------------------------------------------------

@pytest.mark.parametrize("dry_run", [True, False])
def test_overlapping_server_and_trainer_gpus_are_refused(dry_run):
    done = launch("--config", str(GPU_PAPER), "--server-gpus", "0,1", "--train-gpus", "1-7",
                  *(["--dry-run"] if dry_run else []))
    refused(done, "GPU 1 is in both --server-gpus and --train-gpus", "--server-gpus 0 --train-gpus 1-7")


def test_a_context_beyond_the_models_positions_is_refused(model_folder, tmp_path):
    config = gspo_config(tmp_path, str(model_folder), max_context_tokens=65536)
    for dry in ([], ["--dry-run"]):
        refused(launch("--config", str(config), "--server-gpus", "0", "--train-gpus", "1", *dry),
                "max_context_tokens=65536 exceeds the 40960 positions", f"{model_folder}@64k")
    scaled = gspo_config(tmp_path, f"{model_folder}@64k", max_context_tokens=65536)
    assert launch("--config", str(scaled), "--server-gpus", "0", "--train-gpus", "1", "--dry-run").returncode == 0


def test_a_port_in_use_is_refused(model_folder, tmp_path):
    sft = stage_config(tmp_path, "sft", model=str(model_folder), max_length=4096)
    gspo = gspo_config(tmp_path, str(model_folder))
    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))
        held.listen()
        port = str(held.getsockname()[1])
        refused(launch("--config", str(sft), "--train-gpus", "0", "--trainer-port", port),
                f"port {port} (trainer main_process) is already in use", "--trainer-port")
        refused(launch("--config", str(gspo), "--server-gpus", "0", "--train-gpus", "1", "--server-port", port,
                       "--trainer-port", str(free_port())),
                f"port {port} (server http) is already in use", "--server-port")
    refused(launch("--config", str(gspo), "--server-gpus", "0", "--train-gpus", "1", "--server-port", "29500",
                   "--trainer-port", "29500", "--dry-run"), "port 29500 is planned twice")


def test_use_vllm_without_vllm_names_make_install_gpu(model_folder, tmp_path):
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed in this environment")
    config = gspo_config(tmp_path, str(model_folder))
    refused(launch("--config", str(config), "--server-gpus", "0", "--train-gpus", "1",
                   "--server-port", str(free_port()), "--trainer-port", str(free_port())),
            "use_vllm: true", "vLLM is not installed", "make install-gpu")


def test_a_server_the_config_does_not_use_or_a_shared_gpu_for_trl_is_refused(model_folder, tmp_path):
    sft = stage_config(tmp_path, "sft", model=str(model_folder), max_length=4096)
    refused(launch("--config", str(sft), "--server-gpus", "0", "--train-gpus", "1", "--dry-run"),
            "no server is started", "drop --server-gpus")
    refused(launch("--config", str(GPU_PAPER), "--server-gpus", "0", "--train-gpus", "0", "--colocate", "--dry-run"),
            "--colocate", "different GPUs")


# --- the process management, for real, with stand-in commands -------------------------------------------------

def stand_in_plan(model_folder: Path, tmp_path: Path, trainer: list[str], ready_after: float = 1.0):
    config = gspo_config(tmp_path, str(model_folder))
    plan = plan_launch(LaunchOptions(config=str(config), server_gpus=(0,), train_gpus=(1,), server_port=free_port(),
                                     trainer_port=free_port()))
    port = plan.servers[0].ports["http"]
    server = replace(plan.servers[0], argv=[sys.executable, "-c", STAND_IN_SERVER, str(port), str(ready_after),
                                            str(tmp_path / "worker.pid")])
    return replace(plan, servers=[server], trainer=replace(plan.trainer, argv=trainer))


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def test_the_launcher_waits_for_health_runs_the_trainer_and_leaves_no_process(model_folder, tmp_path):
    report = tmp_path / "trainer.json"
    plan = stand_in_plan(model_folder, tmp_path, [sys.executable, "-c", STAND_IN_TRAINER, str(report), "--config",
                                                  str(tmp_path / "run" / "launch" / "config.yaml")])
    assert list(machine_problems(plan))   # a real launch would be refused here (no vLLM, no GPU): hence the stand-ins
    started = time.monotonic()
    assert execute(plan, health_timeout=60, poll=0.1, grace=5, say=lambda text: None) == 0
    assert time.monotonic() - started >= 1.0                     # it waited for /health to answer 200
    seen = json.loads(report.read_text())
    assert seen == {"health": 200, "url": plan.servers[0].url, "gpus": "1"}   # the launched server, on its own GPU
    where = json.loads(Path(plan.where_file).read_text())
    server, trainer = where["processes"]
    assert where["status"] == "finished" and trainer["exit_code"] == 0 and server["exit_code"] is not None
    assert server["gpus"] == [0] and server["cuda_visible_devices"] == "0" and server["ports"]["http"] > 0
    assert trainer["log"].endswith("trainer.log") and server["log"].endswith("server.log")
    worker = int((tmp_path / "worker.pid").read_text())
    for pid in (server["pid"], trainer["pid"], worker):
        assert not alive(pid), pid
    assert group_members(server["pid"]) == [] and group_members(trainer["pid"]) == []
    assert "GET /health" in Path(server["log"]).read_text()


@pytest.mark.slow
def test_the_planned_trainer_command_runs_for_real_on_cpu(model_folder, tmp_path):
    """No stand-in: the plan of an SFT config (no server) on one trainer process, its `accelerate launch ... -m
    progagent_lib.train.cli sft --config <the launcher's copy>` run as planned (CUDA_VISIBLE_DEVICES=0 names no device
    here, so it trains on CPU), one step of the shrunk Qwen3-8B; only the machine check (no GPU here) is skipped."""
    config = stage_config(tmp_path, "sft", model=str(model_folder), harnesses=["ptc"], scales=["v0"], seeds=[0],
                          max_length=32768, max_steps=1)
    plan = plan_launch(LaunchOptions(config=str(config), train_gpus=(0,), trainer_port=free_port()))
    assert plan.servers == [] and plan.trainer.argv[1:3] == ["launch", "--num_processes"]
    assert execute(plan, poll=0.2, grace=5, say=lambda text: None) == 0, Path(plan.trainer.log).read_text()[-3000:]
    assert (tmp_path / "run" / "final" / "config.json").is_file()
    [trainer] = json.loads(Path(plan.where_file).read_text())["processes"]
    assert trainer["exit_code"] == 0 and trainer["cuda_visible_devices"] == "0" and not alive(trainer["pid"])


def test_a_server_that_dies_fails_the_launch_before_any_trainer(model_folder, tmp_path):
    plan = stand_in_plan(model_folder, tmp_path, [sys.executable, "-c", "raise SystemExit(0)"])
    plan = replace(plan, servers=[replace(plan.servers[0], argv=[sys.executable, "-c",
                                                                 "print('cannot load the model'); raise SystemExit(3)"])])
    with pytest.raises(LaunchFailed, match="exited with code 3 before answering") as failed:
        execute(plan, health_timeout=60, poll=0.1, grace=5, say=lambda text: None)
    assert "cannot load the model" in str(failed.value)   # the log's end is shown
    server, trainer = json.loads(Path(plan.where_file).read_text())["processes"]
    assert trainer["pid"] is None and server["exit_code"] == 3


def test_sigterm_to_the_launcher_stops_server_and_trainers(model_folder, tmp_path):
    """The launcher in a process of its own, its trainer never ending: SIGTERM stops every process group."""
    plan = stand_in_plan(model_folder, tmp_path, [sys.executable, "-c", "import time; time.sleep(600)"], 0.0)
    script = tmp_path / "launcher.py"
    script.write_text(textwrap.dedent(f"""
        import json, sys
        from progagent_lib.train.launch import LaunchPlan, ProcessPlan, execute
        data = json.loads(open({str(tmp_path / 'plan.json')!r}).read())
        data["servers"] = [ProcessPlan(**s) for s in data["servers"]]
        data["trainer"] = ProcessPlan(**data["trainer"])
        sys.exit(execute(LaunchPlan(**data), health_timeout=60, poll=0.1, grace=5, say=lambda text: None))
    """))
    (tmp_path / "plan.json").write_text(json.dumps(plan.to_json()))
    launcher = subprocess.Popen([sys.executable, str(script)], cwd=REPO)
    where = Path(plan.where_file)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        processes = json.loads(where.read_text())["processes"] if where.is_file() else []
        if processes and processes[-1]["pid"]:
            break
        time.sleep(0.1)
    server, trainer = json.loads(where.read_text())["processes"]
    assert alive(server["pid"]) and alive(trainer["pid"])
    launcher.send_signal(signal.SIGTERM)
    assert launcher.wait(timeout=60) == 128 + signal.SIGTERM
    worker = int((tmp_path / "worker.pid").read_text())
    for pid in (server["pid"], trainer["pid"], worker):
        assert not alive(pid), pid
    assert json.loads(where.read_text())["status"] == "stopped by SIGTERM"


# --- the make targets that must not run here ------------------------------------------------------------------

# Run under `make test`, a nested make inherits MAKELEVEL/MAKEFLAGS and prints "Entering directory" on stdout.
SINGLE_MAKE = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}


def test_make_reproduce_gpu_paper_points_at_progagent_launch():
    done = subprocess.run(["make", "--no-print-directory", "reproduce", "PROFILE=gpu-paper"], cwd=REPO, capture_output=True, text=True,
                          check=False, timeout=60, env=SINGLE_MAKE)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "progagent launch --config configs/gpu-paper.yaml" in done.stderr and not done.stdout


def test_make_gpu_check_refuses_without_a_gpu():
    if subprocess.run(["sh", "-c", "nvidia-smi -L"], capture_output=True, check=False).returncode == 0:
        pytest.skip("this machine has an NVIDIA GPU: `make gpu-check` would run")
    done = subprocess.run(["make", "--no-print-directory", "gpu-check"], cwd=REPO, capture_output=True, text=True,
                          check=False, timeout=60, env=SINGLE_MAKE)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "no NVIDIA GPU" in done.stderr and not done.stdout


# --- make gpu-check's parts that run without a GPU ------------------------------------------------------------

def test_gpu_check_refuses_without_cuda_in_one_line():
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available: the check would run")
    done = subprocess.run([sys.executable, "-m", "progagent_lib.train.gpu_check"], cwd=REPO, capture_output=True,
                          text=True, check=False, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "gpu-check: no CUDA GPU here (torch.cuda.is_available() is False); run `make gpu-check` on a GPU node"]


@pytest.mark.parametrize("gpus", [1, 2])
def test_gpu_check_plan(model_folder, tmp_path, gpus):
    """One GPU: an engine server sharing it with the trainer (weights reloaded from a folder); two: `trl vllm-serve` on
    GPU 0 and the trainer on GPU 1 (TRL's NCCL push). The trainer runs gpu_check's own side of the run."""
    from progagent_lib.train.gpu_check import gpu_check_plan, write_config

    plan = gpu_check_plan(write_config(tmp_path, str(model_folder), 1e-3, "trl" if gpus == 2 else "engine"), gpus)
    [server], trainer = plan.servers, plan.trainer
    assert server.gpus == [0] and trainer.gpus == ([0] if gpus == 1 else [1]) and trainer.processes == 1
    if gpus == 1:
        assert server.what == "progagent engine serve" and plan.overrides["engine_url"] == server.url
        assert server.argv[server.argv.index("--gpu-memory-utilization") + 1] == "0.3"
    else:
        assert server.what == "trl vllm-serve" and plan.overrides["vllm_server_base_url"] == server.url
    assert trainer.argv[trainer.argv.index("-m") + 1:][:2] == ["progagent_lib.train.gpu_check", "train"]
    assert "--config_file" not in trainer.argv   # one process: accelerate's plain launcher


def test_gpu_check_verdict():
    from progagent_lib.train.gpu_check import verdict

    assert verdict([{"logp_mismatch_mean": 0.010}, {"logp_mismatch_mean": 0.012}])[0]
    ok, line = verdict([{"logp_mismatch_mean": 0.010}, {"logp_mismatch_mean": 0.400}])
    assert not ok and "stale weights" in line
    assert not verdict([{"logp_mismatch_mean": 0.010}, {}])[0] and not verdict([{"logp_mismatch_mean": 0.01}])[0]
