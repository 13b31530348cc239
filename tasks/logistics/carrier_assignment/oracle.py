import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, held_site, max_weight, report_name, punctual_on_ties=True) -> str:
    closed, banned_lanes, lapses, fee = set(), set(), {}, 0.0
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        m = re.search(r"handling surcharge of ([\d.]+)", flat)
        if m:
            fee = float(m.group(1))
        closed |= set(re.findall(r"no shipment of ours may leave for (\w+)", flat))
        banned_lanes |= set(re.findall(r"([A-Z][\w ]+?) has lost its transit permit for (\w+)\.", flat))
        for name, day in re.findall(r"certificate of (.+?) expires on (\d+ \w+ \d{4})", flat):
            lapses[name] = dt.datetime.strptime(day, "%d %B %Y").date().isoformat()

    carriers = {c["id"]: c for c in read_all(tools.list_carriers)}
    lanes, manifests, rows, total = {}, {}, [], 0.0
    for s in read_all(tools.list_shipments, status="waiting"):
        land = s["destination_country"]
        if land in closed:
            tools.hold_shipment(shipment_id=s["id"], reason=f"export embargo on {land}")
            continue
        if s["origin"] == held_site:
            tools.hold_shipment(shipment_id=s["id"], reason=f"{held_site} closed this week")
            continue
        if s["weight_kg"] > max_weight:
            tools.hold_shipment(shipment_id=s["id"], reason=f"over the {max_weight} kg loading limit")
            continue
        if land not in lanes:
            lanes[land] = read_all(tools.list_lane_rates, destination_country=land)
        best = None
        for lane in lanes[land]:
            c = carriers[lane["carrier_id"]]
            if s["weight_kg"] > c["max_weight_kg"] or (c["name"], land) in banned_lanes:
                continue
            lapse = lapses.get(c["name"])
            if s["hazmat"] and (not c["hazmat_certified"] or lapse is not None and s["ready_date"] >= lapse):
                continue
            freight = round(max(lane["minimum_charge"], lane["rate_per_kg"] * s["weight_kg"]), 2)
            key = (freight, -c["on_time_pct"] if punctual_on_ties else 0, c["id"])
            best = key if best is None or key < best else best
        freight, cid = best[0], best[2]
        if cid not in manifests:
            manifests[cid] = tools.create_manifest(carrier_id=cid)["manifest_id"]
        tools.add_to_manifest(manifest_id=manifests[cid], shipment_id=s["id"])  # charges the lane's freight
        cost = round(freight + (fee if s["hazmat"] else 0.0), 2)
        total += cost
        rows.append(f"{s['ref']},{carriers[cid]['name']},{cost:.2f}")
    tools.write_file(path=report_name, content="shipment,carrier,cost\n" + "\n".join(rows) + "\n")
    return f"Booked {len(rows)} shipments on {len(manifests)} manifests; total freight cost {total:.2f}."
