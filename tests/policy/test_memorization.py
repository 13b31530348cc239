"""The memorization baseline (teacher turns of one instance replayed on another) and the Wilson interval."""
import textwrap

import pytest

from progagent_lib import load_task
from progagent_lib.analysis.memorization import memorization_summary, memorization_table
from progagent_lib.analysis.stats import wilson_interval
from progagent_lib.harness import run_episode
from progagent_lib.policy import MemorizationPolicy, make_policy

from task.test_task_format import write_task

# A toy task whose correct answer is a function of the data (different per seed) and, in its parametrised
# form, of two parameters with few values, so that some seeds draw the training seed's parameters again.
TOY_ENV = textwrap.dedent('''
    from progagent_lib import Criterion, Environment, tool

    class Env(Environment):
        @tool
        def count(self) -> int:
            """Count rows."""
            return self.query("SELECT count(*) AS n FROM t")[0]["n"]

        @tool
        def record(self, value: str) -> str:
            """Record the result.

            Args:
                value: The text to record.
            """
            self.db.execute("INSERT INTO results VALUES (?)", (value,))
            return value

        def criteria(self, final_response):
            n = self.query("SELECT count(*) AS n FROM t")[0]["n"]
            want = f"{self.params.get('label', 'n')}={n * self.params.get('factor', 1)}"
            got = [r["v"] for r in self.query("SELECT v FROM results")]
            return [Criterion("recorded", got == [want]), Criterion("said", want in final_response)]
''')
TOY_GENERATOR = textwrap.dedent('''
    def generate(ctx):
        ctx.db.execute("CREATE TABLE t (v)")
        ctx.db.execute("CREATE TABLE results (v)")
        ctx.db.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(ctx.rng.randint(3, 30))])
''')
TOY_PARAMS = textwrap.dedent('''
    def params(ctx):
        return {"label": ctx.rng.choice(["a", "b"]), "factor": ctx.rng.choice([1, 2])}
''')


@pytest.fixture
def toy_tasks(tmp_path, monkeypatch):
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    fixed = load_task(write_task(tmp_path, "fixed", **{
        "environment.py": TOY_ENV, "generator.py": TOY_GENERATOR, "prompt.md": "Count the rows and record n=<count>.",
        "oracle.py": "def solve(tools):\n    v = f'n={tools.count()}'\n    tools.record(value=v)\n    return v\n"}))
    varied = load_task(write_task(tmp_path, "varied", **{
        "environment.py": TOY_ENV, "generator.py": TOY_GENERATOR + TOY_PARAMS,
        "prompt.md": "Count the rows, multiply by {factor} and record it as {label}=<result>.",
        "oracle.py": ("def solve(tools, label, factor):\n    v = f'{label}={tools.count() * factor}'\n"
                      "    tools.record(value=v)\n    return v\n")}))
    return fixed, varied


def oracle_answer(task, seed):
    env = task.instantiate("v0", seed)
    try:
        return task.oracle(env.tools)
    finally:
        env.close()


@pytest.mark.parametrize("harness", ["ptc", "hybrid"])
def test_a_memorised_program_passes_exactly_the_instances_one_fixed_program_solves(toy_tasks, harness):
    fixed, varied = toy_tasks
    policy = MemorizationPolicy(harness, train_seed=0)
    seeds = range(1, 9)
    # Without parameters the seed-0 program solves every other seed: it reads the data, and that is all it must do.
    assert [run_episode(fixed, "v0", s, harness, policy).reward for s in seeds] == [1.0] * len(seeds)
    # With parameters it passes exactly where a seed draws seed 0's parameters again.
    got = [run_episode(varied, "v0", s, harness, policy).reward for s in seeds]
    want = [float(varied.params_for(s) == varied.params_for(0)) for s in seeds]
    assert got == want and 0.0 in want and 1.0 in want, (got, want)


def test_memorised_direct_calls_pass_only_where_the_answer_is_the_same(toy_tasks):
    """Under DTC the memorised turns are calls with seed 0's literal arguments (its count), not a program; the answer
    handed in is the last observation (here the value `record` echoes)."""
    fixed, varied = toy_tasks
    policy = MemorizationPolicy("dtc", train_seed=0)
    for task in (fixed, varied):
        seeds = [s for s in range(1, 40) if oracle_answer(task, s) == oracle_answer(task, 0)][:2] + [1, 2]
        got = [run_episode(task, "v0", s, "dtc", policy).reward for s in seeds]
        want = [float(oracle_answer(task, s) == oracle_answer(task, 0)) for s in seeds]
        assert got == want and 1.0 in want and 0.0 in want, (task.id, got, want)


def test_memorization_on_a_parametrised_pool_task_and_the_summary(restock_task):
    policy = make_policy("memorize:0", "ptc")
    trajectories = [run_episode(restock_task, "v0", seed, "ptc", policy) for seed in (1000, 1001)]
    # the replayed program is seed 0's, parameters included, and it hands in the last observation
    program = trajectories[0].calls[-2].arguments["code"]
    assert repr(restock_task.params_for(0)["report_name"]) in program
    assert trajectories[0].final_answer == trajectories[0].calls[-2].observation.strip()
    assert [t.reward for t in trajectories] == [0.0, 0.0]
    table = memorization_table(trajectories, [restock_task])
    summary = memorization_summary(table)
    row = summary.row(0, named=True)
    assert row["fail_rate"] == 1.0 and row["instances"] == 2 and row["passed_other_params"] == 0


def test_wilson_interval_against_known_values():
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson_interval(81, 263) == pytest.approx((0.2553, 0.3662), abs=1e-4)
    assert wilson_interval(4, 4) == pytest.approx((0.5101, 1.0), abs=1e-4)
    assert wilson_interval(0, 4) == pytest.approx((0.0, 0.4899), abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="passed <= total"):
        wilson_interval(5, 4)
