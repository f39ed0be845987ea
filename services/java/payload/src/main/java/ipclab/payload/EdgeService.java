package ipclab.payload;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The edge service, the payload stack's gateway: every route of the data service through
 * one keep-alive HTTP/1.1 client (the JDK's), bodies and their headers passed through as
 * the Python edge service passes them ({@code http.EdgeService}), an answer's body streamed
 * through (never held whole: the edge's heap is as small as the data service's); the data
 * service
 * unreachable is a 503, slower than the call timeout a 504. {@code /healthz} is 200 once
 * the data service answers its own within 1 s, with its description.
 */
final class EdgeService {
    private static final List<String> FORWARDED =
            List.of("content-type", "content-encoding", "accept-encoding");
    private static final Set<String> PASSED = Set.of("content-type", "content-encoding",
            "server-timing", "x-cache", "x-elements", "x-alloc-peak");

    private final String upstream;
    private final double timeoutS;
    private final HttpClient client;

    EdgeService(String upstream, double timeoutS) {
        this.upstream = upstream.replaceAll("/+$", "");
        this.timeoutS = timeoutS;
        this.client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    }

    Http.Answer handle(Http.Request r) {
        try {
            if (r.path().equals("/healthz")) {
                return health();
            }
            DataService.route(r.path());
            return forward(r);
        } catch (Http.Refused e) {
            return e.answer();
        }
    }

    private Http.Answer health() {
        String state;
        JsonNode described = null;
        try {
            HttpRequest ask = HttpRequest.newBuilder(URI.create(upstream + "/healthz"))
                    .timeout(Duration.ofSeconds(1)).GET().build();
            HttpResponse<byte[]> r = client.send(ask, HttpResponse.BodyHandlers.ofByteArray());
            state = r.statusCode() == 200 ? "ok" : "HTTP " + r.statusCode();
            if (r.statusCode() == 200) {
                described = Json.MAPPER.readTree(r.body());
            }
        } catch (IOException e) {
            state = e.getClass().getSimpleName();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            state = "InterruptedException";
        }
        boolean ready = state.equals("ok");
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("ready", ready);
        doc.put("services", Map.of("data", state));
        doc.put("data", described);
        return Http.Answer.json(ready ? 200 : 503, Json.bytes(doc));
    }

    private Http.Answer forward(Http.Request r) throws Http.Refused {
        String url = upstream + r.path() + (r.query().isEmpty() ? "" : "?" + r.query());
        URI uri;
        try {
            uri = URI.create(url);
        } catch (IllegalArgumentException e) { // a raw query java.net.URI will not take
            throw new Http.Refused(400, "bad_request", "the request's target: " + e.getMessage());
        }
        HttpRequest.Builder ask = HttpRequest.newBuilder(uri)
                .timeout(Duration.ofMillis((long) (timeoutS * 1000)))
                .method(r.method(), r.method().equals("POST")
                        ? HttpRequest.BodyPublishers.ofByteArray(r.body())
                        : HttpRequest.BodyPublishers.noBody());
        for (String name : FORWARDED) {
            if (!r.header(name).isEmpty()) {
                ask.header(name, r.header(name));
            }
        }
        HttpResponse<InputStream> answer; // passed on as it arrives: never held whole
        try {
            answer = client.send(ask.build(), HttpResponse.BodyHandlers.ofInputStream());
        } catch (HttpTimeoutException e) {
            throw new Http.Refused(504, "timeout",
                    "the data service took over " + timeoutS + " s");
        } catch (IOException e) {
            throw new Http.Refused(503, "unavailable",
                    "the data service: " + e.getClass().getSimpleName());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Http.Refused(503, "unavailable", "the data service: interrupted");
        }
        List<String[]> headers = new ArrayList<>();
        answer.headers().map().forEach((name, values) -> {
            if (PASSED.contains(name.toLowerCase())) {
                for (String v : values) {
                    headers.add(new String[] {name.toLowerCase(), v});
                }
            }
        });
        long length = answer.headers().firstValueAsLong("content-length").orElse(-1L);
        return new Http.Answer(answer.statusCode(), headers, null, answer.body(), length);
    }
}
