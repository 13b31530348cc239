import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files

TODAY = dt.date(2026, 12, 1)


def _programme(text: str) -> dict:
    flat = " ".join(text.split())
    days = re.search(r"within (\d+) days of the date of the gift", flat)
    excluded = re.search(r"do not match gifts to (.+?) funds", flat)
    year_end = re.search(r"must reach us by (\d{1,2} \w+) of the following year", flat)
    return {
        "ratio": float(re.search(r"\(([\d.]+) times the gift\)", flat).group(1)),
        "minimum": float(re.search(r"Gifts of less than \$(\d+)", flat).group(1)),
        "cap": float(re.search(r"up to \$([\d,]+) in matching", flat).group(1).replace(",", "")),
        "days": int(days.group(1)) if days else None,
        "year_end": year_end.group(1) if year_end else None,
        "retirees": "retirees are not eligible" not in flat,
        "excluded": excluded.group(1) if excluded else None,
    }


def solve(tools, excluded_company, report_name, check_retirees=True) -> str:
    programmes, paused, paused_from = {}, None, None
    for path, text in read_files(tools).items():
        title = re.match(r"# (.+?) - employee matching gift programme", text)
        if title:
            programmes[title.group(1)] = _programme(text)
        flat = " ".join(text.split())
        stop = re.search(r"restructuring, (.+?) has paused .*? made on or after\s+(\d{1,2} \w+ \d{4}) will not", flat)
        if stop:
            paused, paused_from = stop.group(1), dt.datetime.strptime(stop.group(2), "%d %B %Y").date()
    employers = {e["id"]: e for e in read_all(tools.list_employers)}
    donors = {d["id"]: d for d in read_all(tools.list_donors)}
    used, claim_of, total, summary = {}, {}, 0.0, {}
    for gift in read_all(tools.list_gifts):  # date order, so caps are used up in date order
        donor = donors[gift["donor_id"]]
        if not donor["employer_id"]:
            continue
        company = employers[donor["employer_id"]]["name"]
        if company == excluded_company:
            continue
        rules = programmes[company]
        day = dt.date.fromisoformat(gift["gift_date"])
        if gift["fund"] in ("gala tickets", rules["excluded"]) or gift["amount"] < rules["minimum"]:
            continue
        if check_retirees and donor["employment_status"] == "retiree" and not rules["retirees"]:
            continue
        if company == paused and day >= paused_from:
            continue
        deadline = (day + dt.timedelta(days=rules["days"]) if rules["days"] else
                    dt.datetime.strptime(f"{rules['year_end']} {day.year + 1}", "%d %B %Y").date())
        if TODAY > deadline:
            continue
        key = (donor["id"], day.year)
        if key not in used:
            used[key] = tools.get_donor_matching_total(donor_id=donor["id"])["matched_amount"] if day.year == 2026 else 0.0
        match = round(min(gift["amount"] * rules["ratio"], rules["cap"] - used[key]), 2)
        if match <= 0:
            continue
        used[key] += match
        if donor["employer_id"] not in claim_of:
            claim_of[donor["employer_id"]] = tools.create_claim(employer_id=donor["employer_id"])["claim_id"]
        tools.add_claim_line(claim_id=claim_of[donor["employer_id"]], gift_id=gift["id"], match_amount=match)
        total += match
        summary.setdefault(company, [0, 0.0])
        summary[company][0] += 1
        summary[company][1] += match
    rows = [f"{name},{n},{amount:.2f}" for name, (n, amount) in sorted(summary.items())]
    tools.write_file(path=report_name, content="company,gifts,match_total\n" + "\n".join(rows) + "\n")
    return f"Submitted {len(claim_of)} matching-gift claims. Total matching amount claimed: ${total:,.2f}."
