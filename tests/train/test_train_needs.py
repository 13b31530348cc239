"""`progagent train needs`: the teacher's needs per task and harness against the model's positions (the README's
DTC table over the pool comes from it), and its bad input."""
import csv
from pathlib import Path

from progagent_lib.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_needs_table_and_csv(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    out = tmp_path / "needs.csv"
    assert main(["train", "needs", "--task", "retail/restock_orders", "--harness", "ptc,dtc", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "per harness (smollm2: 8192 positions; v0, seed 0)" in printed
    rows = {r["harness"]: r for r in csv.DictReader(out.open())}
    assert set(rows) == {"ptc", "dtc"} and all(float(r["reward"]) == 1.0 for r in rows.values())
    # the PTC teacher fits the model's positions, the DTC teacher (one call per turn, 39 turns) does not
    assert rows["ptc"]["fits_positions"] == "true" and rows["dtc"]["fits_positions"] == "false"
    assert int(rows["dtc"]["turns"]) > int(rows["ptc"]["turns"]) == 4


def test_needs_refuses_bad_input(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    assert main(["train", "needs", "--harness", "ptcc"]) == 2
    assert "--harness 'ptcc': unknown harness(es) ['ptcc']; choose from dtc, ptc, hybrid" in capsys.readouterr().err
    assert main(["train", "needs", "--task", "retail/restok_orders"]) == 2
    assert "--task 'retail/restok_orders': no such task" in capsys.readouterr().err
