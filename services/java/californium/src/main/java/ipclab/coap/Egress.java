package ipclab.coap;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

import org.eclipse.californium.core.coap.Request;
import org.eclipse.californium.core.coap.Response;
import org.eclipse.californium.elements.config.Configuration;

/**
 * The egress adapter beside the gateway: an HTTP/1.1 server (the JDK's) whose requests go,
 * by their path's first segment, to that service's ingress adapter over CoAP, each exchange
 * on an endpoint of its own from the service's pool ({@link Pool}). 404 for a path naming no
 * service, 405 for a method CoAP has no code for, 413 for a body over the cap, 431 for a head
 * too large for a datagram, 502 when the ingress cannot be reached and 504 when it does not
 * answer in time (the Python adapters' answers).
 */
final class Egress {
    static final int MAX_OPTION_BYTES = 2048; // services/transports/coap.py
    private static final byte[] NOT_FOUND = "no service at this path\n".getBytes(StandardCharsets.UTF_8);

    private final Args args;
    private final HttpServer server;
    private final ExecutorService handlers;
    private final Map<String, Pool> pools = new HashMap<>();

    Egress(Args args, Configuration config, ScheduledExecutorService main,
            ScheduledExecutorService secondary) throws IOException {
        this.args = args;
        for (Map.Entry<String, InetSocketAddress> route : args.routes.entrySet()) {
            pools.put(route.getKey(), new Pool(route.getKey(), route.getValue(), args.pool, config,
                    main, secondary));
        }
        server = HttpServer.create(args.listen, 1024);
        handlers = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "egress-http");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(handlers);
        server.createContext("/", this::handle);
    }

    void start() throws IOException {
        for (Pool pool : pools.values()) {
            pool.start();
        }
        server.start();
    }

    void stop() {
        server.stop(0);
        handlers.shutdownNow();
        for (Pool pool : pools.values()) {
            pool.close();
        }
    }

    private static String serviceOf(String path) {
        String rest = path.startsWith("/") ? path.substring(1) : path;
        int slash = rest.indexOf('/');
        return slash < 0 ? rest : rest.substring(0, slash);
    }

    /** The body, or null when it is longer than {@code max} bytes. */
    private static byte[] body(InputStream in, int max) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buffer = new byte[16384];
        int n;
        while ((n = in.read(buffer)) > 0) {
            if (out.size() + n > max) {
                return null;
            }
            out.write(buffer, 0, n);
        }
        return out.toByteArray();
    }

    private void handle(HttpExchange x) throws IOException {
        try {
            String path = x.getRequestURI().getRawPath();
            String query = x.getRequestURI().getRawQuery();
            String target = query == null ? path : path + "?" + query;
            Pool pool = pools.get(serviceOf(path));
            if (pool == null) {
                reply(x, 404, List.of(Adapter.TEXT), NOT_FOUND);
                return;
            }
            String method = x.getRequestMethod();
            if (!Mapping.METHODS.containsKey(method)) {
                reply(x, 405, List.of(Adapter.TEXT), new byte[0]);
                return;
            }
            byte[] body = body(x.getRequestBody(), args.maxBody);
            if (body == null) {
                reply(x, 413, List.of(Adapter.TEXT), "request body too large\n".getBytes(StandardCharsets.UTF_8));
                return;
            }
            List<Mapping.Header> headers = new ArrayList<>();
            Headers in = x.getRequestHeaders();
            String type = in.getFirst("Content-Type");
            if (type != null) {
                headers.add(new Mapping.Header("content-type", type));
            }
            for (String cookie : in.getOrDefault("Cookie", List.of())) {
                headers.add(new Mapping.Header("cookie", cookie));
            }
            Request request = Mapping.request(method, target, headers, body, pool.peer());
            if (Mapping.optionBytes(request.getOptions()) > MAX_OPTION_BYTES) {
                reply(x, 431, List.of(Adapter.TEXT),
                        "request head too large for a CoAP datagram".getBytes(StandardCharsets.UTF_8));
                return;
            }
            Response response;
            try {
                response = pool.exchange(request, args.timeoutMs);
            } catch (Pool.Timeout e) {
                reply(x, 504, List.of(Adapter.TEXT), e.getMessage().getBytes(StandardCharsets.UTF_8));
                return;
            } catch (Pool.Unavailable e) {
                reply(x, 502, List.of(Adapter.TEXT), e.getMessage().getBytes(StandardCharsets.UTF_8));
                return;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            reply(x, Mapping.statusOf(response.getCode()),
                    Mapping.headers(response.getOptions(), "set-cookie", Mapping.SET_COOKIE),
                    response.getPayload());
        } finally {
            x.close();
        }
    }

    static void reply(HttpExchange x, int status, List<Mapping.Header> headers, byte[] body)
            throws IOException {
        Headers out = x.getResponseHeaders();
        for (Mapping.Header h : headers) {
            out.add(h.name(), h.value());
        }
        boolean empty = body == null || body.length == 0 || status == 204 || status == 304;
        x.sendResponseHeaders(status, empty ? -1 : body.length);
        if (!empty) {
            try (OutputStream os = x.getResponseBody()) {
                os.write(body);
            }
        }
    }
}
