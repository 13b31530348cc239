import json
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, sponsor_table, catering_name, read_inbox=True) -> str:
    texts = read_files(tools)
    guests = {g["id"]: g for g in read_all(tools.list_guests)}
    by_email = {g["email"].lower(): g for g in guests.values()}
    by_name = {g["name"]: g for g in guests.values()}

    # 1. Late messages, oldest first: cancellations and meal changes from guests who are coming.
    for path in sorted(p for p in texts if read_inbox and p.startswith("inbox/")):
        sender = re.search(r"^From: .*<([^>]+)>", texts[path], re.M)
        guest = by_email.get(sender.group(1).lower()) if sender else None
        if guest is None or guest["rsvp"] != "attending":
            continue
        if "no longer attend" in texts[path]:
            guest.update(tools.update_guest(guest_id=guest["id"], rsvp="declined"))
            continue
        meal = re.search(r"change my meal to (\w+)", texts[path])
        if meal:
            guest.update(tools.update_guest(guest_id=guest["id"], meal=meal.group(1)))

    # 2. The organiser's rules.
    notes = next(t for t in texts.values() if "Seating notes" in t)
    board_line = re.search(r"Table 1 is the board table: (.+?) sit there", notes).group(1)
    board = {by_name[n.strip()]["id"] for n in board_line.split(",")}
    feud_line = next(p for p in notes.split("\n\n") if "same table" in p and "court case" in p)
    feud = {g["id"] for n, g in by_name.items() if n in feud_line}
    wheel_line = next(p for p in notes.split("\n\n") if "wheelchair" in p)
    step_free = {g["id"] for n, g in by_name.items() if n in wheel_line}

    coming = {gid: g for gid, g in guests.items() if g["rsvp"] == "attending"}
    groups = {}
    for gid, g in coming.items():
        groups.setdefault(g["plus_one_of"] or gid, []).append(gid)
    tables = read_all(tools.list_tables)
    free = {t["table_number"]: t["seats"] for t in tables if t["table_number"] != sponsor_table}
    zone = {t["table_number"]: t["zone"] for t in tables}
    seated_at = {}
    for gid in board:
        seated_at[gid] = 1
        free[1] -= 1
    rest = [members for host, members in groups.items() if host not in board]
    rest.sort(key=lambda m: (not (set(m) & step_free), -len(m)))
    for members in rest:
        for number in sorted(free):
            clash = set(members) & feud and any(seated_at.get(o) == number for o in feud - set(members))
            if number == 1 or free[number] < len(members) or clash or (set(members) & step_free and zone[number] != "floor"):
                continue
            for gid in members:
                seated_at[gid] = number
            free[number] -= len(members)
            break

    # Write the plan one table at a time.
    for number in sorted(free):
        party = sorted(gid for gid, at in seated_at.items() if at == number)
        if party:
            tools.seat_table(table_number=number, guest_ids=party)

    catering, special = {}, 0
    for gid, number in seated_at.items():
        meal = coming[gid]["meal"]
        per_table = catering.setdefault(str(number), {})
        per_table[meal] = per_table.get(meal, 0) + 1
        special += meal != "standard"
    tools.write_file(path=catering_name, content=json.dumps(catering, indent=2, sort_keys=True))
    return f"{len(seated_at)} guests are seated. The kitchen must prepare {special} special meals."
