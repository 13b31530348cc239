"""`progagent train report RUN_DIR`: a run's tables as Markdown, read from its files, so that docs/results.md and closing
notes quote numbers nobody retyped. Checked on a committed run's real files (figures/cpu-smoke-5c4bde5), whose
numbers docs/results.md states, and on a folder made here for what a real run cannot be made to show."""
import json
import shutil
import subprocess
import sys

from progagent_lib.analysis.profiles import REPO
from progagent_lib.analysis.report import run_report

RUN = REPO / "figures" / "cpu-smoke-5c4bde5"


def test_a_committed_run_gives_the_numbers_docs_results_states():
    text = run_report(RUN)
    # docs/results.md, "cpu-smoke at 5c4bde5": the greedy (b) row, GSPO's steps, the probe and the paired rows
    assert "| (b) 20 | 0/20, 0.00-0.16 (0.14) | 0/20, 0.00-0.16 (0.26) | 15/20, 0.53-0.89 (0.76) |" in text
    assert "| (b) new values only, 10 | 0/10, 0.00-0.28 | 0/10, 0.00-0.28 | 5/10, 0.24-0.76 |" in text
    assert "GSPO updated on 6 of 6 optimizer steps" in text
    assert "+0.100 [+0.000, +0.300] over 5" in text and "seed 7: 1/4 -> 3/4" in text
    assert "| (b) 20, greedy | SFT control -> GSPO | 0.45 | 0.75 | +0.30 (+0.10 to +0.50) | 0 | 6 | 0.0312 |" in text
    assert "| (b) 20, greedy | RFT control -> GSPO | 0.10 | 0.75 | +0.65 (+0.45 to +0.85) | 0 | 13 | < 0.001 |" in text
    assert "sft_ptc 443 s" in text


def test_sampled_rows_get_their_own_table_and_skipped_steps_are_counted(tmp_path):
    rows = [json.loads(line) for line in (RUN / "learning.jsonl").read_text().splitlines()]
    sampled = [{**r, "decoding": "sampled", "temperature": 0.7, "passed": 1, "pass_rate": 0.5} for r in rows[:3]]
    (tmp_path / "learning.jsonl").write_text("\n".join(json.dumps(r) for r in rows + sampled) + "\n")
    (tmp_path / "gspo-ptc").mkdir()  # a pipeline's layout: the dynamics one level down
    (tmp_path / "gspo-ptc" / "dynamics.jsonl").write_text(
        '{"step": 1, "pass": 1, "skipped": true, "pass_rate": 0.0}\n{"step": 2, "pass": 1, "pass_rate": 0.5}\n'
    )
    text = run_report(tmp_path)
    assert "PTC recipe, sampled, 1 per instance (T = 0.7)" in text
    assert "GSPO updated on 1 of 2 optimizer steps" in text
    assert "(paired.json: not in this run)" in text


def test_a_bad_folder_or_line_is_one_line_and_a_failing_status(tmp_path):
    def results(folder):
        return subprocess.run([sys.executable, "-m", "progagent_lib.cli", "train", "report", str(folder)], cwd=REPO,
                              capture_output=True, text=True)

    done = results(tmp_path / "nowhere")
    assert done.returncode != 0 and done.stderr.count("\n") == 1 and "no such run folder" in done.stderr
    shutil.copy(RUN / "learning.jsonl", tmp_path / "learning.jsonl")
    with open(tmp_path / "learning.jsonl", "a") as f:
        f.write("[1, 2]\n")
    done = results(tmp_path)
    assert done.returncode != 0 and done.stderr.count("\n") == 1 and "not a JSON object" in done.stderr
