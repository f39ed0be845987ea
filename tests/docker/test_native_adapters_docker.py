"""The native adapters in the services image: nginx and nghttpx run as the image's
unprivileged user with every capability dropped, carry 32 requests in flight through
egress -> ingress -> an HTTP/1.1 upstream, and die with their adapter when it is SIGKILLed.
(tests/test_native_adapters.py checks the chains in detail on the host.)"""

from __future__ import annotations

import json

from ipclab.backends.docker.backend import PROJECT_LABEL, client

SCRIPT = r"""
import asyncio, json, os, signal, sys
from aiohttp import ClientSession, web

async def echo(request):
    resp = web.Response(text=request.path_qs + "|" + request.headers.get("Cookie", ""))
    resp.headers.add("Set-Cookie", "a=1; Path=/")
    resp.headers.add("Set-Cookie", "b=2; Path=/")
    return resp

def family(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for t in os.listdir(f"/proc/{p}/task"):
            try:
                kids = [int(k) for k in open(f"/proc/{p}/task/{t}/children").read().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out

def state(pid):
    try:
        status = open(f"/proc/{pid}/status").read()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return fields["State"].split()[0], fields["Uid"].split()[0], fields["CapEff"].strip()

async def wait_port(port):
    for _ in range(300):
        try:
            _, w = await asyncio.open_connection("127.0.0.1", port)
            w.close()
            return
        except OSError:
            await asyncio.sleep(0.05)
    raise SystemExit(f"nothing on {port}")

async def main():
    app = web.Application()
    app.router.add_get("/{tail:.*}", echo)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 9000).start()
    report = {}
    for i, transport in enumerate(("rest", "h2c")):
        base = {**os.environ, "IPCLAB_TRANSPORT": transport, "IPCLAB_SERVICES": "auth",
                "IPCLAB_HOST": "127.0.0.1"}
        ing, eg = 9100 + 10 * i, 9101 + 10 * i
        procs = [await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ipclab_services.adapters.native",
            env={**base, **env}, stderr=asyncio.subprocess.DEVNULL)
            for env in (
                {"IPCLAB_ROLE": "auth-ingress", "IPCLAB_PORT": str(ing),
                 "IPCLAB_ADDR_AUTH": "localhost:9000"},
                {"IPCLAB_ROLE": "egress", "IPCLAB_PORT": str(eg),
                 "IPCLAB_ADDR_AUTH_INGRESS": f"localhost:{ing}"},
            )]
        await wait_port(ing)
        await wait_port(eg)
        async with ClientSession() as http:
            async def one(n):
                async with http.get(f"http://127.0.0.1:{eg}/auth/x?n={n}",
                                    headers={"Cookie": f"s={n}"}) as r:
                    return r.status, await r.text(), r.headers.getall("Set-Cookie")
            answers = await asyncio.gather(*(one(n) for n in range(32)))
        ok = all(a == (200, f"/auth/x?n={n}|s={n}", ["a=1; Path=/", "b=2; Path=/"])
                 for n, a in enumerate(answers))
        proxies = [pid for p in procs for pid in family(p.pid)]
        states = [state(pid) for pid in proxies]
        procs[1].kill()
        await procs[1].wait()
        egress_proxies = family(procs[0].pid)  # (the ingress's stay)
        await asyncio.sleep(2)
        left = [pid for pid in proxies if pid not in egress_proxies
                and (s := state(pid)) is not None and s[0] != "Z"]
        procs[0].send_signal(signal.SIGTERM)
        code = await procs[0].wait()
        report[transport] = {"ok": ok, "states": states, "left": left, "code": code,
                             "tmp": sorted(os.listdir("/tmp"))}
    print(json.dumps(report))

asyncio.run(main())
"""


def test_native_adapters_run_unprivileged_in_the_services_image(
    docker_images: dict[str, str],
) -> None:
    out = client().containers.run(
        docker_images["services"],
        ["python", "-c", SCRIPT],
        remove=True,
        init=True,
        network_mode="none",
        cap_drop=["ALL"],
        labels={PROJECT_LABEL: "test-native-adapters"},
    )
    report = json.loads(out.decode().strip().splitlines()[-1])
    for transport in ("rest", "h2c"):
        r = report[transport]
        assert r["ok"], r
        # master and worker of each proxy, as uid 10001 with no capability
        assert len(r["states"]) >= 4 and all(s is not None for s in r["states"]), r
        assert {(uid, cap) for _, uid, cap in r["states"]} == {("10001", "0000000000000000")}, r
        assert r["left"] == [], f"{transport}: the egress proxy outlived its adapter: {r}"
        assert r["code"] == 0, r
    # the SIGKILLed egress's directory was swept by the next adapter started (h2c's), and
    # what is left is the last SIGKILLed one's only
    assert len([d for d in report["h2c"]["tmp"] if d.startswith("ipclab-native-")]) == 1
