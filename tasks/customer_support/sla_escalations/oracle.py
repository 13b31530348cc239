import re
from datetime import datetime

from progagent_lib.task.oracle_kit import read_all, read_files

NOW = datetime(2026, 11, 20, 9, 0)


def solve(tools, excluded_region, min_overdue_hours, report_name, follow_list_updates=True) -> str:
    texts = read_files(tools)
    customers = {c["id"]: c for c in read_all(tools.list_customers)}
    names = [c["name"] for c in customers.values()]

    policy = next(t for t in texts.values() if "first reply" in t and "within" in t and "enterprise" in t)
    targets = {m.group(1).lower(): int(m.group(2))
               for m in re.finditer(r"\b(urgent|High|normal|low)\b[^.]*?within (\d+) hours", policy, re.I)}

    # Replay the account managers' e-mails in date order: later ones add to or remove from the list.
    vip = set()
    for path in sorted(p for p in texts if p.startswith("inbox/")):
        for sentence in re.split(r"(?<=[.!?])\s+", texts[path]):
            mentioned = {n for n in names if n in sentence}
            if not mentioned:
                continue
            if "come off" in sentence or "off the watch list" in sentence:
                vip -= mentioned
            elif "watch list" in sentence or "joins the list" in sentence:
                vip |= mentioned
        if vip and not follow_list_updates:
            break

    escalated = {e["ticket_id"] for e in read_all(tools.list_escalations)}
    rows = []
    for t in read_all(tools.list_tickets, status="open"):
        if t["first_reply_at"] or t["id"] in escalated:
            continue
        cust = customers[t["customer_id"]]
        if cust["region"] == excluded_region:
            continue
        hours = targets[t["priority"]] / (2 if cust["plan"] == "enterprise" else 1)
        elapsed = (NOW - datetime.strptime(t["created_at"], "%Y-%m-%d %H:%M")).total_seconds() / 3600
        if elapsed - hours <= min_overdue_hours:
            continue
        team = "duty_manager" if cust["name"] in vip else "tier2"
        tools.escalate_ticket(ticket_id=t["id"], team=team, reason=f"first reply overdue by {elapsed - hours:.1f} h")
        rows.append((t["id"], cust["name"], t["priority"], round(elapsed - hours, 1), team))
    lines = ["ticket_id,customer,priority,hours_overdue,team"] + [f"{r[0]},{r[1]},{r[2]},{r[3]:.1f},{r[4]}" for r in rows]
    tools.write_file(path=report_name, content="\n".join(lines) + "\n")
    worst = max(rows, key=lambda r: r[3])
    return f"I escalated {len(rows)} tickets. The most overdue is ticket {worst[0]} ({worst[3]:.1f} hours past its target)."
