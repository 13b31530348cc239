"""A plausible wrong solution: on equal quotes it keeps the first carrier listed instead of the more punctual one."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, held_site, max_weight, report_name) -> str:
    guide = " ".join(tools.read_file(path="shipping_office/routing_guide.md").split())
    fee = float(re.search(r"surcharge of ([\d.]+)", guide).group(1))
    notice = " ".join(tools.read_file(path="notices/compliance_embargo.md").split())
    closed = re.search(r"may leave for (\w+):", notice).group(1)
    ban = re.search(r"Separately, (.+?) has lost its transit permit for (\w+)\.", notice).groups()
    cert = " ".join(tools.read_file(path="notices/carrier_certificates.eml").split())
    who, day = re.search(r"certificate of (.+?) expires on (\d+ \w+ \d{4})", cert).groups()
    expiry = dt.datetime.strptime(day, "%d %B %Y").date()

    carriers = read_all(tools.list_carriers)
    by_id = {c["id"]: c for c in carriers}
    manifests, lines, total = {}, [], 0.0
    for s in read_all(tools.list_shipments):
        if s["destination_country"] == closed or s["origin"] == held_site or s["weight_kg"] > max_weight:
            tools.hold_shipment(shipment_id=s["id"], reason="embargo")
            continue
        quotes = {q["carrier_id"]: q for q in read_all(tools.list_lane_rates, destination_country=s["destination_country"])}
        chosen, price = None, None
        for c in carriers:  # first cheapest in list order wins
            q = quotes.get(c["id"])
            if q is None or s["weight_kg"] > c["max_weight_kg"] or (c["name"], s["destination_country"]) == ban:
                continue
            if s["hazmat"] and not c["hazmat_certified"]:
                continue
            if s["hazmat"] and c["name"] == who and dt.date.fromisoformat(s["ready_date"]) >= expiry:
                continue
            freight = round(max(q["minimum_charge"], q["rate_per_kg"] * s["weight_kg"]), 2)
            if price is None or freight < price:
                chosen, price = c["id"], freight
        if chosen not in manifests:
            manifests[chosen] = tools.create_manifest(carrier_id=chosen)["manifest_id"]
        tools.add_to_manifest(manifest_id=manifests[chosen], shipment_id=s["id"])
        cost = price + (fee if s["hazmat"] else 0)
        total += cost
        lines.append(f"{s['ref']},{by_id[chosen]['name']},{cost:.2f}")
    tools.write_file(path=report_name, content="shipment,carrier,cost\n" + "\n".join(lines))
    return f"Total freight: {total:.2f}"
