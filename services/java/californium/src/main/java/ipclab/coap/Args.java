package ipclab.coap;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The adapter's command line, written by services/adapters/native.py from the role's
 * environment (addresses resolved already):
 * {@code --role egress|<service>-ingress --listen host:port --route <service>=host:port ...
 * --timeout-ms N --max-body N --pool N --server-idle-s N --client-keepalive-s N}
 * ({@link Sockets} says what the last three set).
 */
final class Args {
    String role = "";
    InetSocketAddress listen;
    final Map<String, InetSocketAddress> routes = new LinkedHashMap<>();
    long timeoutMs = 30_000;
    int maxBody = 1 << 20;
    int pool = 100;
    int serverIdleS = 75;
    int clientKeepaliveS = 60;

    static InetSocketAddress address(String text) throws UnknownHostException {
        int colon = text.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("address " + text + " is not host:port");
        }
        String host = text.substring(0, colon).replace("[", "").replace("]", "");
        int port = Integer.parseInt(text.substring(colon + 1));
        return new InetSocketAddress(InetAddress.getByName(host), port);
    }

    static Args parse(String[] argv) throws UnknownHostException {
        Args a = new Args();
        for (int i = 0; i + 1 < argv.length; i += 2) {
            String value = argv[i + 1];
            switch (argv[i]) {
                case "--role" -> a.role = value;
                case "--listen" -> a.listen = address(value);
                case "--route" -> {
                    int eq = value.indexOf('=');
                    a.routes.put(value.substring(0, eq), address(value.substring(eq + 1)));
                }
                case "--timeout-ms" -> a.timeoutMs = Long.parseLong(value);
                case "--max-body" -> a.maxBody = Integer.parseInt(value);
                case "--pool" -> a.pool = Integer.parseInt(value);
                case "--server-idle-s" -> a.serverIdleS = Integer.parseInt(value);
                case "--client-keepalive-s" -> a.clientKeepaliveS = Integer.parseInt(value);
                default -> throw new IllegalArgumentException("unknown argument " + argv[i]);
            }
        }
        if (a.listen == null || a.routes.isEmpty() || a.role.isEmpty()) {
            throw new IllegalArgumentException("--role, --listen and a --route are needed");
        }
        return a;
    }
}
