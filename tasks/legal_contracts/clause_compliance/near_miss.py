"""A plausible wrong solution: applies the playbook but misses the governing-law and size exemptions."""
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, min_value, accepted_law, report_name) -> str:
    texts = [" ".join(t.split()) for t in read_files(tools).values()]
    book = next(t for t in texts if "Severity tells us" in t)
    limits = {k: float(re.search(p, book).group(1)) for k, p in {
        "cap": r"between one and (\d+) times", "pay": r"at least (\d+) days to pay", "term": r"no more than (\d+) days'",
        "conf": r"survive at least (\d+) years", "breach": r"within (\d+) hours"}.items()}
    skip = {m for t in texts for m in re.findall(r"approved the higher liability cap in (SC-\d+)", t)}
    who = {"high": "General Counsel", "medium": "Senior Counsel", "low": "Paralegal team"}
    contracts = read_all(tools.list_contracts)
    contract_no = {c["id"]: c["contract_no"] for c in contracts}
    in_scope = {c["id"] for c in contracts if c["annual_value"] >= min_value}
    rows, high = [], set()
    for cl in read_all(tools.list_clauses):
        if cl["contract_id"] not in in_scope:
            continue
        n = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", cl["text"])]
        h, sev = cl["heading"], None
        if h == "Limitation of liability" and contract_no[cl["contract_id"]] not in skip:
            sev = "high" if not n or n[0] < 1 else ("medium" if n[0] > limits["cap"] else None)
        elif h == "Payment":
            sev = "medium" if n[0] < limits["pay"] else None
        elif h == "Governing law":
            sev = None if any(law in cl["text"] for law in ("England", "Scotland", accepted_law)) else "medium"
        elif h == "Termination":
            sev = "medium" if not n or n[0] > limits["term"] else None
        elif h == "Confidentiality":
            sev = "low" if n[0] < limits["conf"] else None
        elif h == "Data protection":
            sev = "high" if n[0] > limits["breach"] else None
        if sev:
            iid = tools.raise_issue(contract_id=cl["contract_id"], clause=h, severity=sev)["issue_id"]
            tools.assign_issue(issue_id=iid, reviewer=who[sev])
            rows.append(f"| {contract_no[cl['contract_id']]} | {h} | {sev} |")
            if sev == "high":
                high.add(cl["contract_id"])
    tools.write_file(path=report_name, content="| contract_no | clause | severity |\n|---|---|---|\n" + "\n".join(rows))
    return f"Contracts with a high-severity issue: {len(high)}"
