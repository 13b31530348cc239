"""Where an evaluated model lives (train/devices.py). This machine has no GPU: the CPU behaviour is checked for real,
the GPU paths (this rank's cuda device, TRL's NCCL weight push into a trl vllm-serve server) have not run."""
import pytest

from progagent_lib.train.devices import push_checkpoint_to_trl_server, rank_device, to_rank_device


def test_on_a_cpu_machine_the_model_stays_where_it_is(monkeypatch):
    import torch

    monkeypatch.setenv("LOCAL_RANK", "3")
    assert not torch.cuda.is_available() and rank_device() is None
    layer = torch.nn.Linear(2, 2)
    assert to_rank_device(layer) is layer and layer.weight.device.type == "cpu"


def test_pushing_a_checkpoint_into_a_trl_server_without_a_gpu_is_refused_in_one_line():
    with pytest.raises(RuntimeError, match=r"needs a GPU .*NCCL.*evaluate with transformers or the engine") as err:
        push_checkpoint_to_trl_server("http://127.0.0.1:8000", "smollm2")
    assert "\n" not in str(err.value)


def test_evaluation_routes_the_checkpoint_to_its_generator(tmp_path, monkeypatch):
    """A model in this process goes to this rank's device; a saved checkpoint's weights go into the server that
    generates for it: the engine (reloaded in place) or a trl vllm-serve server (pushed over NCCL, recorded here)."""
    import importlib
    import inspect

    from progagent_lib.engine import weights
    from progagent_lib.train import devices
    from progagent_lib.train.evaluate import EvalConfig

    evaluate = importlib.import_module("progagent_lib.train.evaluate")   # the package exports a function of that name
    source = inspect.getsource(evaluate.checkpoint_generator)
    assert "to_rank_device(model)" in source and "_load_into_server(config, choice.backend, source)" in source
    pushed = []
    monkeypatch.setattr(devices, "push_checkpoint_to_trl_server", lambda *a: pushed.append(("trl", *a)))
    monkeypatch.setattr(weights, "reload_weights", lambda *a: pushed.append(("engine", *a)))
    (tmp_path / "model.safetensors").write_bytes(b"")
    trl = EvalConfig(model=str(tmp_path), vllm_server_base_url="http://127.0.0.1:8000")
    evaluate._load_into_server(trl, "trl-vllm", tmp_path)
    engine = EvalConfig(model=str(tmp_path), engine_url="http://127.0.0.1:8001/v1")
    evaluate._load_into_server(engine, "engine", tmp_path)
    evaluate._load_into_server(engine, "engine", tmp_path / "no-weights-here")   # a model named on the server
    assert pushed == [("trl", "http://127.0.0.1:8000", str(tmp_path), None),
                      ("engine", "http://127.0.0.1:8001/v1", tmp_path)]
