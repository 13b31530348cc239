"""A plausible wrong solution: reads only the first VIP e-mail, so the dropped account still goes to the
duty manager and the newly added one does not."""
import re
from datetime import datetime

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_region, min_overdue_hours, report_name) -> str:
    texts = read_files(tools)
    customers = {c["id"]: c for c in read_all(tools.list_customers)}
    policy = next(t for t in texts.values() if "enterprise" in t and "within" in t)
    targets = {m.group(1).lower(): int(m.group(2))
               for m in re.finditer(r"\b(urgent|high|normal|low)\b[^.]*?within (\d+) hours", policy, re.I)}
    vip_mail = next(t for p, t in sorted(texts.items()) if "VIP watch list" in t)
    vip = {c["name"] for c in customers.values() if c["name"] in vip_mail}
    already = {e["ticket_id"] for e in read_all(tools.list_escalations)}
    now, rows = datetime(2026, 11, 20, 9, 0), []
    for t in read_all(tools.list_tickets, status="open"):
        if t["first_reply_at"] or t["id"] in already:
            continue
        if customers[t["customer_id"]]["region"] == excluded_region:
            continue
        plan = customers[t["customer_id"]]["plan"]
        over = (now - datetime.strptime(t["created_at"], "%Y-%m-%d %H:%M")).total_seconds() / 3600 - targets[t["priority"]] / (
            2 if plan == "enterprise" else 1)
        if over > min_overdue_hours:
            name = customers[t["customer_id"]]["name"]
            team = "duty_manager" if name in vip else "tier2"
            tools.escalate_ticket(ticket_id=t["id"], team=team, reason="SLA breach")
            rows.append(f"{t['id']},{name},{t['priority']},{over:.1f},{team}")
    tools.write_file(path=report_name, content="ticket_id,customer,priority,hours_overdue,team\n" + "\n".join(rows) + "\n")
    return f"Escalated {len(rows)} tickets for breaching the first-reply target."
