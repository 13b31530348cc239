"""A plausible wrong solution: seats everyone with the RSVPs as recorded, ignoring the inbox, so the
cancelled guest keeps a seat and late meal changes are lost."""
import json
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, sponsor_table, catering_name) -> str:
    notes = next(iter(read_files(tools, "organiser/*").values()))
    people = read_all(tools.list_guests)
    named = {p["name"]: p["id"] for p in people}
    board = [named[n.strip()] for n in re.search(r"board table: (.+?) sit there", notes).group(1).split(",")]
    paragraphs = notes.split("\n\n")
    feud = [i for n, i in named.items() if n in next(p for p in paragraphs if "court case" in p)]
    wheel = [i for n, i in named.items() if n in next(p for p in paragraphs if "wheelchair" in p)]
    tables = read_all(tools.list_tables)
    room = {t["table_number"]: t["seats"] for t in tables if t["table_number"] != sponsor_table}
    floor = {t["table_number"] for t in tables if t["zone"] == "floor"}
    where = {}
    for b in board:
        where[b] = 1
        room[1] -= 1
    parties = {}
    for p in people:
        if p["rsvp"] == "attending" and p["id"] not in board:
            parties.setdefault(p["plus_one_of"] or p["id"], []).append(p["id"])
    for party in sorted(parties.values(), key=lambda m: (not set(m) & set(wheel), -len(m))):
        for t in sorted(room):
            if t == 1 or room[t] < len(party) or (set(party) & set(wheel) and t not in floor):
                continue
            if set(party) & set(feud) and any(where.get(x) == t for x in feud):
                continue
            for g in party:
                where[g] = t
            room[t] -= len(party)
            break
    for t in room:
        if any(v == t for v in where.values()):
            tools.seat_table(table_number=t, guest_ids=[g for g, v in where.items() if v == t])
    meals = {p["id"]: p["meal"] for p in people}
    plan = {}
    for g, t in where.items():
        plan.setdefault(str(t), {}).setdefault(meals[g], 0)
        plan[str(t)][meals[g]] += 1
    tools.write_file(path=catering_name, content=json.dumps(plan))
    return f"Seated {len(where)} guests; {sum(m != 'standard' for g, m in meals.items() if g in where)} special meals."
