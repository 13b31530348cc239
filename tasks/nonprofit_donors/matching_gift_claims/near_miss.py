"""A plausible wrong solution: never checks whether the donor is a retiree."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, excluded_company, report_name) -> str:
    rules, stop = {}, None
    for f in read_all(tools.list_files):
        body = " ".join(tools.read_file(path=f["path"]).split())
        head = re.match(r"# (.+?) - employee matching", body)
        if head:
            ratio = 2.0 if "two dollars" in body else 0.5 if "fifty cents" in body else 1.0
            days = re.search(r"within (\d+) days", body)
            excl = re.search(r"match gifts to (.+?) funds", body)
            rules[head.group(1)] = (ratio, float(re.search(r"less than \$(\d+)", body).group(1)),
                                    float(re.search(r"up to \$([\d,]+)", body).group(1).replace(",", "")),
                                    int(days.group(1)) if days else None, excl.group(1) if excl else None)
        m = re.search(r"restructuring, (.+?) has paused .*? on or after (\d+ \w+ \d{4})", body)
        if m:
            stop = (m.group(1), dt.datetime.strptime(m.group(2), "%d %B %Y").date())
    names = {e["id"]: e["name"] for e in read_all(tools.list_employers)}
    donors = {d["id"]: d for d in read_all(tools.list_donors)}
    today, used, claims, total, per = dt.date(2026, 12, 1), {}, {}, 0.0, {}
    for g in read_all(tools.list_gifts):
        emp = donors[g["donor_id"]]["employer_id"]
        if not emp or names[emp] == excluded_company:
            continue
        ratio, minimum, cap, days, excl = rules[names[emp]]
        d = dt.date.fromisoformat(g["gift_date"])
        late = (today - d).days > days if days else today > dt.date(d.year + 1, 6, 30)
        if g["fund"] in ("gala tickets", excl) or g["amount"] < minimum or late or (names[emp] == stop[0] and d >= stop[1]):
            continue
        k = (g["donor_id"], d.year)
        used.setdefault(k, tools.get_donor_matching_total(donor_id=g["donor_id"])["matched_amount"] if d.year == 2026 else 0.0)
        amount = round(min(g["amount"] * ratio, cap - used[k]), 2)
        if amount > 0:
            used[k] += amount
            if emp not in claims:
                claims[emp] = tools.create_claim(employer_id=emp)["claim_id"]
            tools.add_claim_line(claim_id=claims[emp], gift_id=g["id"], match_amount=amount)
            total += amount
            per[names[emp]] = (per.get(names[emp], (0, 0.0))[0] + 1, per.get(names[emp], (0, 0.0))[1] + amount)
    tools.write_file(path=report_name, content="company,gifts,match_total\n" + "".join(f"{c},{n},{a:.2f}\n" for c, (n, a) in per.items()))
    return f"Claimed {total:.2f} in matching gifts."
