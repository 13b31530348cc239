import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, skipped_system, skipped_department, report_name, check_exception_end=True) -> str:
    day = lambda s: dt.datetime.strptime(s, "%d %B %Y").date()
    texts = read_files(tools)
    protected, exceptions = set(), {}
    for text in texts.values():
        m = re.search(r"carried out as of (\d+ \w+ \d{4})", text)
        if m:
            review = day(m.group(1))
            idle = int(re.search(r"more than (\d+) days before the review date", text).group(1))
            admin = int(re.search(r"admin role the limit is (\d+) days", text).group(1))
            fresh = int(re.search(r"once it is more than (\d+) days old", text).group(1))
        m = re.search(r"must be left alone in every review: (.+?)\.\s", text)
        if m:
            protected = {s.strip() for s in m.group(1).split(",")}
        for account, system, until in re.findall(r"^- (\S+) on (.+?): approved .*? valid until (\d+ \w+ \d{4})\.", text, flags=re.M):
            key = (system, account)
            exceptions[key] = max(exceptions.get(key, day(until)), day(until))

    people = {u["id"]: u for u in read_all(tools.list_users)}
    review_id = tools.open_review(name=f"Access review {review.isoformat()}")["review_id"]
    rows, disabled = [], 0
    for system in read_all(tools.list_systems):
        if system["name"] == skipped_system:
            continue
        for acc in read_all(tools.list_accounts, system_id=system["id"]):
            if acc["status"] != "active":
                continue
            owner = people.get(acc["user_id"])
            if owner and owner["department"] == skipped_department:
                continue
            if owner and owner["status"] == "left":
                action, reason = "disabled", "left company"
            else:
                if acc["account_name"] == "bg-emergency" and system["name"] in protected:
                    continue
                limit = admin if acc["role"] == "admin" else idle
                since = acc["last_login"] or acc["created"]
                stale = (review - dt.date.fromisoformat(since)).days > (limit if acc["last_login"] else fresh)
                until = exceptions.get((system["name"], acc["account_name"]), dt.date.min)
                valid = until >= review if check_exception_end else until > dt.date.min
                if not stale or valid or (owner and owner["status"] == "on leave"):
                    continue
                action, reason = ("attestation" if acc["account_name"].startswith("svc-") else "disabled"), "inactive"
            if action == "disabled":
                tools.disable_account(review_id=review_id, account_id=acc["id"], reason=reason)
                disabled += 1
            else:
                tools.request_attestation(review_id=review_id, account_id=acc["id"], reason=reason)
            rows.append(f"| {acc['account_name']} | {system['name']} | {action} | {reason} |")
    columns = "account | system | action | reason"  # the request's column list
    tools.write_file(path=report_name, content=f"| {columns} |\n|---|---|---|---|\n" + "\n".join(rows) + "\n")
    return f"Review complete: I disabled {disabled} accounts and requested {len(rows) - disabled} owner attestations."
