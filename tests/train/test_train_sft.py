"""SFT: which teacher trajectories enter the dataset, and that the loss falls on assistant tokens only."""
import pytest

from progagent_lib.config import ConfigError, load_config
from progagent_lib.train.sft import SFTRunConfig, build_sft_dataset, chat_row, select_sft_trajectories


def traj(task, harness, score, n=0):
    return {"task_id": task, "harness": harness, "score": score, "tools": [],
            "messages": [{"role": "user", "content": f"{task} {harness} {n}"}]}


def test_selection_filters_balances_and_covers_every_task():
    pool = ([traj("a", "dtc", 1.0, i) for i in range(5)] + [traj("b", "dtc", 0.8)] + [traj("b", "dtc", 0.5)]
            + [traj("a", "ptc", 0.9), traj("b", "ptc", 1.0), traj("b", "ptc", 0.7, 1)])
    selected, report = select_sft_trajectories(pool, min_score=0.7)
    assert report.dropped_low_score == 1
    assert report.kept == {"dtc": 3, "ptc": 3}  # the smaller harness sets the count
    dtc = [(t["task_id"]) for t in selected if t["harness"] == "dtc"]
    assert sorted(dtc) == ["a", "a", "b"]      # round-robin: b is covered although a has five
    assert all(t["score"] >= 0.7 for t in selected)


def test_selection_refuses_an_uncovered_task():
    pool = [traj("a", "dtc", 1.0), traj("b", "dtc", 1.0), traj("a", "ptc", 1.0), traj("b", "ptc", 0.2)]
    with pytest.raises(ValueError, match=r"harness 'ptc'.*\['b'\]"):
        select_sft_trajectories(pool, min_score=0.7)


@pytest.fixture(scope="module")
def teacher(restock_task):
    from progagent_lib.harness.episode import run_episode
    from progagent_lib.policy import OracleTeacher

    return [run_episode(restock_task, "v0", 0, h, OracleTeacher(h)) for h in ("dtc", "ptc")]


@pytest.mark.slow
def test_sft_on_teacher_trajectories_trains_only_assistant_tokens(restock_task, teacher, tmp_path):
    from trl import SFTTrainer

    from progagent_lib.generation.tiny_model import TinyModelConfig, build_tiny_model
    from progagent_lib.train.sft import sft_args

    from progagent_lib.harness.chat_format import ChatFormat

    assert all(t.reward == 1.0 for t in teacher)
    model, tokenizer = build_tiny_model("tasks", TinyModelConfig(vocab_size=1024, hidden_size=64, intermediate_size=128, head_dim=16))
    chat = ChatFormat(tokenizer, model_name="tiny")
    dataset, report = build_sft_dataset(teacher, chat, min_score=0.7)
    assert report.kept == {"dtc": 1, "ptc": 1}
    # Tokenised here with the template's own renders: the trained spans are the turns a model generates.
    assert dataset[1]["input_ids"] == chat.tokenize_conversation(teacher[1].messages, teacher[1].tools)[0]
    trainer = SFTTrainer(model=model, args=sft_args(SFTRunConfig(output_dir=str(tmp_path), max_steps=1, max_length=None)),
                         train_dataset=dataset, processing_class=tokenizer)
    row = trainer.train_dataset[1]  # the PTC trajectory, whole
    ids, labels = row["input_ids"], row["labels"]
    trained = tokenizer.decode([i for i, l in zip(ids, labels) if l != -100])
    untrained = tokenizer.decode([i for i, l in zip(ids, labels) if l == -100])
    assert "programmatic_tool_call" in trained and '"name": "claim_done"' in trained and trained.count("<|im_end|>") >= 3
    assert "<tool_response>" not in trained and restock_task.prompt[:60] not in trained
    assert "<tool_response>" in untrained and restock_task.prompt[:60] in untrained
    assert trainer.train().training_loss > 0


@pytest.mark.slow
def test_run_sft_with_lora_from_trajectory_files(teacher, tmp_path, repo, monkeypatch):
    from progagent_lib.harness.trajectory import write_jsonl
    from progagent_lib.train.gspo import LoraSettings
    from progagent_lib.generation.sources import load_model
    from progagent_lib.generation.tiny_model import TinyModelConfig
    from progagent_lib.train.sft import run_sft

    monkeypatch.chdir(repo)
    write_jsonl(teacher, tmp_path / "teacher.jsonl")
    config = SFTRunConfig(output_dir=str(tmp_path / "sft"), tiny=TinyModelConfig(vocab_size=1024, hidden_size=64,
                          intermediate_size=128, head_dim=16), task_ids=["retail/restock_orders"],
                          trajectories=[str(tmp_path / "teacher.jsonl")], harnesses=["dtc", "ptc"], max_length=None, max_steps=2,
                          learning_rate=1e-2, lora=LoraSettings(r=4, alpha=8))
    summary = run_sft(config)
    assert summary["dataset"]["kept"] == {"dtc": 1, "ptc": 1} and summary["steps"] == 2
    initial, _ = load_model(tmp_path / "sft" / "initial")
    final, _ = load_model(summary["final_model"])  # LoRA merged back: a plain Qwen3 checkpoint
    assert final.config.model_type == "qwen3"
    changed = [name for name, p in final.state_dict().items() if not p.equal(initial.state_dict()[name])]
    assert changed and all("proj" in name for name in changed)  # only the adapted linear layers moved


def test_too_short_max_length_is_refused_with_the_length_needed(teacher):
    from progagent_lib.harness.chat_format import ChatFormat
    from progagent_lib.generation.tiny_model import TinyModelConfig, build_tiny_model

    _, tokenizer = build_tiny_model("tasks", TinyModelConfig(vocab_size=1024, hidden_size=32, intermediate_size=64, head_dim=16))
    with pytest.raises(ValueError, match=r"max_length=512 .* needs \d+ tokens"):
        build_sft_dataset(teacher, ChatFormat(tokenizer), max_length=512, min_score=0.7)


def test_a_harness_with_no_kept_trajectory_is_named():
    pool = [traj("a", "dtc", 1.0), traj("a", "ptc", 0.1)]
    with pytest.raises(ValueError, match="harness 'ptc' keeps no trajectory"):
        select_sft_trajectories(pool, min_score=0.7, harnesses=["dtc", "ptc"])


def test_every_shipped_config_loads(repo):
    from progagent_lib.train.evaluate import EvalConfig
    from progagent_lib.train.gspo import GSPORunConfig
    from progagent_lib.train.pipeline import PipelineConfig

    # Every pipeline profile is named cpu-*, ci or gpu-paper; stage configs sft-*, gspo-*, eval-*.
    kinds = {"cpu-": PipelineConfig, "ci": PipelineConfig, "gpu-paper": PipelineConfig, "sft": SFTRunConfig, "gspo": GSPORunConfig, "eval": EvalConfig}
    configs = sorted((repo / "configs").glob("*.yaml"))
    assert configs
    for path in configs:
        kind = next((cls for prefix, cls in kinds.items() if path.name.startswith(prefix)), None)
        assert kind is not None, f"configs/{path.name}: no config kind for its name; name it after one of {sorted(kinds)}"
        load_config(kind, path)
    authors = load_config(GSPORunConfig, repo / "configs" / "gspo-gpu-paper-authors-clip.yaml")
    assert (authors.epsilon, authors.epsilon_high) == (1e-2, 2e-2)


def test_config_rejects_unknown_fields(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("learning_rte: 1e-5\n")
    with pytest.raises(ConfigError, match="learning_rte"):
        load_config(SFTRunConfig, bad)
