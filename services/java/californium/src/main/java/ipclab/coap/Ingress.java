package ipclab.coap;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

import org.eclipse.californium.core.coap.Request;
import org.eclipse.californium.core.coap.Response;
import org.eclipse.californium.core.network.CoapEndpoint;
import org.eclipse.californium.core.network.Exchange;
import org.eclipse.californium.core.server.MessageDeliverer;
import org.eclipse.californium.elements.config.Configuration;

/**
 * The ingress adapter beside a service: a Californium endpoint whose every request, whatever
 * its path, goes to the service over HTTP/1.1 (the JDK's client, keep-alive and TCP_NODELAY:
 * {@link Sockets}), and whose answer goes back as the CoAP response (piggybacked when it
 * comes within the client's ACK timeout; Californium sends no empty ACK of its own). Californium reassembles a block-wise
 * request body (up to the cap: 4.13 beyond) and slices a long answer into blocks.
 */
final class Ingress implements MessageDeliverer {
    private final Args args;
    private final CoapEndpoint endpoint;
    private final HttpClient http;
    private final ExecutorService callbacks;
    private final String base;

    Ingress(Args args, Configuration config, ScheduledExecutorService main,
            ScheduledExecutorService secondary) {
        this.args = args;
        Map.Entry<String, java.net.InetSocketAddress> service = args.routes.entrySet().iterator().next();
        java.net.InetSocketAddress addr = service.getValue();
        String host = addr.getAddress().getHostAddress();
        base = "http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + addr.getPort();
        callbacks = Executors.newFixedThreadPool(Sockets.CLIENT_THREADS, r -> {
            Thread t = new Thread(r, "ingress-http");
            t.setDaemon(true);
            return t;
        });
        http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofMillis(args.timeoutMs))
                .executor(callbacks)
                .build();
        endpoint = new CoapEndpoint.Builder()
                .setConfiguration(config)
                .setInetSocketAddress(args.listen)
                .setOptionRegistry(Mapping.OPTIONS)
                .setLoggingTag(args.role)
                .build();
        Logging.install(endpoint);
        endpoint.setExecutors(main, secondary);
        endpoint.setMessageDeliverer(this);
    }

    void start() throws java.io.IOException {
        endpoint.start();
    }

    void stop() {
        endpoint.destroy();
        callbacks.shutdownNow();
    }

    @Override
    public void deliverRequest(Exchange exchange) {
        Request in = exchange.getRequest();
        String method = Mapping.methodOf(in.getCode());
        if (method == null) {
            exchange.sendResponse(Mapping.response(405, List.of(Adapter.TEXT), new byte[0]));
            return;
        }
        String target = "/" + String.join("/", in.getOptions().getUriPath());
        if (in.getOptions().getURIQueryCount() > 0) {
            target += "?" + String.join("&", in.getOptions().getUriQuery());
        }
        HttpRequest.Builder out;
        try {
            out = HttpRequest.newBuilder(URI.create(base + target));
        } catch (IllegalArgumentException e) {
            exchange.sendResponse(Mapping.response(400, List.of(Adapter.TEXT),
                    ("bad target: " + e.getMessage()).getBytes(StandardCharsets.UTF_8)));
            return;
        }
        byte[] body = in.getPayload();
        out.timeout(Duration.ofMillis(args.timeoutMs))
                .method(method, body.length == 0 ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofByteArray(body));
        for (Mapping.Header h : Mapping.headers(in.getOptions(), "cookie", Mapping.COOKIE)) {
            out.header(h.name().equals("cookie") ? "Cookie" : "Content-Type", h.value());
        }
        http.sendAsync(out.build(), HttpResponse.BodyHandlers.ofByteArray())
                .whenComplete((answer, error) -> exchange.sendResponse(answer != null
                        ? answered(answer) : failed(error)));
    }

    private static Response answered(HttpResponse<byte[]> answer) {
        List<Mapping.Header> headers = new ArrayList<>();
        answer.headers().firstValue("content-type")
                .ifPresent(v -> headers.add(new Mapping.Header("content-type", v)));
        for (String v : answer.headers().allValues("set-cookie")) {
            headers.add(new Mapping.Header("set-cookie", v));
        }
        return Mapping.response(answer.statusCode(), headers, answer.body());
    }

    private Response failed(Throwable error) {
        Throwable cause = error instanceof CompletionException && error.getCause() != null
                ? error.getCause() : error;
        int status = cause instanceof HttpTimeoutException ? 504 : 502;
        String why = args.role + ": " + cause;
        return Mapping.response(status, List.of(Adapter.TEXT), why.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void deliverResponse(Exchange exchange, Response response) {
        exchange.getRequest().setResponse(response); // a server endpoint sends no requests
    }
}
