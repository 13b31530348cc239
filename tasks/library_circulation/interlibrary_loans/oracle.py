import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def _formats(phrase: str) -> set[str]:
    if "printed books only" in phrase:
        return {"book"}
    if "no DVDs" in phrase:
        return {"book", "audiobook"}
    return {"book", "audiobook", "dvd"}


def solve(tools, courier_date, request_cutoff, keep_one_on_shelf=True) -> str:
    ship_date = dt.datetime.strptime(courier_date, "%d %B %Y").date()
    last_day = dt.datetime.strptime(request_cutoff, "%d %B %Y").date().isoformat()
    texts = read_files(tools)
    deals, suspended_name = {}, None
    for text in texts.values():
        flat = " ".join(text.split())
        head = re.search(r"Subject: ILL lending agreement - .+? \((\w+)\)", flat)
        if head:
            deals[head.group(1)] = {
                "days": int(re.search(r"(\d+)[- ]day", flat).group(1)),
                "formats": _formats(re.search(r"(?:We can take|we borrow) (.+?)\.", flat).group(1)),
                "limit": int(re.search(r"(?:at most|more than) (\d+) of your items", flat).group(1)),
            }
        stop = re.search(r"Subject: Lending suspended\s+(.+?) still has", flat)
        if stop:
            suspended_name = stop.group(1)
    partners = {p["id"]: p for p in read_all(tools.list_partners)}
    holding = {pid: p["items_on_loan"] for pid, p in partners.items()}
    titles = {}
    shipped = 0
    for req in read_all(tools.list_requests, status="pending"):
        if req["requested_on"] > last_day:
            continue  # missed this courier run; stays pending
        partner = partners[req["partner_id"]]
        deal = deals[partner["code"]]
        if req["isbn"] not in titles:
            titles[req["isbn"]] = dict(tools.get_title(isbn=req["isbn"]), copies=read_all(tools.list_copies, isbn=req["isbn"]))
        title = titles[req["isbn"]]
        free = [c for c in title["copies"] if c["collection"] == "general" and c["status"] == "available"]
        if partner["name"] == suspended_name:
            reason = "suspended"
        elif title["format"] not in deal["formats"]:
            reason = "format"
        elif len(free) < (2 if keep_one_on_shelf else 1):
            reason = "no_copy"
        elif holding[partner["id"]] + 1 > deal["limit"]:
            reason = "limit"
        else:
            reason = None
        if reason:
            tools.decline_request(request_id=req["id"], reason=reason)
            continue
        hold = tools.place_hold(copy_id=free[0]["id"], request_id=req["id"])
        free[0]["status"] = "on hold"  # our cached copy list must see the copy go
        due = ship_date + dt.timedelta(days=deal["days"])
        tools.ship_loan(request_id=req["id"], hold_id=hold["hold_id"], due_date=due.isoformat())
        holding[partner["id"]] += 1
        shipped += 1
    return f"We shipped {shipped} interlibrary loan requests; every other pending request was declined with a reason."
