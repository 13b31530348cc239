import re

from progagent_lib.task.oracle_kit import read_all, read_files

NUMBER_WORDS = {"two": 2, "three": 3, "four": 4}


def solve(tools, deferred_topic, coi_years, report_name, coauthor_window=True, round_cap=True) -> str:
    texts = read_files(tools)
    rules = next(t for t in texts.values() if "Review panel guidelines" in t)
    per_proposal = NUMBER_WORDS[re.search(r"read by (\w+) reviewers", rules).group(1)]
    cap = int(re.search(r"nobody reviews more than (\d+) proposals", rules).group(1))
    since = 2026 - coi_years + 1 if coauthor_window else 0

    reviewers = read_all(tools.list_reviewers)
    proposals = [p for p in read_all(tools.list_proposals) if p["topic"] != deferred_topic]
    by_ref = {p["ref"]: p for p in proposals}
    unavailable, recusals = set(), set()
    for path, text in texts.items():
        if not path.startswith("mail/"):
            continue
        sender = next((r for r in reviewers if r["name"] in text), None)
        if sender is None:
            continue
        if "cannot take on any reviews" in text:
            unavailable.add(sender["id"])
        for ref in re.findall(r"declare a conflict with proposal (RG-\d{4}-\d{4})", text):
            recusals.add((by_ref[ref]["id"], sender["id"]))
    recent = {(c["reviewer_id"], c["coauthor"]) for c in read_all(tools.list_collaborations) if c["year"] >= since}

    eligible, conflicts = {}, 0
    for p in proposals:
        named = {n.strip() for n in p["co_investigators"].split(";")}
        eligible[p["id"]] = []
        for r in reviewers:
            if r["id"] in unavailable or p["topic"] not in r["expertise"].split(","):
                continue
            if (r["institution"] == p["institution"] or r["name"] in named or (r["id"], p["pi_name"]) in recent
                    or (p["id"], r["id"]) in recusals):
                conflicts += 1
            else:
                eligible[p["id"]].append(r)

    load = {r["id"]: 0 for r in reviewers}
    limit = {r["id"]: min(cap, r["max_load"]) if round_cap else r["max_load"] for r in reviewers}
    rows = []
    # The hardest-to-staff proposals first, then the least-loaded qualified reviewers.
    for p in sorted(proposals, key=lambda p: (len(eligible[p["id"]]), p["id"])):
        options = sorted((r for r in eligible[p["id"]] if load[r["id"]] < limit[r["id"]]), key=lambda r: (load[r["id"]], r["id"]))
        for r in options[:per_proposal]:
            tools.assign_reviewer(proposal_id=p["id"], reviewer_id=r["id"])
            load[r["id"]] += 1
            rows.append(f"{p['ref']},{r['name']}")
    tools.write_file(path=report_name, content="proposal_ref,reviewer\n" + "\n".join(rows) + "\n")
    return f"Every proposal in this round is assigned. I found {conflicts} conflicts of interest among qualified, available reviewers."
