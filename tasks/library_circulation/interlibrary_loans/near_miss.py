"""A plausible wrong solution: lends the last lendable copy of a title (ignores keep-one-on-the-shelf)."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, courier_date, request_cutoff) -> str:
    courier = dt.datetime.strptime(courier_date, "%d %B %Y").date()
    cutoff = dt.datetime.strptime(request_cutoff, "%d %B %Y").date()
    deals, stopped = {}, ""
    for f in read_all(tools.list_files, pattern="mail/*"):
        body = " ".join(tools.read_file(path=f["path"]).split())
        m = re.search(r"agreement - .+? \((\w+)\)", body)
        if m:
            kinds = {"book"} if "only" in body else ({"book", "audiobook"} if "no DVDs" in body else {"book", "audiobook", "dvd"})
            deals[m.group(1)] = (int(re.search(r"(\d+)[- ]day", body).group(1)), kinds,
                                 int(re.search(r"(\d+) of your items", body).group(1)))
        if "suspended" in body and "Subject: Lending suspended" in body:
            stopped = re.search(r"suspended (.+?) still has", body).group(1)
    partners = {p["id"]: p for p in read_all(tools.list_partners)}
    out = {k: p["items_on_loan"] for k, p in partners.items()}
    taken, shipped = set(), 0
    for r in read_all(tools.list_requests):
        if dt.date.fromisoformat(r["requested_on"]) > cutoff:
            continue
        p = partners[r["partner_id"]]
        days, kinds, limit = deals[p["code"]]
        t = tools.get_title(isbn=r["isbn"])
        copies = [c for c in read_all(tools.list_copies, isbn=r["isbn"]) if c["collection"] == "general" and c["status"] == "available" and c["id"] not in taken]
        reason = ("suspended" if p["name"] == stopped else "format" if t["format"] not in kinds
                  else "no_copy" if not copies else "limit" if out[p["id"]] >= limit else None)
        if reason:
            tools.decline_request(request_id=r["id"], reason=reason)
            continue
        hold = tools.place_hold(copy_id=copies[0]["id"], request_id=r["id"])
        taken.add(copies[0]["id"])
        tools.ship_loan(request_id=r["id"], hold_id=hold["hold_id"],
                        due_date=(courier + dt.timedelta(days=days)).isoformat())
        out[p["id"]] += 1
        shipped += 1
    return f"Shipped {shipped} requests."
