"""The task format: schemas from signatures, validation, verifier maths, scales, cache isolation, bad input."""
import json
import sqlite3
import textwrap
from pathlib import Path

import pytest

from progagent_lib import Criterion, Environment, ToolError, VerifyResult, load_pool, load_task, paginate, tool
from progagent_lib.task import GenerationError, TaskLoadError, VerifierError, state_fingerprint
from progagent_lib.task.certify import certify_paths, certify_task
from progagent_lib.task.tools import ToolDefinitionError, build_spec


# --- schemas -------------------------------------------------------------------------------------
def test_schema_is_derived_from_signature_and_docstring():
    def find_orders(self, customer_id: int, status: str | None = None, limit: int = 10) -> dict:
        """Find a customer's orders.

        Args:
            customer_id: The customer's id.
            status: Only orders in this status,
                for example "open".
            limit: At most this many.
        """

    spec = build_spec(find_orders).openai_schema()["function"]
    assert spec["name"] == "find_orders"
    assert spec["description"] == "Find a customer's orders."
    props = spec["parameters"]["properties"]
    assert props["customer_id"] == {"type": "integer", "description": "The customer's id."}
    assert props["status"]["type"] == ["string", "null"]
    assert props["status"]["description"] == 'Only orders in this status, for example "open".'
    assert props["limit"]["default"] == 10
    assert spec["parameters"]["required"] == ["customer_id"]


@pytest.mark.parametrize(
    "source, problem",
    [
        ("def t(self, x: int):\n    pass", "has no docstring"),
        ('def t(self, x):\n    """Do.\n\n    Args:\n        x: a value.\n    """', "has no type annotation"),
        ('def t(self, x: int):\n    """Do a thing."""', "not described under 'Args:'"),
    ],
)
def test_bad_tool_definitions_are_refused_with_the_tool_named(source, problem):
    namespace = {}
    exec(source, namespace)
    with pytest.raises(ToolDefinitionError, match=problem) as info:
        build_spec(namespace["t"], owner="Env")
    assert "Env.t" in str(info.value)


def test_arguments_are_validated_before_the_tool_runs(restock_task):
    env = restock_task.instantiate("v0", 0)
    try:
        with pytest.raises(ToolError, match="must be integer"):
            env.tools.list_products(page="2")
        with pytest.raises(ToolError, match="unknown parameter"):
            env.call_tool("list_products", {"pages": 2})
        with pytest.raises(ToolError, match="missing required"):
            env.call_tool("get_supplier", {})
        with pytest.raises(ToolError, match="no tool named"):
            env.call_tool("drop_database", {})
        assert [r.ok for r in env.call_log] == [False] * 4
    finally:
        env.close()


def test_a_crashing_tool_becomes_a_tool_error_and_rolls_back(tmp_path):
    class Env(Environment):
        @tool
        def add_and_crash(self, value: int) -> dict:
            """Insert a row, then fail.

            Args:
                value: Value to insert.
            """
            self.db.execute("INSERT INTO t VALUES (?)", (value,))
            return {"x": 1 / 0}

        def criteria(self, final_response):
            return [Criterion("ok", True)]

    con = sqlite3.connect(tmp_path / "d.db")
    con.execute("CREATE TABLE t (v INTEGER)")
    con.commit()
    con.close()
    env = Env(tmp_path / "d.db", tmp_path)
    with pytest.raises(ToolError, match="ZeroDivisionError"):
        env.tools.add_and_crash(value=3)
    assert env.query("SELECT count(*) AS n FROM t")[0]["n"] == 0


def test_pagination_is_bounded():
    items = list(range(120))
    first = paginate(items, 1, page_size=500)
    assert len(first["items"]) == 50 and first["total_pages"] == 3 and first["has_more"]
    assert paginate(items, 3, page_size=50)["has_more"] is False
    with pytest.raises(ToolError, match="past the last page"):
        paginate(items, 4, page_size=50)
    with pytest.raises(ToolError):
        paginate(items, 0)


# --- verifier ------------------------------------------------------------------------------------
def test_dense_score_is_the_weighted_mean_and_reward_needs_every_criterion():
    result = VerifyResult([Criterion("a", True, 3.0), Criterion("b", False, 1.0)])
    assert result.score == pytest.approx(0.75) and result.reward == 0.0
    assert VerifyResult([Criterion("a", True), Criterion("b", True)]).reward == 1.0


# --- state ---------------------------------------------------------------------------------------
def test_episodes_get_private_copies_and_never_touch_the_cache(restock_task):
    cached = restock_task.state_dir("v0", 0)
    fingerprint = (cached / "READY").read_text()
    first, second = restock_task.instantiate("v0", 0), restock_task.instantiate("v0", 0)
    try:
        first.tools.create_purchase_order(product_id=1, supplier_id=1, quantity=5)
        first.tools.write_file(path="scratch.txt", content="mine")
        assert second.query("SELECT count(*) AS n FROM purchase_orders")[0]["n"] == 0
        assert not (second.workspace / "scratch.txt").exists()
        assert state_fingerprint(cached / "data.db", cached / "workspace") == fingerprint
    finally:
        first.close()
        second.close()
    assert not first.episode_dir.exists()


def test_scales_grow_rows_and_files_and_keep_prompt_and_tools(restock_task):
    envs = {s: restock_task.instantiate(s, 0) for s in ("v0", "v3")}
    try:
        products = {s: e.query("SELECT count(*) AS n FROM products")[0]["n"] for s, e in envs.items()}
        files = {s: sum(1 for p in e.workspace.rglob("*") if p.is_file()) for s, e in envs.items()}
        assert products["v3"] == 8 * products["v0"]
        assert files["v3"] > 2.5 * files["v0"]
        assert envs["v0"].tool_schemas() == envs["v3"].tool_schemas()
    finally:
        for env in envs.values():
            env.close()


def test_different_seeds_give_different_states(restock_task):
    assert (restock_task.state_dir("v0", 0) / "READY").read_text() != (restock_task.state_dir("v0", 1) / "READY").read_text()


def test_authors_interface_tools_mapping_and_step(restock_task):
    env = restock_task.instantiate("v0", 0)
    try:
        assert callable(env.tools["list_products"]) and "list_products" in dict(env.tools)
        assert env.get_assistant_tools() == env.tool_schemas()
        reward, info = env.step({"name": "get_supplier", "arguments": json.dumps({"supplier_id": 999})})
        assert reward == 0.0 and info["is_error"] and "no supplier" in info["observation"]
        reward, info = env.step({"name": "claim_done", "arguments": {"action": "nothing to do"}})
        assert reward == 0.0 and info["done"] and len(info["criteria"]) >= 4
    finally:
        env.close()


# --- bad task folders ----------------------------------------------------------------------------
GOOD_ENV = textwrap.dedent('''
    from progagent_lib import Criterion, Environment, tool

    class Env(Environment):
        @tool
        def count(self) -> int:
            """Count rows."""
            return self.query("SELECT count(*) AS n FROM t")[0]["n"]

        def criteria(self, final_response):
            return [Criterion("said", final_response == "1")]
''')


def write_task(root: Path, name: str, **overrides) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    files = {
        "task.toml": f'id = "tmp/{name}"\ndomain = "tmp"\ntitle = "A test task"\n',
        "prompt.md": "Count the rows.",
        "generator.py": "def generate(ctx):\n    ctx.db.execute('CREATE TABLE t (v)')\n    ctx.db.execute('INSERT INTO t VALUES (1)')\n",
        "environment.py": GOOD_ENV,
        "oracle.py": "def solve(tools):\n    return str(tools.count())\n",
    }
    files.update(overrides)
    for filename, text in files.items():
        if text is not None:
            (folder / filename).write_text(text)
    return folder


def test_bad_task_folders_name_the_task_the_file_and_the_problem(tmp_path, monkeypatch):
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    with pytest.raises(TaskLoadError, match=r"bad_toml.*task.toml.*not valid TOML"):
        load_task(write_task(tmp_path, "bad_toml", **{"task.toml": "id = ["}))
    with pytest.raises(TaskLoadError, match=r"missing file\(s\) oracle.py"):
        load_task(write_task(tmp_path, "no_oracle", **{"oracle.py": None}))
    with pytest.raises(TaskLoadError, match=r"tmp/no_verifier.*environment.py.*defines no criteria"):
        load_task(write_task(tmp_path, "no_verifier", **{"environment.py": GOOD_ENV.split("    def criteria")[0]}))
    with pytest.raises(TaskLoadError, match=r"tmp/no_doc.*environment.py.*no docstring"):
        load_task(write_task(tmp_path, "no_doc", **{"environment.py": GOOD_ENV.replace('"""Count rows."""', "pass")}))
    crashing = load_task(write_task(tmp_path, "gen_raises", **{"generator.py": "def generate(ctx):\n    raise ValueError('boom')\n"}))
    with pytest.raises(GenerationError, match=r"tmp/gen_raises.*generator.py.*boom"):
        crashing.instantiate("v0", 0)
    bad_verifier = load_task(write_task(tmp_path, "verifier_raises", **{"environment.py": GOOD_ENV.replace(
        'return [Criterion("said", final_response == "1")]', "raise KeyError('oops')")}))
    env = bad_verifier.instantiate("v0", 0)
    with pytest.raises(VerifierError, match=r"tmp/verifier_raises.*environment.py.*KeyError"):
        env.verify("1")
    env.close()


PARAM_GENERATOR = textwrap.dedent('''
    def params(ctx):
        return {"limit": ctx.rng.choice([1, 2, 3, 4, 5]), "label": ctx.rng.choice(["a", "b", "c", "d"])}

    def generate(ctx):
        ctx.db.execute("CREATE TABLE t (v)")
        ctx.db.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(ctx.params["limit"])])
''')
PARAM_PROMPT = "Count at most {limit} rows and call the result {label}. Braces stay: {{not a placeholder}}."
PARAM_ORACLE = "def solve(tools, limit, label):\n    return f'{label}={tools.count()}'\n"


def test_instance_parameters_render_and_reach_the_environment_and_the_oracle(tmp_path, monkeypatch):
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    env_code = GOOD_ENV.replace('return [Criterion("said", final_response == "1")]',
                                'return [Criterion("said", final_response == f"{self.params[\'label\']}={self.params[\'limit\']}")]')
    task = load_task(write_task(tmp_path, "param", **{"generator.py": PARAM_GENERATOR, "prompt.md": PARAM_PROMPT,
                                                      "oracle.py": PARAM_ORACLE, "environment.py": env_code}))
    assert task.parametrised and task.param_names == ("limit", "label")
    draws = [task.params_for(seed) for seed in range(8)]
    assert len({json.dumps(d, sort_keys=True) for d in draws}) > 1, "different seeds draw different parameters"
    assert task.params_for(3) == task.params_for(3)
    env = task.instantiate("v2", 3)
    try:
        assert env.params == draws[3]
        assert env.instruction == (f"Count at most {draws[3]['limit']} rows and call the result {draws[3]['label']}. "
                                   "Braces stay: {not a placeholder}.")
        assert env.verify(task.oracle(env.tools)).reward == 1.0       # the oracle takes env.params by default
        other = next(d for d in draws if d != draws[3])
        assert env.verify(task.oracle(env.tools, other)).reward == 0.0
    finally:
        env.close()
    # the same parameters at every scale
    for scale in ("v0", "v3"):
        other_scale = task.instantiate(scale, 3)
        assert other_scale.params == draws[3]
        other_scale.close()


def test_bad_instance_parameters_are_refused_naming_the_task_and_the_parameter(tmp_path, monkeypatch):
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    base = {"generator.py": PARAM_GENERATOR, "prompt.md": PARAM_PROMPT, "oracle.py": PARAM_ORACLE}

    def load(name, **changes):
        return load_task(write_task(tmp_path, name, **{**base, **changes}))

    load("fine")
    with pytest.raises(TaskLoadError, match=r"tmp/unknown_placeholder.*prompt.md.*\{region\} names no parameter"):
        load("unknown_placeholder", **{"prompt.md": PARAM_PROMPT + " Skip {region}."})
    with pytest.raises(TaskLoadError, match=r"tmp/unmentioned.*prompt.md.*parameter 'label' is never mentioned"):
        load("unmentioned", **{"prompt.md": "Count at most {limit} rows."})
    with pytest.raises(TaskLoadError, match=r"tmp/no_params.*placeholder\(s\) \{limit\}.*nor generator.py params\(ctx\) draws"):
        load("no_params", **{"generator.py": "def generate(ctx):\n    pass\n", "prompt.md": "Count {limit}."})
    with pytest.raises(TaskLoadError, match=r"tmp/by_scale.*must not depend on the scale.*ctx.scale"):
        load("by_scale", **{"generator.py": PARAM_GENERATOR.replace('ctx.rng.choice([1, 2, 3, 4, 5])',
                                                                     '{"v0": 1}.get(ctx.scale, 2)')})
    with pytest.raises(TaskLoadError, match=r"tmp/clock.*not deterministic.*\['limit'\]"):
        load("clock", **{"generator.py": "import time\n" + PARAM_GENERATOR.replace(
            'ctx.rng.choice([1, 2, 3, 4, 5])', 'time.perf_counter_ns()')})
    with pytest.raises(TaskLoadError, match=r"tmp/not_json.*parameter 'label'.*is not a JSON value"):
        load("not_json", **{"generator.py": PARAM_GENERATOR.replace('ctx.rng.choice(["a", "b", "c", "d"])', '("a", "b")')})
    with pytest.raises(TaskLoadError, match=r"tmp/oracle_without.*oracle.py.*does not take the parameter\(s\) \['limit', 'label'\]"):
        load("oracle_without", **{"oracle.py": "def solve(tools):\n    return ''\n"})
    with pytest.raises(TaskLoadError, match=r"tmp/bad_name.*placeholder \{1x\} is not a parameter name"):
        load("bad_name", **{"prompt.md": PARAM_PROMPT + " {1x}"})
    # certification: a task whose other draws pass with one fixed program is caught
    fixed_env = GOOD_ENV.replace('return [Criterion("said", final_response == "1")]', 'return [Criterion("said", True)]')
    report = certify_task(load("one_program", **{"environment.py": fixed_env}), scales=["v0"], seeds=[0])
    assert [c.passed for c in report.checks if c.name == "one_program_cannot_pass_all"] == [False] * 4
    assert {c.name: c.passed for c in report.checks}["param_values_ge_4"]


def test_a_params_table_in_task_toml_draws_what_the_function_it_replaces_drew(tmp_path, monkeypatch):
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    base = {"generator.py": PARAM_GENERATOR, "prompt.md": PARAM_PROMPT, "oracle.py": PARAM_ORACLE}
    by_function = load_task(write_task(tmp_path / "function", "same", **base))  # the same id: the same stream
    table = '[params]\nlimit = [1, 2, 3, 4, 5]\nlabel = ["a", "b", "c", "d"]\n'
    generator = PARAM_GENERATOR.split("def generate")[1].replace("ctx.params[\"limit\"]", "max(ctx.choices(\"limit\"))")
    toml = 'id = "tmp/same"\ndomain = "tmp"\ntitle = "A test task"\n' + table
    by_table = load_task(write_task(tmp_path / "table", "same", **{**base, "generator.py": "def generate" + generator,
                                                                  "task.toml": toml}))
    assert by_table.param_names == ("limit", "label")
    assert [by_table.params_for(s) for s in range(16)] == [by_function.params_for(s) for s in range(16)]
    env = by_table.instantiate("v0", 2)
    try:
        assert env.query("SELECT count(*) AS n FROM t")[0]["n"] == 5  # ctx.choices reads the same lists
    finally:
        env.close()
    with pytest.raises(TaskLoadError, match=r"both task.toml \[params\] and generator.py params\(ctx\); keep one"):
        load_task(write_task(tmp_path, "both", **{**base, "task.toml": toml.replace("same", "both")}))
    empty = toml.replace("same", "empty").replace("[1, 2, 3, 4, 5]", "[]")
    with pytest.raises(TaskLoadError, match=r"tmp/empty.*\[params\] limit must be a non-empty list"):
        load_task(write_task(tmp_path, "empty", **{**base, "generator.py": "def generate" + generator, "task.toml": empty}))


def test_a_generator_writes_workspace_files_with_their_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    task = load_task(write_task(tmp_path, "writes", **{"generator.py": (
        "def generate(ctx):\n    ctx.db.execute('CREATE TABLE t (v)')\n    ctx.db.execute('INSERT INTO t VALUES (1)')\n"
        "    ctx.write('docs/policy/rules.md', '# Rules')\n")}))
    env = task.instantiate("v0", 0)
    try:
        assert (env.workspace / "docs" / "policy" / "rules.md").read_text() == "# Rules"
        assert env.facts == {}   # none recorded
    finally:
        env.close()


def test_facts_for_the_verifier_alone_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    task = load_task(write_task(tmp_path, "facts", **{"generator.py": (
        "def generate(ctx):\n    ctx.db.execute('CREATE TABLE t (v)')\n    ctx.db.execute('INSERT INTO t VALUES (1)')\n"
        "    ctx.facts(suspended=3, delisted=['SKU-1', 'SKU-2'])\n    ctx.facts(note='kept')\n")}))
    env = task.instantiate("v0", 0)
    try:
        assert env.facts == {"suspended": 3, "delisted": ["SKU-1", "SKU-2"], "note": "kept"}
    finally:
        env.close()


def test_certify_reports_broken_tasks_and_goes_on(tmp_path, monkeypatch):
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    write_task(tmp_path / "pool", "fine")
    write_task(tmp_path / "pool", "broken", **{"generator.py": "def generate(ctx):\n    raise RuntimeError('no state')\n"})
    write_task(tmp_path / "pool", "unloadable", **{"task.toml": "nonsense"})
    report = certify_paths([tmp_path / "pool"], scales=["v0"], seeds=[0], progress=False)
    failed = {c.task for c in report.failures()}
    assert any("broken" in t for t in failed) and any("unloadable" in t for t in failed)
    fine = [c for c in report.checks if c.task == "tmp/fine"]
    assert fine and {c.name for c in fine if c.passed} >= {"oracle_R1", "deterministic", "empty_R0"}
    # the toy task is not long-horizon, and certification says so
    assert {c.name for c in fine if not c.passed} >= {"uses_3_tools", "multi_page", "criteria_ge_4"}
    assert load_pool(tmp_path / "pool", strict=False) and not report.passed


def test_nondeterministic_generator_is_caught(tmp_path, monkeypatch):
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    write_task(tmp_path, "clock", **{"generator.py": (
        "import time\ndef generate(ctx):\n    ctx.db.execute('CREATE TABLE t (v)')\n"
        "    ctx.db.execute('INSERT INTO t VALUES (?)', (time.time_ns(),))\n")})
    report = certify_paths([tmp_path / "clock"], scales=["v0"], seeds=[0], progress=False)
    assert [c.passed for c in report.checks if c.name == "deterministic"] == [False]


def test_query_page_matches_paginate_and_require_row_names_the_missing_record(restock_task):
    env = restock_task.instantiate("v1", 0)
    try:
        sql = "SELECT id, sku FROM products ORDER BY id"
        for page in (1, 2, 6):
            assert env.query_page(sql, (), page) == paginate(env.query(sql), page)
        with pytest.raises(ToolError, match="past the last page"):
            env.query_page(sql, (), 7)
        assert env.query_page("SELECT id FROM products WHERE category = :c ORDER BY id", {"c": "snacks"}, 1)["total"] > 0
        assert env.require_row("suppliers", 1)["id"] == 1
        with pytest.raises(ToolError, match="no supplier with id 999; use get_supplier"):
            env.require_row("suppliers", 999, "use get_supplier")
    finally:
        env.close()


def test_a_listings_page_parameter_needs_no_description_but_others_do():
    from progagent_lib.task.tools import ToolDefinitionError, build_spec

    def list_rows(self, page: int = 1, kind: str = "") -> dict:
        """List rows, 20 per page.

        Args:
            kind: Only rows of this kind when non-empty.
        """

    properties = build_spec(list_rows).parameters["properties"]
    assert properties["page"]["description"] == "1-based page number." and properties["page"]["default"] == 1
    list_rows.__doc__ = "List rows, 20 per page."
    with pytest.raises(ToolDefinitionError, match="parameter 'kind' is not described"):
        build_spec(list_rows)
