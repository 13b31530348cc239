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


def test_evaluation_routes_the_checkpoint_to_its_generator():
    import importlib
    import inspect

    evaluate = importlib.import_module("progagent_lib.train.evaluate")   # the package exports a function of that name
    source = inspect.getsource(evaluate.checkpoint_generator)
    assert "to_rank_device(model)" in source and "push_checkpoint_to_trl_server(config.vllm_server_base_url" in source
