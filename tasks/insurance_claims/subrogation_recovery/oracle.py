import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def _plus_years(day: dt.date, years: int) -> dt.date:
    try:
        return day.replace(year=day.year + years)
    except ValueError:  # 29 February in a non-leap target year
        return day.replace(year=day.year + years, day=28)


def _money(text: str) -> float:
    return float(text.replace(",", ""))


def solve(tools, capacity, min_fault, report_name, tie_break_by_loss_date=True) -> str:
    corpus = "\n".join(read_files(tools).values())
    flat = " ".join(corpus.split())
    rates = {"business": int(re.search(r"businesses pay up about (\d+)%", flat).group(1)),
             "insured": int(re.search(r"hold insurance about (\d+)%", flat).group(1)),
             "uninsured": int(re.search(r"uninsured individuals only about (\d+)%", flat).group(1))}
    floor = _money(re.search(r"below \$([\d,]+)", flat).group(1))
    counsel_over = _money(re.search(r"above \$([\d,]+) go to outside counsel", flat).group(1))
    years = int(re.search(r"within (\d+) years of the date of loss", flat).group(1))
    cutoff = dt.datetime.strptime(re.search(r"falls before (\d{1,2} \w+ \d{4})", flat).group(1), "%d %B %Y").date()
    kfk = re.search(r"knock-for-knock agreement with (.+?):", flat).group(1)

    parties = {}
    candidates = []
    for c in read_all(tools.list_claims, status="paid"):
        if not c["third_party_id"] or c["third_party_fault_pct"] < min_fault:
            continue
        if _plus_years(dt.date.fromisoformat(c["loss_date"]), years) < cutoff:
            continue
        pid = c["third_party_id"]
        party = parties.setdefault(pid, tools.get_third_party(third_party_id=pid))
        if party["kind"] == "municipality" or party["insurer"] == kfk:
            continue
        rate = rates["business"] if party["kind"] == "business" else rates["insured" if party["insurer"] else "uninsured"]
        value = round(c["paid_amount"] * c["third_party_fault_pct"] / 100 * rate / 100, 2)
        if value >= floor:
            candidates.append((-value, c["loss_date"], c, party["name"], value))
    candidates.sort(key=lambda t: (t[0], t[1] if tie_break_by_loss_date else t[2]["claim_no"]))
    lines = ["rank,claim_no,third_party,expected_recovery"]
    total = 0.0
    for rank, (_, _, claim, party_name, value) in enumerate(candidates[:capacity], start=1):
        case = tools.open_recovery_case(claim_id=claim["id"], expected_recovery=value)
        tools.assign_case(case_id=case["case_id"], handler="outside_counsel" if value > counsel_over else "recovery_desk")
        lines.append(f'{rank},{claim["claim_no"]},"{party_name}",{value:.2f}')
        total += value
    tools.write_file(path=report_name, content="\n".join(lines) + "\n")
    return f"Opened {len(lines) - 1} recovery cases. Total expected recovery: {total:.2f}."
