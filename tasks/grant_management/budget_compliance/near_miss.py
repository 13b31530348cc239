"""A plausible wrong solution: applies the rules but ignores the sponsors' prior-approval letters,
so approved charges are moved too."""
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_pi, min_amount, report_name) -> str:
    terms = read_files(tools, "policies/terms_*")
    caps, trips, banned = {}, set(), set()
    for text in terms.values():
        sponsor = text.splitlines()[0][2:].split(":")[0]
        m = re.search(r"more than ([\d,]+) dollars", text)
        if m:
            caps[sponsor] = float(m.group(1).replace(",", ""))
        if "international travel" in text:
            trips.add(sponsor)
        if "not an allowable cost" in text:
            banned.add(sponsor)
    awards = {a["id"]: a for a in read_all(tools.list_awards)}
    lines, totals = [], {}
    for e in read_all(tools.list_expenses):
        a = awards[e["award_id"]]
        if e["account"] != "grant" or a["pi"] == excluded_pi or e["amount"] < min_amount:
            continue
        if (e["posted_on"] < a["start_date"] or e["posted_on"] > a["end_date"] or e["category"] == "hospitality"
                or (e["category"] == "equipment" and (a["sponsor"] in banned or e["amount"] > caps.get(a["sponsor"], 1e12)))
                or (e["category"] == "travel_international" and a["sponsor"] in trips)):
            tools.transfer_expense(expense_id=e["id"], reason="unallowable")
            lines.append(f"{e['id']},{a['award_number']},{e['amount']:.2f},unallowable")
            totals[a["award_number"]] = totals.get(a["award_number"], 0) + e["amount"]
    tools.write_file(path=report_name, content="expense_id,award_number,amount,reason\n" + "\n".join(lines))
    top = max(totals, key=totals.get)
    return f"Moved {sum(totals.values()):.2f} in total; most came off {top}."
