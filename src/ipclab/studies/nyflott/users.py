"""Locust user for the AcmeAir stacks: one iteration of IBM's AcmeAir JMeter driver.

The request mix is the driver's (acmeair/acmeair-driver @ aaebd8e,
``acmeair-jmeter/scripts/AcmeAir.jmx``; the thesis names the test cases but gives no mix):
per iteration a random customer ``uid0..uid199`` does Login; 25% of iterations View
Profile Information + Update Customer; Query Flight 5 times; Book Flight when a flight
was found; List Bookings; 25% of iterations Cancel Booking for each booking listed;
Logout. Requests are named by the thesis's test cases (``tables.TEST_CASES``), so the recorder
keeps the test case of every request. Cookies (the session) live in the user's own client.
"""

from __future__ import annotations

import os
import random

from ipclab_services.domains.acmeair.routes import api
from locust import FastHttpUser, constant, task

from ipclab.load import recorder  # noqa: F401 - registers the per-request recorder

CUSTOMERS = int(os.environ.get("IPCLAB_ACMEAIR_CUSTOMERS", "200"))
AIRPORTS = ("AMS", "BOM", "CDG", "FRA", "HKG", "JFK", "LHR", "NRT", "OSL", "SFO", "SIN", "TRD")
QUERIES = 5  # the driver's "Query Loop"
SHARE = 0.25  # the driver's two throughput controllers
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
# each service's API root, AcmeAir microservices' own (the driver's paths)
AUTH, FLIGHT, BOOKING, CUSTOMER = (api(s) for s in ("auth", "flight", "booking", "customer"))
_rng = random.Random(int(os.environ.get("IPCLAB_LOAD_SEED", "1")))


class AcmeAirUser(FastHttpUser):
    wait_time = constant(0)
    network_timeout = 30.0
    connection_timeout = 10.0

    @task
    def iteration(self) -> None:
        c = self.client
        user = f"uid{_rng.randrange(CUSTOMERS)}@email.com"
        c.post(f"{AUTH}/login", data=f"login={user}&password=password", headers=FORM, name="Login")
        if _rng.random() < SHARE:
            c.get(f"{CUSTOMER}/customer/byid/{user}", name="View Profile Information")
            phone = f"919-{_rng.randrange(100, 999)}-{_rng.randrange(1000, 9999)}"
            body = {"_id": user, "phoneNumber": phone, "phoneNumberType": "BUSINESS"}
            c.post(f"{CUSTOMER}/customer/byid/{user}", json=body, name="Update Customer")
        found: list[str] = []
        for _ in range(QUERIES):
            a, b = _rng.sample(AIRPORTS, 2)
            dates = "fromDate=2017-06-01&returnDate=2017-06-08"
            form = f"fromAirport={a}&toAirport={b}&{dates}&oneWay=false"
            with c.post(
                f"{FLIGHT}/flights/queryflights",
                data=form,
                headers=FORM,
                name="Query Flight",
                catch_response=True,
            ) as r:
                try:
                    trips = r.json()["tripFlights"]
                    found = [t["flightsOptions"][0]["_id"] for t in trips]
                except (ValueError, KeyError, IndexError, TypeError):
                    found = []
                    r.failure("no flights in the answer")
        if len(found) == 2:
            form = f"userid={user}&toFlightId={found[0]}&retFlightId={found[1]}&oneWayFlight=false"
            c.post(f"{BOOKING}/bookings/bookflights", data=form, headers=FORM, name="Book Flight")
        with c.get(
            f"{BOOKING}/bookings/byuser/{user}", name="List Bookings", catch_response=True
        ) as r:
            try:
                numbers = [b["_id"] for b in r.json()["bookings"]]
            except (ValueError, KeyError, TypeError):
                numbers = []
        if _rng.random() < SHARE:
            for n in numbers:
                form = f"number={n}&userid={user}"
                c.post(
                    f"{BOOKING}/bookings/cancelbooking",
                    data=form,
                    headers=FORM,
                    name="Cancel Booking",
                )
        c.get(f"{AUTH}/login/logout?login={user}", name="Logout")
