"""A plausible wrong solution: serves holds purely by placement time, so staff holds keep their place in
the queue instead of going to the back."""
import re
from datetime import date, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, no_van_branch, renewal_days, report_name) -> str:
    renew_by = (date(2026, 12, 1) + timedelta(days=renewal_days)).isoformat()
    bulletins = "\n".join(read_files(tools, "staff/*").values())
    closed = set(re.findall(r"The (\w+) branch had a burst pipe", bulletins))
    frozen = set(re.findall(r"\(card (\d+)\) is travelling", bulletins))
    people = {p["id"]: p for p in read_all(tools.list_patrons)}
    copies = [c for c in read_all(tools.list_copies) if c["status"] == "available" and c["branch"] not in closed]
    taken, out, transfers = set(), [], 0
    for h in sorted(read_all(tools.list_holds), key=lambda h: h["placed_at"]):
        who = people[h["patron_id"]]
        if who["blocked"] or who["expires_on"] < "2026-12-01" or who["card_number"] in frozen or who["expires_on"] <= renew_by:
            continue
        options = sorted((c for c in copies if c["title_id"] == h["title_id"] and c["id"] not in taken
                          and (c["branch"] == h["pickup_branch"] or no_van_branch not in (c["branch"], h["pickup_branch"]))),
                         key=lambda c: c["barcode"])
        if not options:
            continue
        c = next((o for o in options if o["branch"] == h["pickup_branch"]), options[0])
        taken.add(c["id"])
        tid = 0
        if c["branch"] != h["pickup_branch"]:
            tid = tools.create_transfer(copy_id=c["id"], to_branch=h["pickup_branch"])["transfer_id"]
            transfers += 1
        tools.fill_hold(hold_id=h["id"], copy_id=c["id"], transfer_id=tid)
        out.append(f"{h['id']},{c['barcode']},{h['pickup_branch']},{'yes' if tid else 'no'}")
    tools.write_file(path=report_name, content="hold_id,barcode,pickup_branch,transfer\n" + "\n".join(out))
    return f"Filled {len(out)} holds, {transfers} with transfers."
