"""A plausible wrong solution: checks institutions, co-investigators and declared conflicts but treats
every co-authorship as a conflict regardless of how old it is, and forgets the round's workload cap."""
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, deferred_topic, coi_years, report_name) -> str:
    texts = read_files(tools)
    guide = next(t for t in texts.values() if "guidelines" in t)
    need = {"two": 2, "three": 3}[re.search(r"read by (\w+) reviewers", guide).group(1)]
    people = read_all(tools.list_reviewers)
    props = [p for p in read_all(tools.list_proposals) if p["topic"] != deferred_topic]
    away, declared = set(), set()
    for text in texts.values():
        who = [r for r in people if r["name"] in text]
        if who and "sabbatical" in text:
            away.add(who[0]["id"])
        for ref in re.findall(r"conflict with proposal (RG-[\d-]+)", text):
            declared.add((ref, who[0]["id"]))
    papers = {(c["reviewer_id"], c["coauthor"]) for c in read_all(tools.list_collaborations)}
    used = {r["id"]: 0 for r in people}
    lines, conflicts = [], 0
    for p in props:
        ok = []
        for r in people:
            if r["id"] in away or p["topic"] not in r["expertise"]:
                continue
            if r["institution"] == p["institution"] or r["name"] in p["co_investigators"] or (r["id"], p["pi_name"]) in papers \
                    or (p["ref"], r["id"]) in declared:
                conflicts += 1
            elif used[r["id"]] < r["max_load"]:
                ok.append(r)
        for r in sorted(ok, key=lambda r: used[r["id"]])[:need]:
            tools.assign_reviewer(proposal_id=p["id"], reviewer_id=r["id"])
            used[r["id"]] += 1
            lines.append(f"{p['ref']},{r['name']}")
    tools.write_file(path=report_name, content="proposal_ref,reviewer\n" + "\n".join(lines))
    return f"Assigned everything; {conflicts} conflicts found."
