"""Figures are results: each is drawn from rows (never a note in place of a chart), carries those rows beside it, and
reaches the committed figures/ only through `make figures`; the defects a reader saw in them stay fixed."""
import json
import subprocess

import polars as pl
import pytest

from progagent_lib.analysis import figures, learning, training_figures as tf
from progagent_lib.analysis.profiles import COMMITTED_FIGURES, REPO, ProfileError, load_profile
from progagent_lib.analysis.publish import PublishError, publish_figures
from progagent_lib.analysis.style import (DATA_SUFFIX, NoFigureData, NotDrawn, figure_data_problems, figure_problems,
                                          save_chart, save_figure)

COMMITTED = sorted(COMMITTED_FIGURES.rglob("*.png"))

SUMMARY = pl.DataFrame({"scale": ["v0", "v3"] * 3, "harness": ["dtc", "dtc", "ptc", "ptc", "hybrid", "hybrid"],
                        "tool_output_tokens": [1.3e4, 9.2e4, 565.0, 778.0, 2.1e3, 2.5e3],
                        "tool_calls": [53.0, 335, 55, 337, 55, 337], "pass_rate": [1.0] * 6})
DYNAMICS = pl.DataFrame({"harness": ["ptc"] * 3, "step": [1, 2, 3], "mean_reward": [0.0] * 3,
                         "tool_output_tokens_per_episode": [500.0, 350.0, 800.0]})


def _learning_rows(recipes):
    return pl.DataFrame([{"stage": stage, "recipe": r, "harness": r, "split": split, "decoding": "greedy",
                          "pass_rate": 0.5, "pass_low": 0.1, "pass_high": 0.9, "instances": 2, "episodes": 2,
                          "mean_score": 0.5} for r in recipes for stage in ("base", "sft") for split in ("seeds", "params")])


def _views(spec):
    if "mark" in spec:
        yield spec
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for child in spec.get(key, []):
            yield from _views(child)
    if isinstance(spec.get("spec"), dict):
        yield from _views(spec["spec"])


def _color_domains(spec):
    return [v["encoding"]["color"]["scale"]["domain"] for v in _views(spec)
            if "scale" in v.get("encoding", {}).get("color", {}) and "domain" in v["encoding"]["color"]["scale"]]


def test_there_are_committed_figures():
    assert len(COMMITTED) >= 5, f"expected the committed figures under {COMMITTED_FIGURES}"


@pytest.mark.parametrize("png", COMMITTED, ids=lambda p: str(p.relative_to(COMMITTED_FIGURES)))
def test_each_committed_figure_is_drawn_from_rows_kept_beside_it(png):
    """Reads the rows each committed figure was drawn from (NAME.vl.json); a placeholder, or a figure whose data is
    unknown, fails here (delete it, or publish a run's figure with `make figures`)."""
    assert png.with_suffix(".svg").is_file(), f"{png.name}: no SVG beside it"
    problems = figure_data_problems(png)
    assert not problems, f"{png.relative_to(REPO)}: {'; '.join(problems)}"


def test_a_note_in_place_of_a_chart_is_refused(tmp_path):
    """What the committed gspo_diagnostics.png was: one text mark saying 'no logged steps'."""
    import altair as alt

    note = alt.Chart(pl.DataFrame({"text": ["no logged steps with GSPO diagnostics"]})).mark_text().encode(text="text:N")
    assert figure_problems(note.to_dict()) == ["no mark draws data (only text, or nothing): a placeholder, not a figure"]
    with pytest.raises(NoFigureData, match="placeholder"):
        save_chart(note, "placeholder", tmp_path)
    assert not list(tmp_path.iterdir())
    empty = alt.Chart(pl.DataFrame({"x": []}, schema={"x": pl.Float64})).mark_bar().encode(x="x:Q")
    assert "a bar mark has no data rows" in figure_problems(empty.to_dict())
    (tmp_path / f"old{DATA_SUFFIX}").write_text(json.dumps(note.to_dict()))
    assert figure_data_problems(tmp_path / "old.png")   # a saved placeholder is found by reading its rows
    assert figure_data_problems(tmp_path / "never.png") == [
        f"no never{DATA_SUFFIX} beside it: the rows it was drawn from are unknown (save_chart writes them)"]


NO_ROWS = pl.DataFrame({"step": [], "harness": []}, schema={"step": pl.Int64, "harness": pl.Utf8})


@pytest.mark.parametrize("draw", [
    lambda: figures.harness_comparison(SUMMARY.clear()),
    lambda: figures.training_dynamics(NO_ROWS),
    lambda: figures.training_dynamics(DYNAMICS.select("harness", "step")),
    lambda: figures.cross_harness(pl.DataFrame(schema={"model": pl.Utf8, "harness": pl.Utf8, "pass_rate": pl.Float64})),
    lambda: figures.pass_rate_by_scale(pl.DataFrame(schema={"variant": pl.Utf8, "scale": pl.Utf8, "pass_rate": pl.Float64})),
    lambda: figures.program_structures(pl.DataFrame(schema={"source": pl.Utf8, "construct": pl.Utf8, "share": pl.Float64})),
    lambda: figures.dtc_like_share(pl.DataFrame(schema={"source": pl.Utf8, "share": pl.Float64})),
    lambda: figures.pool_domains(pl.DataFrame(schema={"domain": pl.Utf8, "tasks": pl.Int64})),
    lambda: tf.gspo_training(NO_ROWS),
    lambda: tf.gspo_diagnostics(NO_ROWS),
    lambda: tf.sft_training(tf.trainer_log([])),
    lambda: tf.pass_rate_by_harness(pl.DataFrame(schema={"harness": pl.Utf8, "pass_rate": pl.Float64})),
    lambda: learning.pass_rate_by_split(_learning_rows(["ptc"]).filter(pl.col("recipe") == "dtc")),
    lambda: learning.teacher_needs_chart(pl.DataFrame(schema={"task_id": pl.Utf8, "harness": pl.Utf8,
                                                              "context_tokens": pl.Int64}), 8192),
], ids=["harness_comparison", "training_dynamics", "dynamics_without_metrics", "cross_harness", "pass_rate_by_scale",
        "program_structures", "dtc_like_share", "pool_domains", "gspo_training", "gspo_diagnostics", "sft_training",
        "pass_rate_by_harness", "pass_rate_by_split", "teacher_needs"])
def test_figure_functions_refuse_a_table_without_rows(draw):
    with pytest.raises(NoFigureData, match="no figure is saved|to draw"):
        draw()


def test_save_figure_shows_why_and_leaves_no_stale_figure(tmp_path):
    saved = save_figure("training_dynamics", tmp_path, figures.training_dynamics, DYNAMICS)
    assert saved is not None and not isinstance(saved, NotDrawn)
    assert {p.name for p in tmp_path.iterdir()} == {f"training_dynamics{s}" for s in (".png", ".svg", DATA_SUFFIX)}
    assert figure_data_problems(tmp_path / "training_dynamics.png") == []
    # the next run logged no step: nothing drawn, and the earlier run's figure is not left to be published as this one's
    shown = save_figure("training_dynamics", tmp_path, figures.training_dynamics, NO_ROWS)
    assert isinstance(shown, NotDrawn) and "no rows" in shown._repr_markdown_()
    assert not list(tmp_path.iterdir())


def test_legends_name_only_the_harnesses_in_the_data():
    """training_dynamics listed dtc and hybrid for a PTC-only run."""
    assert _color_domains(figures.training_dynamics(DYNAMICS).to_dict()) == [["ptc"], ["ptc"]]
    two = DYNAMICS.vstack(DYNAMICS.with_columns(harness=pl.lit("hybrid")))
    assert set(map(tuple, _color_domains(tf.gspo_training(two).to_dict()))) == {("ptc", "hybrid")}
    assert set(map(tuple, _color_domains(figures.harness_comparison(SUMMARY).to_dict()))) == {("dtc", "ptc", "hybrid")}


def test_a_constant_series_gets_an_axis_with_ticks():
    """A reward of 0 at every step drew one tick, '0': the reward is a share, on [0, 1]; other constant series get
    a domain around their value."""
    spec = figures.training_dynamics(DYNAMICS).to_dict()
    scales = {v["encoding"]["y"]["field"]: v["encoding"]["y"]["scale"] for v in _views(spec)}
    assert scales["mean_reward"] == {"domain": [0, 1]}
    flat_loss = pl.DataFrame({"harness": ["ptc"] * 3, "step": [1, 2, 3], "loss": [0.0] * 3})
    [loss] = [v["encoding"]["y"]["scale"] for v in _views(tf.gspo_training(flat_loss).to_dict())
              if v["encoding"]["y"]["field"] == "loss"][:1]
    assert loss == {"domain": [0.0, 1.0]}
    negative = flat_loss.with_columns(loss=pl.lit(-0.5))
    assert [v["encoding"]["y"]["scale"] for v in _views(tf.gspo_training(negative).to_dict())][0] == {"domain": [-0.75, -0.25]}


def test_harness_comparison_keeps_each_harness_visible_on_a_log_axis():
    """Hybrid hid under PTC (equal calls and pass rates) and a linear axis flattened PTC's hundreds of tokens."""
    views = list(_views(figures.harness_comparison(SUMMARY).to_dict()))
    tokens = [v for v in views if v["encoding"]["y"]["field"] == "tool_output_tokens"]
    assert tokens and all(v["encoding"]["y"]["scale"]["type"] == "log" for v in tokens)
    assert all(v["encoding"]["xOffset"]["field"] == "harness" for v in views)   # side by side at each scale
    points = [v for v in views if (v["mark"]["type"] if isinstance(v["mark"], dict) else v["mark"]) == "point"]
    assert len(points) == 3 and all(p["encoding"]["shape"]["field"] == "harness" for p in points)


def test_learning_by_split_labels_recipes_only_when_there_are_several():
    """One recipe showed a stray 'Recipe / ptc' row header."""
    one = learning.pass_rate_by_split(_learning_rows(["ptc"])).to_dict()
    assert "row" not in one["facet"] and "(PTC recipe, under its own harness)" in one["title"]
    three = learning.pass_rate_by_split(_learning_rows(["ptc", "dtc", "hybrid"])).to_dict()
    assert three["facet"]["row"]["sort"] == ["DTC recipe", "PTC recipe", "Hybrid recipe"]


def test_memorization_legend_lists_only_groups_with_bars():
    from progagent_lib.analysis.memorization import memorization_chart

    table = pl.DataFrame({"task": ["a/x", "b/y"], "parametrised": [True, True], "pass_rate": [0.5, 0.0],
                          "passed": [2, 0], "instances": [4, 4]})
    assert _color_domains(memorization_chart(table, "t").to_dict()) == [["with instance parameters"]]


def test_every_profile_saves_figures_in_its_run_folder(tmp_path):
    """`make reproduce` overwrote the committed figures (cpu-smoke's figures_dir was figures/)."""
    import yaml

    names = list(yaml.safe_load((REPO / "profiles.yaml").read_text()))
    for name in names:
        prof = load_profile(name, run_dir=tmp_path / name)
        assert prof.figures_dir == tmp_path / name / "figures", name
    bad = tmp_path / "profiles.yaml"
    bad.write_text("p:\n  tasks: [tasks/retail/restock_orders]\n  figures_dir: figures/here\n")
    with pytest.raises(ProfileError, match="only `make figures` writes"):
        load_profile("p", run_dir=tmp_path / "run", path=bad)


def test_publishing_copies_a_run_s_figures_with_their_rows_and_refuses_a_placeholder(tmp_path):
    run = tmp_path / "run"
    save_figure("training_dynamics", run / "figures", figures.training_dynamics, DYNAMICS)
    written = publish_figures("ci", run_dir=run, target=tmp_path / "published")
    assert sorted(p.name for p in written) == ["training_dynamics.png", "training_dynamics.svg",
                                               f"training_dynamics{DATA_SUFFIX}"]
    assert figure_data_problems(tmp_path / "published" / "training_dynamics.png") == []
    (run / "figures" / "old_placeholder.png").write_bytes(b"\x89PNG")   # an old run's figure, drawn from nothing known
    (run / "figures" / "old_placeholder.svg").write_text("<svg/>")
    with pytest.raises(PublishError, match="old_placeholder: no old_placeholder.vl.json beside it"):
        publish_figures("ci", run_dir=run, target=tmp_path / "again")
    assert not (tmp_path / "again").exists()   # all or nothing
    with pytest.raises(PublishError, match="publishes no figures"):
        publish_figures("ci", run_dir=run)     # ci's figures stay in its run folder


def test_make_figures_publishes_the_profile_s_run():
    dry = subprocess.run(["make", "-n", "figures", "PROFILE=cpu-study"], cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert dry.returncode == 0 and "-m progagent_lib.analysis.publish --profile cpu-study" in dry.stdout
    assert load_profile("cpu-smoke", run_dir=REPO / "runs" / "cpu-smoke").published_figures_dir == COMMITTED_FIGURES


def test_ablation_variants_with_equal_pass_rates_stay_apart_under_one_legend():
    """All three variants at pass rate 0 drew one line over the others (only 'v0 only' showed)."""
    table = pl.DataFrame({"variant": ["all scales (main run)", "isError off", "v0 only"], "scale": ["v0"] * 3,
                          "pass_rate": [0.0] * 3})
    views = list(_views(figures.pass_rate_by_scale(table).to_dict()))
    assert all(v["encoding"]["xOffset"]["field"] == "variant" for v in views)
    [points] = [v for v in views if v["mark"]["type"] == "point"]
    color, shape = points["encoding"]["color"], points["encoding"]["shape"]
    assert color["scale"] == shape["scale"] and color["title"] == shape["title"]   # merged into one legend


def test_figures_of_a_run_that_never_updated_are_refused():
    """Every GSPO step skipped (no group had a reward difference): the dynamics, training and diagnostics figures
    say so and draw nothing; one updated step is enough to draw them."""
    steps = DYNAMICS.with_columns(pl.lit(True).alias("skipped"), pl.lit(0.1).alias("loss"),
                                  pl.lit(1.0).alias("ratio_mean"), pl.lit(0.2).alias("entropy"))
    for draw in (figures.training_dynamics, tf.gspo_training, tf.gspo_diagnostics):
        with pytest.raises(NoFigureData, match="every one of the run's 3 optimizer steps was skipped"):
            draw(steps)
        draw(steps.with_columns(pl.Series("skipped", [True, False, True])))
