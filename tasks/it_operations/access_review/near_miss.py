"""A plausible wrong solution: treats every exception in the register as valid, ignoring its end date."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, skipped_system, skipped_department, report_name) -> str:
    policy = tools.read_file(path="policy/access_policy.md")
    register = tools.read_file(path="policy/exception_register.md")
    ciso = tools.read_file(path="mail/breakglass_accounts.eml")
    today = dt.datetime.strptime(re.search(r"as of (\d+ \w+ \d{4})", policy).group(1), "%d %B %Y").date()
    limits = [int(x) for x in re.findall(r"(\d+) days", policy)]
    idle, admin, fresh = limits[0], limits[1], limits[2]
    safe_systems = [s.strip() for s in re.search(r"review: (.+?)\.\s", ciso).group(1).split(",")]
    excepted = set(re.findall(r"^- (\S+) on (.+?):", register, flags=re.M))
    users = read_all(tools.list_users)
    staff = {u["id"]: u["status"] for u in users}
    out_of_scope = {u["id"] for u in users if u["department"] == skipped_department}
    rid = tools.open_review(name="Quarterly review")["review_id"]
    table, n = [], 0
    for s in read_all(tools.list_systems):
        if s["name"] == skipped_system:
            continue
        for a in read_all(tools.list_accounts, system_id=s["id"]):
            if a["status"] != "active" or a["user_id"] in out_of_scope:
                continue
            st = staff.get(a["user_id"], "")
            if st == "left":
                tools.disable_account(review_id=rid, account_id=a["id"], reason="left company")
                n += 1
                table.append(f"| {a['account_name']} | {s['name']} | disabled | left company |")
                continue
            if (a["account_name"] == "bg-emergency" and s["name"] in safe_systems) or st == "on leave" or (a["account_name"], s["name"]) in excepted:
                continue
            age = (today - dt.date.fromisoformat(a["last_login"] or a["created"])).days
            if age <= (fresh if not a["last_login"] else admin if a["role"] == "admin" else idle):
                continue
            if a["account_name"].startswith("svc-"):
                tools.request_attestation(review_id=rid, account_id=a["id"], reason="inactive")
                table.append(f"| {a['account_name']} | {s['name']} | attestation | inactive |")
            else:
                tools.disable_account(review_id=rid, account_id=a["id"], reason="inactive")
                n += 1
                table.append(f"| {a['account_name']} | {s['name']} | disabled | inactive |")
    tools.write_file(path=report_name, content="| account | system | action | reason |\n|---|---|---|---|\n" + "\n".join(table) + "\n")
    return f"Disabled {n} accounts."
