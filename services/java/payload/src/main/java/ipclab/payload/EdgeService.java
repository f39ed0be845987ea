package ipclab.payload;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
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
 * the Python edge service passes them ({@code http.EdgeService}); the data service
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
        HttpRequest.Builder ask = HttpRequest.newBuilder(URI.create(url))
                .timeout(Duration.ofMillis((long) (timeoutS * 1000)))
                .method(r.method(), r.method().equals("POST")
                        ? HttpRequest.BodyPublishers.ofByteArray(r.body())
                        : HttpRequest.BodyPublishers.noBody());
        for (String name : FORWARDED) {
            if (!r.header(name).isEmpty()) {
                ask.header(name, r.header(name));
            }
        }
        HttpResponse<byte[]> answer;
        try {
            answer = client.send(ask.build(), HttpResponse.BodyHandlers.ofByteArray());
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
        return new Http.Answer(answer.statusCode(), headers, answer.body());
    }
}
