"""A stand-in for Qwen/Qwen3-8B small enough for a test (imported by test_model_sources.py and test_launch.py).

Qwen3-8B's own config.json (tests/data/qwen3-8b-config.json: the public values, in the hub's spelling, with
`"rope_scaling": null` beside a top-level `rope_theta`) with the sizes shrunk so that random weights take a second,
its 40,960 positions and RoPE kept; a byte-level tokenizer with Qwen3's chat template (trained here on a few words).
`write_hub_snapshot` lays it out as the Hugging Face cache does (blobs, a snapshot of links, refs/main), so that
the hub id `Qwen/Qwen3-8B` resolves offline with HF_HUB_CACHE pointing there.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

QWEN3_8B_CONFIG = Path(__file__).resolve().parent / "data" / "qwen3-8b-config.json"
REPO_ID = "Qwen/Qwen3-8B"
REVISION = "b968826d9c46dd6066d109eabc6255188de91218"   # any 40 hex digits: refs/main names it
# Only the sizes of the weights shrink (the grouped-query ratio of 4 query heads per key/value head is kept).
SHRUNK = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "max_window_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16}


def qwen3_8b_config() -> dict:
    return json.loads(QWEN3_8B_CONFIG.read_text())


def write_model_folder(folder: Path) -> Path:
    """The shrunk Qwen3-8B (random weights, tokenizer, Qwen3-8B's config.json with the sizes shrunk) in `folder`."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from progagent_lib.generation.tiny_model import train_tokenizer

    tokenizer = train_tokenizer(["list the products in stock and write the restock report"] * 3, vocab_size=320)
    config = qwen3_8b_config()
    config.update(SHRUNK, vocab_size=len(tokenizer), eos_token_id=tokenizer.eos_token_id,
                  bos_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"))
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(Qwen3Config(**config))
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    # the hub's own spelling, as a downloaded snapshot has it (save_pretrained would write transformers 5's)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return folder


def write_hub_snapshot(hub_cache: Path, repo_id: str = REPO_ID) -> Path:
    """`repo_id` in a Hugging Face cache at `hub_cache`: files as blobs, the snapshot as links to them, refs/main.
    Returns the snapshot folder."""
    repository = hub_cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = repository / "snapshots" / REVISION
    snapshot.mkdir(parents=True)
    (repository / "blobs").mkdir()
    (repository / "refs").mkdir()
    (repository / "refs" / "main").write_text(REVISION)
    with tempfile.TemporaryDirectory() as staging:
        for item in sorted(write_model_folder(Path(staging)).iterdir()):
            digest = hashlib.sha256(item.read_bytes()).hexdigest()
            shutil.move(str(item), repository / "blobs" / digest)
            (snapshot / item.name).symlink_to(Path("..") / ".." / "blobs" / digest)
    return snapshot
