import re
from datetime import date, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files

TODAY = date(2026, 12, 1).isoformat()  # the request: "today is 1 December 2026"


def solve(tools, no_van_branch, renewal_days, report_name, renewal_drive=True) -> str:
    renewal_end = (date.fromisoformat(TODAY) + timedelta(days=renewal_days)).isoformat()
    texts = read_files(tools)
    quarantined = {m.group(1) for t in texts.values() for m in [re.search(r"The (\w+) branch had .*?quarantine", t, re.S)] if m}
    frozen_cards = {m.group(1) for t in texts.values() for m in [re.search(r"\(card (\d+)\) is travelling", t)] if m}

    patrons = {p["id"]: p for p in read_all(tools.list_patrons)}
    holds = read_all(tools.list_holds, status="waiting")
    shelf = [c for c in read_all(tools.list_copies) if c["status"] == "available" and c["branch"] not in quarantined]
    holds.sort(key=lambda h: (patrons[h["patron_id"]]["card_type"] == "staff", h["placed_at"]))

    used, rows, moved = set(), [], 0
    for h in holds:
        p = patrons[h["patron_id"]]
        renewing = renewal_drive and p["expires_on"] <= renewal_end
        if p["blocked"] or p["expires_on"] < TODAY or p["card_number"] in frozen_cards or renewing:
            continue
        pool = [c for c in shelf if c["title_id"] == h["title_id"] and c["id"] not in used]
        local = [c for c in pool if c["branch"] == h["pickup_branch"]]
        # The van must call at both ends of a transfer.
        remote = [] if h["pickup_branch"] == no_van_branch else [c for c in pool if c["branch"] not in (h["pickup_branch"], no_van_branch)]
        if not (local or remote):
            continue
        chosen = min(local or remote, key=lambda c: c["barcode"])
        used.add(chosen["id"])
        transfer_id = 0
        if chosen["branch"] != h["pickup_branch"]:
            transfer_id = tools.create_transfer(copy_id=chosen["id"], to_branch=h["pickup_branch"])["transfer_id"]
            moved += 1
        tools.fill_hold(hold_id=h["id"], copy_id=chosen["id"], transfer_id=transfer_id)
        rows.append(f"{h['id']},{chosen['barcode']},{h['pickup_branch']},{'yes' if transfer_id else 'no'}")
    tools.write_file(path=report_name, content="hold_id,barcode,pickup_branch,transfer\n" + "\n".join(rows) + "\n")
    return f"I filled {len(rows)} holds; {moved} of them need a transfer between branches."
