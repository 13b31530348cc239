import re

from progagent_lib.task.oracle_kit import read_all, read_files


def _num(match):
    return float(match.group(1).replace(",", ""))


def solve(tools, min_value, accepted_law, report_name, apply_exemptions=True) -> str:
    docs = {p: " ".join(t.split()) for p, t in read_files(tools).items()}
    book = next(t for t in docs.values() if "playbook" in t.lower() and "Severity tells us" in t)
    cap_max = _num(re.search(r"between one and (\d+) times", book))
    pay_min = _num(re.search(r"at least (\d+) days to pay", book))
    term_max = _num(re.search(r"on no more than (\d+) days' notice", book))
    small = _num(re.search(r"worth less than ([\d,]+) pounds", book))
    conf_min = _num(re.search(r"survive at least (\d+) years", book))
    breach_max = _num(re.search(r"notified within\s+(\d+) hours", book))
    reviewer = {"high": "General Counsel", "medium": "Senior Counsel", "low": "Paralegal team"}
    waived = set()
    for text in docs.values():
        m = re.search(r"approved the\s+higher liability cap in (SC-\d{5})", text)
        if m:
            waived.add((m.group(1), "Limitation of liability"))

    contracts = {c["id"]: c for c in read_all(tools.list_contracts)}
    issues = []
    for cl in read_all(tools.list_clauses):
        c, text, heading = contracts[cl["contract_id"]], cl["text"], cl["heading"]
        if c["annual_value"] < min_value:
            continue
        severity = None
        if heading == "Limitation of liability":
            cap = re.search(r"capped at ([\d.]+) times", text)
            if cap is None or float(cap.group(1)) < 1:
                severity = "high"
            elif float(cap.group(1)) > cap_max:
                severity = "medium"
        elif heading == "Payment" and _num(re.search(r"within (\d+) days", text)) < pay_min:
            severity = "medium"
        elif heading == "Governing law":
            law = re.search(r"laws of (.+?)\.$", text).group(1)
            licence_law = apply_exemptions and law == "New York" and c["contract_type"] == "licence"
            if law not in ("England and Wales", "Scotland", accepted_law) and not licence_law:
                severity = "medium"
        elif heading == "Termination" and (c["annual_value"] >= small or not apply_exemptions):
            notice = re.search(r"giving (\d+) days' written notice", text)
            if notice is None or int(notice.group(1)) > term_max:
                severity = "medium"
        elif heading == "Confidentiality" and _num(re.search(r"survive for (\d+) years", text)) < conf_min:
            severity = "low"
        elif heading == "Data protection" and _num(re.search(r"within (\d+) hours", text)) > breach_max:
            severity = "high"
        if severity and (c["contract_no"], heading) not in waived:
            issues.append((c["contract_no"], heading, severity, c["id"]))

    issues.sort()
    for number, heading, severity, cid in issues:
        issue = tools.raise_issue(contract_id=cid, clause=heading, severity=severity)
        tools.assign_issue(issue_id=issue["issue_id"], reviewer=reviewer[severity])
    columns = "contract_no | clause | severity"  # as the request names them
    table = [f"| {columns} |", "|---|---|---|"]
    table += [f"| {n} | {h} | {s} |" for n, h, s, _ in issues]
    tools.write_file(path=report_name, content="\n".join(table) + "\n")
    high = {n for n, _, s, _ in issues if s == "high"}
    return f"{len(high)} contracts have at least one high-severity issue ({len(issues)} issues logged in total)."
