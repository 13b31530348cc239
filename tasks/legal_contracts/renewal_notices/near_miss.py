"""A plausible wrong solution: reads the memo and exceptions but ignores signed amendments."""
import re
from datetime import date, datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def _shift(d, months):
    total = d.year * 12 + d.month - 1 + months
    return date(total // 12, total % 12 + 1, min(d.day, 28))


def solve(tools, min_value, renegotiated, report_name) -> str:
    texts = read_files(tools)
    memo = next(t for t in texts.values() if "current cycle" in t and "SUPERSEDED" not in t)
    today = datetime.strptime(re.search(r"as of (\d+ \w+ \d{4})", memo).group(1), "%d %B %Y").date()
    horizon = today + timedelta(days=int(re.search(r"next (\d+) days", memo).group(1)))
    mail = next(t for t in texts.values() if "registered post" in t)
    country = re.search(r"based in (\w+)", mail).group(1)
    shift = int(re.search(r"as (\d+) days earlier", mail).group(1))
    kept = {no for t in texts.values() for line in t.splitlines() if "keep" in line or "kept" in line
            for no in re.findall(r"C-\d{5}", line)}
    rows = []
    for c in read_all(tools.list_contracts, status="active"):
        if not c["auto_renew"] or c["contract_no"] in kept or c["annual_value"] < min_value or c["title"].startswith(renegotiated):
            continue
        start, months = date.fromisoformat(c["start_date"]), c["initial_term_months"]
        while _shift(start, months) <= today:
            months += c["renewal_term_months"]
        party = tools.get_counterparty(counterparty_id=c["counterparty_id"])
        deadline = _shift(start, months) - timedelta(days=c["notice_days"] + (shift if party["country"] == country else 0))
        if today <= deadline <= horizon:
            n = tools.create_notice(contract_id=c["id"], notice_deadline=str(deadline))
            tools.send_notice(notice_id=n["notice_id"], recipient_email=party["legal_email"])
            rows.append((str(deadline), c["contract_no"], party["name"], str(_shift(start, months))))
    rows.sort()
    tools.write_file(path=report_name, content="contract_no,counterparty,term_end,notice_deadline\n" +
                     "".join(f"{r[1]},{r[2]},{r[3]},{r[0]}\n" for r in rows))
    return f"Most urgent: {rows[0][1]} (deadline {rows[0][0]}); {len(rows)} notices sent."
