"""The grounded-literal rate (policy.grounding) and the teacher that reads before it writes (policy.reading)."""
from progagent_lib.harness.episode import Limits, run_episode
from progagent_lib.policy.grounding import Literal, episode_grounding, is_grounded, program_literals, regex_runs
from progagent_lib.policy.oracle import OracleTeacher

UNLIMITED = Limits(max_tool_calls=None, max_turns=None, max_context_tokens=None)


def program_message(code: str) -> dict:
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "programmatic_tool_call", "arguments": {"code": code}}}]}


def test_an_ungrounded_literal_fails_and_printing_its_source_grounds_it():
    solution = ("held = re.search(r'Subject: Hold on (.+)', text)\n"
                "if 'must not be reordered' in text and p['on_hand'] < 0.15 * p['target']:\n"
                "    print(f'held {held}')\n")
    asked = [{"role": "system", "content": "You write programs."},
             {"role": "user", "content": "Reorder what is low."},
             {"role": "tool", "content": "{'sku': 'SKU-1', 'on_hand': 3, 'target': 40}"}]
    before = episode_grounding([*asked, program_message(solution)])
    assert sorted(str(lit.value) for lit in before.ungrounded) == [
        "0.15", "Subject: Hold on (.+)", "must not be reordered"]
    assert before.rate < 1.0
    document = {"role": "tool", "content": "Subject: Hold on Keystone\n\nThese lines must not be reordered unless "
                                           "stock falls below 0.15 of target."}
    after = episode_grounding([*asked, document, program_message(solution)])
    assert after.ungrounded == [] and after.rate == 1.0
    # what was printed after the program does not ground it
    late = episode_grounding([*asked, program_message(solution), document])
    assert len(late.ungrounded) == 3


def test_what_is_a_literal_and_what_is_the_programs_own_wording():
    code = ('"""Docstring."""\n'
            "print('Total:', total)\n"
            "line = f'{sku},{qty}'\n"
            "stats = {'gf': 0, 'ga': 0}\n"
            "rates = {'standard': 0.2}\n"
            "day = d.strftime('%d %B %Y')\n"
            "x = row['on_hand'] * 100 + 1e-9\n")
    found = {(lit.kind, lit.value) for lit in program_literals(code)}
    # docstrings, print's text, f-string text and date formats are not literals
    assert not {v for _, v in found} & {"Docstring.", "Total:", ",", "%d %B %Y"}
    assert ("name", "gf") in found                      # a key the program defines for its own data
    assert ("text", "standard") in found and ("number", 0.2) in found   # a dict of constants is task knowledge
    assert ("text", "on_hand") in found
    assert is_grounded(Literal(100, "number", 1), "") and is_grounded(Literal(1e-9, "number", 1), "")
    assert not is_grounded(Literal(125, "number", 1), "up to 1250 units") and is_grounded(Literal(125, "number", 1), "to 125% of")
    assert regex_runs(r"invoices dated on or after (\d+ \w+ \d{4}), (.+?) offers") == ["invoices dated on or after ",
                                                                                        " offers"]


def test_the_reading_teacher_shows_every_literal_of_its_solution_and_still_solves(restock_task):
    plain = run_episode(restock_task, "v0", 0, "ptc", OracleTeacher("ptc"), UNLIMITED)
    reading = run_episode(restock_task, "v0", 0, "ptc", OracleTeacher("ptc", reading=True), UNLIMITED)
    assert plain.reward == reading.reward == 1.0
    before, after = episode_grounding(plain.messages, plain.tools), episode_grounding(reading.messages, reading.tools)
    assert {lit.value for lit in before.ungrounded} >= {"Subject: Hold on (.+)", "must not be reordered", "case_pack"}
    assert after.ungrounded == [] and after.rate == 1.0
    assert reading.turns == plain.turns + 1      # one reading program: the notice, the delisting notes, a supplier
    read = next(m for m in reading.messages if m["role"] == "tool" and "Subject: Hold on" in m.get("content", ""))
    assert "must not be reordered" in read["content"] and "case_pack" in read["content"]
    hybrid = run_episode(restock_task, "v0", 0, "hybrid", OracleTeacher("hybrid", reading=True), UNLIMITED)
    assert hybrid.reward == 1.0 and episode_grounding(hybrid.messages, hybrid.tools).rate == 1.0


def test_reads_are_planned_in_rounds_when_one_read_names_the_next():
    """The invitation (a document) shows the offsite's rule phrase and names the city; the hotels of that city show
    the record's key. The hotel read's own argument is only shown once the invitation is printed, so it comes in a
    second round, in a program of its own."""
    from progagent_lib.policy.grounding import program_literals
    from progagent_lib.policy.reading import Read, choose_reads, reading_programs

    invitation = Read("print(tools.read_file(path='invite.md'))", "The offsite is in Lyon; book four-star hotels.", 0)
    hotels = Read("print(tools.list_hotels(city='Lyon'))", "[{'id': 1, 'nightly_rate': 120}]", 1)
    needed = program_literals("rule = 'book four-star hotels'\nrate = hotel['nightly_rate']")
    seen = "listing: invite.md"
    planned = choose_reads(needed, [hotels, invitation], seen)
    assert planned == [[invitation], [hotels]]
    assert reading_programs(planned) == [invitation.code, hotels.code]
    assert choose_reads(needed, [hotels, invitation], seen, rounds=1) == [[invitation]]


def test_a_document_on_an_unprinted_listing_page_is_unblocked_by_printing_that_page():
    """The rule's document is on the listing's second page, which the first look did not print: the reading prints
    that page first (the read the document's path needs), then the document, in a later program."""
    from progagent_lib.policy.grounding import program_literals
    from progagent_lib.policy.reading import Read, choose_reads, reading_programs

    page = Read("print(tools.list_files(page=2)['items'])", "[{'path': 'policies/returns.md', 'bytes': 90}]", 0)
    document = Read("print(tools.read_file(path='policies/returns.md'))", "Refunds within 30 days are approved.", 1)
    needed = program_literals("rule = 'Refunds within'")
    planned = choose_reads(needed, [document, page], "a page's items; 20 workspace files: ['notes/a.md', ...]")
    assert planned == [[page], [document]]
    assert reading_programs(planned) == [page.code, document.code]
