import re
from datetime import date, datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def months_later(d, months):
    y, m = divmod(d.month - 1 + months, 12)
    day = d.day
    while True:
        try:
            return date(d.year + y, m + 1, day)
        except ValueError:
            day -= 1


def solve(tools, min_value, renegotiated, report_name, apply_amendments=True) -> str:
    today = window = None
    buffer_country, buffer_days, kept = None, 0, set()
    for path, text in read_files(tools).items():
        if "Renewal review" in text and "SUPERSEDED" not in text:
            stamp = re.search(r"as of (\d{1,2} \w+ \d{4})", text).group(1)
            today = datetime.strptime(stamp, "%d %B %Y").date()
            window = int(re.search(r"within the next (\d+) days", text).group(1))
        counsel = re.search(r"counterparties based in ([A-Z][a-z]+).*?as (\d+) days earlier", text, re.S)
        if counsel:
            buffer_country, buffer_days = counsel.group(1), int(counsel.group(2))
        for line in text.splitlines():
            if re.search(r"\bkep[t]?\b|\bkeep\b", line):
                kept |= set(re.findall(r"C-\d{5}", line))

    notice_days = {}
    for a in read_all(tools.list_amendments) if apply_amendments else []:  # signing order: the latest one wins
        m = re.search(r"not less than (\d+) days' written notice", a["summary"])
        if m:
            notice_days[a["contract_id"]] = int(m.group(1))

    parties, due = {}, []
    for c in read_all(tools.list_contracts, status="active"):
        if not c["auto_renew"] or c["contract_no"] in kept:
            continue
        if c["annual_value"] < min_value or c["title"] == f"{renegotiated} agreement":
            continue
        start = date.fromisoformat(c["start_date"])
        months = c["initial_term_months"]
        while months_later(start, months) <= today:
            months += c["renewal_term_months"]
        end = months_later(start, months)
        deadline = end - timedelta(days=notice_days.get(c["id"], c["notice_days"]))
        if c["counterparty_id"] not in parties:
            parties[c["counterparty_id"]] = tools.get_counterparty(counterparty_id=c["counterparty_id"])
        party = parties[c["counterparty_id"]]
        if party["country"] == buffer_country:
            deadline -= timedelta(days=buffer_days)
        if today <= deadline <= today + timedelta(days=window):
            due.append((deadline, c, party, end))

    lines = ["contract_no,counterparty,term_end,notice_deadline"]
    for deadline, c, party, end in sorted(due, key=lambda d: (d[0], d[1]["id"])):
        notice = tools.create_notice(contract_id=c["id"], notice_deadline=deadline.isoformat())
        tools.send_notice(notice_id=notice["notice_id"], recipient_email=party["legal_email"])
        lines.append(f"{c['contract_no']},{party['name']},{end.isoformat()},{deadline.isoformat()}")
    tools.write_file(path=report_name, content="\n".join(lines) + "\n")
    first = min(due, key=lambda d: (d[0], d[1]["id"]))
    return (f"{first[1]['contract_no']} is the most urgent: its notice must reach {first[2]['name']} by "
            f"{first[0].isoformat()}. I raised and sent {len(due)} non-renewal notices in total.")
