"""The reference solution as the verifier's truth: the oracle's final state is built once per instance and cached, and
the ready criteria (task/criteria.py) compare an episode's state with it, reading what the program wrote as hostile
input (bounded, linear-time). Tasks in the earlier format (hand-written criteria, a near miss with its own solve())
keep loading and certifying."""
import json
import os
import textwrap

import pytest

from progagent_lib import load_task
from progagent_lib.task import TaskLoadError
from progagent_lib.task.certify import certify_task
from progagent_lib.task.criteria import MAX_FILE_CHARS, ParseError, compare_json, normalise, parse_rows
from progagent_lib.task.reference import reference_dir

from task.test_task_format import GOOD_ENV, write_task


@pytest.fixture()
def solved(restock_task):
    """A restock_orders episode (v0, seed 0) that the oracle solved, and its answer."""
    env = restock_task.instantiate("v0", 0)
    answer = restock_task.oracle(env.tools)
    yield env, answer
    env.close()


def by_name(result):
    return {c.name: c for c in result.criteria}


def test_the_reference_is_the_oracles_final_state_built_once(restock_task):
    first = reference_dir(restock_task, "v0", 0)
    built = (first / "READY").stat().st_mtime_ns
    assert reference_dir(restock_task, "v0", 0) == first and (first / "READY").stat().st_mtime_ns == built
    env = restock_task.instantiate("v0", 0)
    try:
        answer = restock_task.oracle(env.tools)
        assert env.reference.answer == answer
        params = env.params
        assert env.reference.read(params["report_name"]) == env.read_workspace(params["report_name"])
        orders = "SELECT product_id, supplier_id, quantity FROM purchase_orders ORDER BY id"
        assert env.reference.query(orders) == env.query(orders) != []
    finally:
        env.close()


def test_an_edited_oracle_keys_a_new_reference(tmp_path, monkeypatch):
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    folder = write_task(tmp_path, "ref")
    before = reference_dir(load_task(folder), "v0", 0)
    (folder / "oracle.py").write_text("def solve(tools):\n    return 'the count is ' + str(tools.count())\n")
    after = reference_dir(load_task(folder), "v0", 0)
    assert after != before and (after / "answer.txt").read_text() == "the count is 1"


def test_tables_match_names_the_rows_that_differ(solved):
    env, answer = solved
    order = env.query("SELECT o.id, p.sku FROM purchase_orders o JOIN products p ON p.id = o.product_id LIMIT 1")[0]
    env.db.execute("UPDATE purchase_orders SET quantity = quantity + 1 WHERE id = ?", (order["id"],))
    env.db.commit()  # the verifier's process reads the database file
    criteria = by_name(env.verify(answer))
    assert not criteria["quantities_rounded_to_case_packs"].passed
    assert order["sku"].casefold() in criteria["quantities_rounded_to_case_packs"].detail
    assert criteria["correct_suppliers"].passed and criteria["orders_for_exactly_the_low_stock_products"].passed


def test_a_second_order_for_one_product_fails_the_comparison(solved):
    env, answer = solved
    first = env.query("SELECT product_id, supplier_id, quantity FROM purchase_orders LIMIT 1")[0]
    env.tools.create_purchase_order(**first)
    detail = by_name(env.verify(answer))["orders_for_exactly_the_low_stock_products"]
    assert not detail.passed and "more than once" in detail.detail


def test_file_matches_reads_a_report_as_people_write_it(solved):
    env, answer = solved
    name = env.params["report_name"]
    rows = list(csv_rows(env.read_workspace(name)))
    header, body = rows[0], rows[1:]
    # Other row order, headings in capitals, costs with a currency sign and thousands separators, spaces around cells.
    lines = [",".join(h.upper() for h in header)] + [
        f" {r[0]} ,{r[1]}, {r[2]},\"${float(r[3]):,.2f}\"" for r in reversed(body)]
    env.tools.write_file(path=name, content="\n".join(lines) + "\n")
    assert by_name(env.verify(answer))["report_written"].passed
    env.tools.write_file(path=name, content="\n".join(lines[:-1]) + "\n")
    missing = by_name(env.verify(answer))["report_written"]
    assert not missing.passed and "missing" in missing.detail


def csv_rows(text):
    import csv
    import io

    return csv.reader(io.StringIO(text))


@pytest.mark.parametrize("content, said", [
    ("sku;supplier\n1;2\n", "no column"),
    ("\n\n", "is empty"),
    ("a,b\n" + "1,2\n" * 100_002, "more than 100,000 rows"),
])
def test_a_report_that_cannot_be_read_fails_with_its_reason(solved, content, said):
    env, answer = solved
    env.tools.write_file(path=env.params["report_name"], content=content)
    report = by_name(env.verify(answer))["report_written"]
    assert not report.passed and said in report.detail


def test_a_report_past_the_size_bound_is_not_read(solved):
    env, answer = solved
    path = env.workspace / env.params["report_name"]
    path.write_text("sku,supplier,quantity,cost\n" + "x" * (MAX_FILE_CHARS + 10))
    report = by_name(env.verify(answer))["report_written"]
    assert not report.passed and "characters" in report.detail


def test_a_link_in_place_of_the_report_is_not_followed(solved):
    env, answer = solved
    path = env.workspace / env.params["report_name"]
    secret = env.workspace / "elsewhere.csv"
    os.replace(path, secret)
    os.symlink(secret, path)
    assert not by_name(env.verify(answer))["report_written"].passed


def test_markdown_tables_and_json_compare_by_key_with_a_tolerance():
    md = "# Report\n\n| Category | Vendor | Amount |\n|---|---|---:|\n| Catering | Acme | $1,200.00 |\n\nNotes."
    assert parse_rows(md, "md") == [{"category": "Catering", "vendor": "Acme", "amount": "$1,200.00"}]
    want = {"total": 10.0, "items": [{"id": 1, "v": "A"}, {"id": 2, "v": "B"}]}
    assert compare_json({"Total": "10.004", "items": [{"id": 2, "v": "b"}, {"id": 1, "v": "a "}]}, want, ["id"], 0.01) is None
    assert "items" in compare_json({"total": 10, "items": [{"id": 1, "v": "A"}]}, want, ["id"], 0.01)
    assert "$.total" in compare_json({"total": 11, "items": want["items"]}, want, ["id"], 0.01)
    assert "unexpected 'extra'" in compare_json({**want, "extra": 1}, want, ["id"], 0.01)
    assert normalise("-$1,234.50") == -1234.5 and normalise("12.5%") == 12.5 and normalise("SKU-0001") == "sku-0001"


def test_json_nested_past_the_recursion_limit_is_a_parse_error():
    from progagent_lib.task.criteria import parse_json

    with pytest.raises(ParseError, match="not valid JSON"):
        parse_json("[" * 200_000 + "]" * 200_000)


@pytest.mark.timeout(60)  # a hang guard: a backtracking pattern took 90+ s on such answers
def test_answer_states_reads_a_hostile_answer_in_linear_time(solved):
    env, answer = solved
    total = by_name(env.verify(answer))["total_cost_reported"]
    assert total.passed
    for hostile in ("1," * 9_999, "9" * 19_999 + "x", "1." * 9_999, ("12,345" * 3_000)[:19_999]):
        assert not by_name(env.verify(hostile))["total_cost_reported"].passed


def test_nothing_else_changed_names_the_changed_tables(solved):
    env, answer = solved
    env.db.execute("UPDATE products SET on_hand = on_hand + 1 WHERE id = 1")
    env.final_answer = answer
    changed = env.nothing_else_changed(tables=["suppliers", "products"])
    assert not changed.passed and changed.detail == "changed: products"
    assert env.nothing_else_changed(tables=["suppliers", "sales"]).passed


def test_an_earlier_format_task_loads_and_certifies(tmp_path, monkeypatch):
    """Hand-written criteria and a near miss with its own solve(): users' own tasks keep working."""
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    env_text = GOOD_ENV
    folder = write_task(tmp_path, "old", **{"environment.py": env_text,
                                             "near_miss.py": "def solve(tools):\n    return 'many'\n"})
    task = load_task(folder)
    env = task.instantiate("v0", 0)
    try:
        assert env.verify(task.oracle(env.tools)).reward == 1.0
        assert env.verify(task.near_miss(env.tools)).reward == 0.0
    finally:
        env.close()
    report = certify_task(task, scales=("v0",), seeds=(0,))
    assert "near_miss_R0" in {c.name for c in report.checks}


def test_a_flip_near_miss_is_the_oracle_with_its_mistake(tmp_path, monkeypatch):
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    oracle = "def solve(tools, off_by_one=False):\n    return str(tools.count() + off_by_one)\n"
    task = load_task(write_task(tmp_path, "flip", **{"oracle.py": oracle, "near_miss.py": "flip = {'off_by_one': True}\n"}))
    env = task.instantiate("v0", 0)
    try:
        assert task.near_miss(env.tools) == "2" and task.oracle(env.tools) == "1"
    finally:
        env.close()
    bad = load_task(write_task(tmp_path, "bad_flip", **{"oracle.py": oracle, "near_miss.py": "flip = {'typo': True}\n"}))
    with pytest.raises(TaskLoadError, match=r"tmp/bad_flip.*near_miss.py.*flip names \['typo'\]"):
        bad.near_miss(None, {})


def test_a_task_built_on_comparisons_certifies_with_its_near_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    env_text = GOOD_ENV.split("    def criteria")[0] + textwrap.dedent('''
        def criteria(self, final_response):
            return [self.answer_states(int(self.reference.answer), criterion="count_said"),
                    self.nothing_else_changed()]
    ''').replace("\n", "\n    ").rstrip() + "\n"
    oracle = "def solve(tools, off_by_one=False):\n    return str(tools.count() + off_by_one)\n"
    task = load_task(write_task(tmp_path, "compare", **{"environment.py": env_text, "oracle.py": oracle,
                                                        "near_miss.py": "flip = {'off_by_one': True}\n"}))
    env = task.instantiate("v0", 0)
    try:
        assert env.verify(task.oracle(env.tools)).reward == 1.0
        near = env.verify(task.near_miss(env.tools))
        assert near.reward == 0.0 and near.score == 0.5 and json.dumps(near.to_dict())
    finally:
        env.close()


def test_answer_states_any_of_ties_and_ignores_the_numbers_inside_ids(solved):
    env, answer = solved
    env.final_answer = "Recall RC-26-123 is done; 7 notices sent, Northwind leads."
    assert not env.answer_states(26).passed and not env.answer_states(123).passed and env.answer_states(7).passed
    assert env.answer_states(["Northwind", "Keystone"], any_of=True).passed
    assert not env.answer_states(["Northwind", "Keystone"]).passed
    assert env.answer_states(-4.5, criterion="n").passed is False
    env.final_answer = "net -4.50 after refunds"
    assert env.answer_states(-4.5).passed


def test_a_tolerance_per_column(solved):
    env, answer = solved
    name = env.params["report_name"]
    rows = list(csv_rows(env.read_workspace(name)))
    bumped = [rows[0]] + [[r[0], r[1], str(int(r[2])), f"{float(r[3]) + 0.004:.3f}"] for r in rows[1:]]
    env.tools.write_file(path=name, content="\n".join(",".join(r) for r in bumped) + "\n")
    assert env.file_matches(name, key="sku", tolerance={"cost": 0.005}).passed
    assert not env.file_matches(name, key="sku", tolerance={"cost": 0.001}).passed
    assert not env.file_matches(name, key="sku", tolerance={"quantity": 0.005}).passed  # cost: exact
