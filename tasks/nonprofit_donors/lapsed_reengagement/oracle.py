import re
from datetime import date, datetime

from progagent_lib.task.oracle_kit import read_all, read_files


def back(d, months):
    total = d.year * 12 + d.month - 1 - months
    for day in (d.day, 30, 29, 28):  # clamp to the end of a shorter month
        try:
            return date(total // 12, total % 12 + 1, min(day, d.day))
        except ValueError:
            pass


def solve(tools, excluded_fund, report_name, count_unbanked_cheques=True) -> str:
    blocked, late_gifts = set(), {}
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        if "Lapsed supporter re-engagement" in flat:
            today = datetime.strptime(re.search(r"selection on (\d+ \w+ \d{4})", flat).group(1), "%d %B %Y").date()
            months = int(re.search(r"more than (\d+) months old", flat).group(1))
            years = int(re.search(r"in the last (\d+) years", flat).group(1))
            top = int(re.search(r"capacity for the top (\d+)", flat).group(1))
            major = float(re.search(r"lifetime giving of ([\d,]+) pounds or more", flat).group(1).replace(",", ""))
            mid = float(re.search(r"([\d,]+) pounds up to that", flat).group(1).replace(",", ""))
            names = dict(zip(("phone", "letter", "email"), re.findall(r'"([^"]+)"(?: campaign)? \((?:phone|letter|email) channel\)', flat)))
        if "passed away" in flat or "do not contact me" in flat:
            blocked |= set(re.findall(r"S\d{5,}", flat))
        for day, number in re.findall(r"(\d{4}-\d\d-\d\d): cheque for [\d.]+ pounds received from .+? \((S\d+)\)", flat):
            late_gifts[number] = day

    donors = {d["id"]: d for d in read_all(tools.list_donors)}
    total, last = {}, {}
    for g in read_all(tools.list_gifts):
        total[g["donor_id"]] = total.get(g["donor_id"], 0) + (g["amount"] if g["fund"] != excluded_fund else 0)
        last[g["donor_id"]] = max(last.get(g["donor_id"], ""), g["gift_date"])
    for did, d in donors.items():
        if count_unbanked_cheques and d["donor_no"] in late_gifts:
            last[did] = max(last.get(did, ""), late_gifts[d["donor_no"]])
    lapse_line, window_line = back(today, months).isoformat(), back(today, 12 * years).isoformat()
    lapsed = [d for d in donors.values() if d["id"] in last and window_line <= last[d["id"]] < lapse_line
              and d["donor_no"] not in blocked]
    lapsed.sort(key=lambda d: (-total[d["id"]], -date.fromisoformat(last[d["id"]]).toordinal(), d["donor_no"]))

    campaigns, rows = {}, ["rank,donor_no,name,lifetime_total,last_gift,campaign"]
    for rank, d in enumerate(lapsed[:top], start=1):
        money = total[d["id"]]
        channel = "phone" if money >= major else "letter" if money >= mid else "email"
        if channel == "email" and d["email_opt_out"]:
            channel = "letter"
        if channel not in campaigns:
            campaigns[channel] = tools.create_campaign(name=names[channel], channel=channel)["campaign_id"]
        tools.add_to_campaign(campaign_id=campaigns[channel], donor_id=d["id"], rank=rank)
        rows.append(f"{rank},{d['donor_no']},{d['name']},{money:.2f},{last[d['id']]},{names[channel]}")
    tools.write_file(path=report_name, content="\n".join(rows) + "\n")
    return f"{lapsed[0]['name']} ({lapsed[0]['donor_no']}) is ranked first on the re-engagement list."
